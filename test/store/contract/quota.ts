/** The store contract, the quota part of commitEvents: counters per (account, month) and their ceilings. */
import { beforeEach, describe, expect, it } from "vitest";
import type { IdentityLink, Store } from "../../../src/store/port.js";
import { event, group, MONTH, type StoreContract, T0, uid } from "../../helpers/store-contract.js";

export function describeQuotaContract(contract: StoreContract): void {
  const { newAccount, newSite } = contract;
  let store: Store;
  beforeEach(() => {
    store = contract.store;
  });

  describe("quota", () => {
    it("usage is 0 for a counter never raised", async () => {
      expect(await store.getUsage(uid("acct"), MONTH)).toBe(0);
    });

    it("commitEvents of no groups returns no results", async () => {
      expect(await store.commitEvents([])).toEqual([]);
    });

    it("stops at the ceiling exactly: 4, 4, 4 against 10 → ok, ok, quota_exceeded", async () => {
      const { account, site } = await newSite();
      const batch = (tag: string) => [1, 2, 3, 4].map((n) => event(site.id, `${tag}${n}`));
      const results = await store.commitEvents([
        group(account.id, batch("a"), { ceiling: 10 }),
        group(account.id, batch("b"), { ceiling: 10 }),
        group(account.id, batch("c"), {
          ceiling: 10,
          links: [{ siteId: site.id, userId: "u_c", visitorId: "vis_c", ts: T0 }],
        }),
      ]);
      expect(results).toEqual([
        { ok: true, remaining: 6 },
        { ok: true, remaining: 2 },
        { ok: false, reason: "quota_exceeded", remaining: 2 },
      ]);
      expect(await store.getUsage(account.id, MONTH)).toBe(8);
      const names = (await store.listEvents(site.id, 100)).map((e) => e.name);
      expect(names).toEqual(["b4", "b3", "b2", "b1", "a4", "a3", "a2", "a1"]);
      // Nothing of the refused group is written, links included.
      expect(await store.findVisitorsByUser(site.id, "u_c")).toEqual([]);
    });

    it("applies the ceiling across calls, and fills it exactly", async () => {
      const { account, site } = await newSite();
      const one = (n: string, count: number) =>
        group(
          account.id,
          Array.from({ length: count }, (_, i) => event(site.id, `${n}${i}`)),
          { ceiling: 10 },
        );
      expect(await store.commitEvents([one("a", 7)])).toEqual([{ ok: true, remaining: 3 }]);
      expect(await store.commitEvents([one("b", 4)])).toEqual([
        { ok: false, reason: "quota_exceeded", remaining: 3 },
      ]);
      expect(await store.commitEvents([one("c", 3)])).toEqual([{ ok: true, remaining: 0 }]);
      expect(await store.commitEvents([one("d", 1)])).toEqual([
        { ok: false, reason: "quota_exceeded", remaining: 0 },
      ]);
      expect(await store.getUsage(account.id, MONTH)).toBe(10);
      expect(await store.listEvents(site.id, 100)).toHaveLength(10);
    });

    it("refuses a group larger than the whole ceiling without creating a counter", async () => {
      const { account, site } = await newSite();
      const events = [1, 2, 3].map((n) => event(site.id, `e${n}`));
      expect(await store.commitEvents([group(account.id, events, { ceiling: 2 })])).toEqual([
        { ok: false, reason: "quota_exceeded", remaining: 2 },
      ]);
      expect(await store.getUsage(account.id, MONTH)).toBe(0);
      expect(await store.listEvents(site.id, 10)).toEqual([]);
    });

    it("a count already past a lowered ceiling reports 0 remaining", async () => {
      const { account, site } = await newSite();
      const four = [1, 2, 3, 4].map((n) => event(site.id, `e${n}`));
      await store.commitEvents([group(account.id, four, { ceiling: 10 })]);
      expect(
        await store.commitEvents([group(account.id, [event(site.id, "x")], { ceiling: 3 })]),
      ).toEqual([{ ok: false, reason: "quota_exceeded", remaining: 0 }]);
      expect(await store.getUsage(account.id, MONTH)).toBe(4);
    });

    it("groups with countable 0 never touch the quota and are stored even when it is full", async () => {
      const { account, site } = await newSite();
      const link: IdentityLink = { siteId: site.id, userId: "u_0", visitorId: "vis_0", ts: T0 };
      const identify = event(site.id, "$identify", { userId: "u_0", visitorId: "vis_0" });
      // Nothing counted yet: no counter is created.
      expect(
        await store.commitEvents([
          group(account.id, [identify], { ceiling: 5, countable: 0, links: [link] }),
        ]),
      ).toEqual([{ ok: true, remaining: 5 }]);
      expect(await store.getUsage(account.id, MONTH)).toBe(0);
      // Fill the quota, then a countable-0 group still goes through.
      const five = [1, 2, 3, 4, 5].map((n) => event(site.id, `p${n}`));
      const results = await store.commitEvents([
        group(account.id, five, { ceiling: 5 }),
        group(account.id, [event(site.id, "$identify", { userId: "u_1" })], {
          ceiling: 5,
          countable: 0,
          links: [{ siteId: site.id, userId: "u_1", visitorId: "vis_1", ts: T0 }],
        }),
        group(account.id, [event(site.id, "late")], { ceiling: 5 }),
      ]);
      expect(results).toEqual([
        { ok: true, remaining: 0 },
        { ok: true, remaining: 0 },
        { ok: false, reason: "quota_exceeded", remaining: 0 },
      ]);
      expect(await store.getUsage(account.id, MONTH)).toBe(5);
      const names = (await store.listEvents(site.id, 100)).map((e) => e.name);
      expect(names).toEqual(["$identify", "p5", "p4", "p3", "p2", "p1", "$identify"]);
      expect(await store.findVisitorsByUser(site.id, "u_1")).toEqual([
        { siteId: site.id, userId: "u_1", visitorId: "vis_1", ts: T0 },
      ]);
    });

    it("keeps a counter per (account, month)", async () => {
      const { account, site } = await newSite();
      const other = await newAccount();
      const results = await store.commitEvents([
        group(account.id, [event(site.id, "a")], { ceiling: 1 }),
        group(account.id, [event(site.id, "b")], { ceiling: 1, month: "2025-07" }),
        group(other.id, [event(site.id, "c")], { ceiling: 1 }),
        group(account.id, [event(site.id, "d")], { ceiling: 1 }),
      ]);
      expect(results).toEqual([
        { ok: true, remaining: 0 },
        { ok: true, remaining: 0 },
        { ok: true, remaining: 0 },
        { ok: false, reason: "quota_exceeded", remaining: 0 },
      ]);
      expect(await store.getUsage(account.id, MONTH)).toBe(1);
      expect(await store.getUsage(account.id, "2025-07")).toBe(1);
      expect(await store.getUsage(other.id, MONTH)).toBe(1);
    });

    it("20 concurrent single-event calls against a ceiling of 10: exactly 10 pass", async () => {
      const { account, site } = await newSite();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          store.commitEvents([group(account.id, [event(site.id, `c${i}`)], { ceiling: 10 })]),
        ),
      );
      const flat = results.map((r) => {
        expect(r).toHaveLength(1);
        return r[0];
      });
      const ok = flat.filter((r) => r?.ok);
      const refused = flat.filter((r) => r && !r.ok);
      expect(ok).toHaveLength(10);
      expect(refused).toHaveLength(10);
      // Each accepted call saw its own count: remaining 9, 8, … 0, once each.
      expect(
        ok.map((r) => (r?.ok ? r.remaining : undefined)).sort((a, b) => (a ?? 0) - (b ?? 0)),
      ).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      for (const r of refused)
        expect(r).toEqual({ ok: false, reason: "quota_exceeded", remaining: 0 });
      expect(await store.getUsage(account.id, MONTH)).toBe(10);
      expect(await store.listEvents(site.id, 100)).toHaveLength(10);
    });
  });
}
