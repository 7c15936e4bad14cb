/** The store contract, the retention part: per-site retention and the pruning steps (issue 24). */
import { beforeEach, describe, expect, it } from "vitest";
import type { EventRecord, PruneStep, Store } from "../../../src/store/port.js";
import {
  event,
  group,
  payment,
  type StoreContract,
  T0,
  touch,
  uid,
  write,
} from "../../helpers/store-contract.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The pruning horizon of these tests: ten days after T0, a UTC midnight. */
const H = T0 + 10 * DAY;
/** MongoDB's bucket size: groups of this many events fill a bucket of their own. */
const BUCKET = 200;

export function describeRetentionContract(contract: StoreContract): void {
  const { newSite } = contract;
  let store: Store;
  beforeEach(() => {
    store = contract.store;
  });

  /** Runs a whole pass of steps of `limit`; returns each step's result. */
  async function prunePass(siteId: string, limit: number): Promise<PruneStep[]> {
    const steps: PruneStep[] = [];
    let cursor: string | undefined;
    do {
      const step = await store.pruneEventsStep(siteId, H, limit, cursor);
      steps.push(step);
      cursor = step.cursor;
      expect(steps.length).toBeLessThan(50);
    } while (cursor !== undefined);
    return steps;
  }

  /** `n` events of one visitor, received when they happened, `ts` from `at`. */
  const events = (siteId: string, prefix: string, n: number, at: number): EventRecord[] =>
    Array.from({ length: n }, (_, i) =>
      event(siteId, `${prefix}${i}`, { ts: at + i, receivedAt: at + i, visitorId: "v_old" }),
    );

  describe("events retention setting", () => {
    it("is set, read, listed and cleared per site; an unknown site is refused", async () => {
      const a = await newSite();
      const b = await newSite();
      expect(await store.getEventsRetention(a.site.id)).toBeUndefined();
      expect(await store.setEventsRetention(a.site.id, 30)).toBe(true);
      expect(await store.setEventsRetention(b.site.id, 7)).toBe(true);
      expect(await store.getEventsRetention(a.site.id)).toBe(30);
      const listed = (await store.listEventsRetention()).filter((r) =>
        [a.site.id, b.site.id].includes(r.siteId),
      );
      expect(listed).toEqual(
        [
          { siteId: a.site.id, days: 30 },
          { siteId: b.site.id, days: 7 },
        ].sort((x, y) => (x.siteId < y.siteId ? -1 : 1)),
      );
      expect(await store.setEventsRetention(a.site.id, undefined)).toBe(true);
      expect(await store.getEventsRetention(a.site.id)).toBeUndefined();
      expect((await store.listEventsRetention()).map((r) => r.siteId)).not.toContain(a.site.id);
      expect(await store.setEventsRetention(uid("site"), 5)).toBe(false);
      // The site record itself is unchanged.
      expect(await store.getSite(b.site.id)).toEqual(b.site);
    });
  });

  describe("pruneEventsStep", () => {
    it("removes only the site's events before the horizon, in steps of at most the limit, and keeps touches, links, stitches, customers, payments and usage", async () => {
      const { account, site } = await newSite();
      const other = await newSite();
      const links = [{ siteId: site.id, visitorId: "v_old", userId: "u_ada", ts: T0 }];
      const stitches = [
        { siteId: site.id, visitorId: "v_old", persistentId: "p:vid_old_0123456789", ts: T0 },
      ];
      // Two full buckets of old events (MongoDB prunes whole buckets), then newer ones.
      await store.commitEvents([
        {
          ...group(account.id, events(site.id, "a", BUCKET, H - 5 * DAY), {
            ceiling: 10_000,
            links,
            touches: [touch(site.id, "v_old")],
          }),
          stitches,
        },
      ]);
      await store.commitEvents([
        group(account.id, events(site.id, "b", BUCKET, H - 4 * DAY), { ceiling: 10_000 }),
      ]);
      await store.commitEvents([
        group(
          account.id,
          [
            event(site.id, "at_horizon", { ts: H, receivedAt: H + 3 * HOUR }),
            ...events(site.id, "new", 3, H + 3 * HOUR),
          ],
          { ceiling: 10_000 },
        ),
      ]);
      // Another site's old events.
      await store.commitEvents([
        group(other.account.id, events(other.site.id, "x", 3, H - 5 * DAY), { ceiling: 10_000 }),
      ]);
      await store.commitPayments([
        {
          ...write(payment(site.id, "pay_old", { customerId: "cus_old", paidAt: H - 5 * DAY })),
          customer: {
            siteId: site.id,
            customerId: "cus_old",
            userId: "u_ada",
            visitorId: "v_old",
            metadata: {},
            at: H - 5 * DAY,
          },
        },
      ]);
      const usage = await store.getUsage(account.id, "2025-06");

      const steps = await prunePass(site.id, BUCKET);
      expect(steps.map((s) => s.removed)).toEqual([BUCKET, BUCKET, 0]);
      expect(steps.at(-1)?.cursor).toBeUndefined();

      const left = await store.listEvents(site.id, 1000);
      expect(left.map((e) => e.name)).toEqual(["new2", "new1", "new0", "at_horizon"]);
      expect(left.every((e) => e.ts >= H)).toBe(true);
      expect((await store.listEvents(other.site.id, 10)).map((e) => e.name)).toEqual([
        "x2",
        "x1",
        "x0",
      ]);
      // What attribution needs, and what was paid and counted, stays.
      expect(await store.getFirstTouches(site.id, ["v_old"])).toEqual([touch(site.id, "v_old")]);
      expect(await store.findVisitorsByUser(site.id, "u_ada")).toEqual(links);
      expect(await store.findStitches(site.id, ["v_old"])).toEqual(stitches);
      expect((await store.getCustomer(site.id, "cus_old"))?.visitorId).toBe("v_old");
      expect((await store.getPayment(site.id, "pay_old"))?.paidAt).toBe(H - 5 * DAY);
      expect(await store.getUsage(account.id, "2025-06")).toBe(usage);

      // A second pass finds nothing more.
      expect((await prunePass(site.id, BUCKET)).map((s) => s.removed)).toEqual([0]);
    });

    it("with a smaller limit takes more steps, none removing more than the limit (MongoDB: one whole bucket)", async () => {
      const { account, site } = await newSite();
      await store.commitEvents([
        group(account.id, events(site.id, "a", BUCKET, H - 3 * DAY), { ceiling: 10_000 }),
      ]);
      await store.commitEvents([
        group(account.id, events(site.id, "n", 2, H + 3 * HOUR), { ceiling: 10_000 }),
      ]);
      const steps = await prunePass(site.id, 50);
      const removed = steps.map((s) => s.removed);
      expect(removed.reduce((a, b) => a + b, 0)).toBe(BUCKET);
      for (const n of removed) expect(n).toBeLessThanOrEqual(store.kind === "sqlite" ? 50 : BUCKET);
      expect(removed.filter((n) => n > 0).length).toBe(store.kind === "sqlite" ? 4 : 1);
      expect((await store.listEvents(site.id, 10)).map((e) => e.name)).toEqual(["n1", "n0"]);
    });

    it("removes old events mixed with newer ones event by event in SQLite; MongoDB keeps such a bucket whole until all of it is past", async () => {
      const { account, site } = await newSite();
      await store.commitEvents([
        group(
          account.id,
          [
            event(site.id, "old", { ts: H - 1, receivedAt: H - 1 }),
            event(site.id, "edge", { ts: H, receivedAt: H }),
          ],
          { ceiling: 10_000 },
        ),
      ]);
      const steps = await prunePass(site.id, 500);
      const left = (await store.listEvents(site.id, 10)).map((e) => e.name);
      if (store.kind === "sqlite") {
        expect(steps.map((s) => s.removed)).toEqual([1]);
        expect(left).toEqual(["edge"]);
      } else {
        expect(steps.map((s) => s.removed)).toEqual([0]);
        expect(left).toEqual(["edge", "old"]);
      }
    });

    it("a site without events, or unknown, has nothing to prune", async () => {
      const { site } = await newSite();
      expect(await store.pruneEventsStep(site.id, H, 100)).toEqual({ removed: 0 });
      expect(await store.pruneEventsStep(uid("site"), H, 100)).toEqual({ removed: 0 });
    });
  });
}
