/** The store contract, the events part: events, identity links and visitor salts. */
import { beforeEach, describe, expect, it } from "vitest";
import { MAX_VISITORS_PER_USER } from "../../../src/domain/attribution/identity-cap.js";
import type {
  EventGroup,
  EventRecord,
  IdentityLink,
  Store,
  VisitorTouch,
} from "../../../src/store/port.js";
import {
  event,
  group,
  MONTH,
  type StoreContract,
  T0,
  touch,
  uid,
  uniqueDay,
} from "../../helpers/store-contract.js";

export function describeEventsContract(contract: StoreContract): void {
  const { newSite } = contract;
  let store: Store;
  beforeEach(() => {
    store = contract.store;
  });

  describe("events, identity links and salts", () => {
    it("round-trips an event with every optional field", async () => {
      const { account, site } = await newSite();
      const full: EventRecord = {
        siteId: site.id,
        name: "signup",
        url: "https://example.com/pricing?utm_source=news&gclid=abc",
        referrer: "https://news.example.org/post/1",
        title: "Pricing — Example ✓",
        width: 1280,
        language: "en-US",
        props: {
          plan: "pro",
          seats: 3,
          price: 12.5,
          big: 2 ** 40,
          negative: -7,
          trial: true,
          note: null,
          tags: ["a", "b", 1],
          nested: { deep: { x: 1, y: [true, null] } },
          empty: {},
          $dollar: "kept",
          "dotted.key": "kept",
        },
        ts: T0 + 1_234,
        receivedAt: T0 + 5_678,
        visitorId: "vis_full",
        userId: "user_42",
        country: "DE",
        browser: "Chrome",
        os: "Windows",
        device: "desktop",
        referrerHost: "news.example.org",
        utmSource: "news",
        utmMedium: "email",
        utmCampaign: "launch",
        utmTerm: "analytics",
        utmContent: "hero",
        clickIds: { gclid: "abc", fbclid: "def" },
      };
      await store.commitEvents([group(account.id, [full], { ceiling: 100 })]);
      const [stored] = await store.listEvents(site.id, 10);
      expect(stored).toEqual(full);
      expect(stored?.width).toBe(1280);
      expect(stored?.props).toStrictEqual(full.props);
    });

    it("round-trips a minimal event with its optional fields undefined", async () => {
      const { account, site } = await newSite();
      const minimal = event(site.id, "pageview", { ts: T0 + 1, receivedAt: T0 + 2 });
      // An empty click-id map is stored as none, and an empty props object as itself.
      const emptyMaps = event(site.id, "custom", { clickIds: {}, props: {} });
      await store.commitEvents([group(account.id, [minimal, emptyMaps], { ceiling: 100 })]);
      const [second, first] = await store.listEvents(site.id, 10);
      expect(first).toEqual(minimal);
      for (const field of [
        "referrer",
        "title",
        "width",
        "language",
        "props",
        "userId",
        "country",
        "browser",
        "os",
        "device",
        "referrerHost",
        "utmSource",
        "utmMedium",
        "utmCampaign",
        "utmTerm",
        "utmContent",
        "clickIds",
      ] as const) {
        expect(first?.[field], field).toBeUndefined();
      }
      expect(second?.props).toEqual({});
      expect(second?.clickIds).toBeUndefined();
    });

    it("lists a site's events newest first, by insertion order, up to the limit", async () => {
      const { account, site } = await newSite();
      const other = await newSite();
      // Same receivedAt everywhere: the order is the order of insertion.
      for (const n of ["e1", "e2", "e3"]) {
        await store.commitEvents([group(account.id, [event(site.id, n)], { ceiling: 100 })]);
      }
      await store.commitEvents([
        group(account.id, [event(site.id, "e4"), event(site.id, "e5")], { ceiling: 100 }),
        group(other.account.id, [event(other.site.id, "x1")], { ceiling: 100 }),
        group(account.id, [event(site.id, "e6")], { ceiling: 100 }),
      ]);
      const names = async (limit: number) =>
        (await store.listEvents(site.id, limit)).map((e) => e.name);
      expect(await names(3)).toEqual(["e6", "e5", "e4"]);
      expect(await names(1)).toEqual(["e6"]);
      expect(await names(100)).toEqual(["e6", "e5", "e4", "e3", "e2", "e1"]);
      expect((await store.listEvents(other.site.id, 100)).map((e) => e.name)).toEqual(["x1"]);
      expect(await store.listEvents(uid("site"), 10)).toEqual([]);
    });

    it("lists the newest events among many (more than one bucket's worth)", async () => {
      const { account, site } = await newSite();
      const total = 450;
      const all = Array.from({ length: total }, (_, i) => event(site.id, `n${i}`));
      // 45 groups of 10 events in calls of 25, 15 and 5 groups.
      let start = 0;
      for (const groupsInCall of [25, 15, 5]) {
        const groups: EventGroup[] = [];
        for (let g = 0; g < groupsInCall; g++, start += 10) {
          groups.push(group(account.id, all.slice(start, start + 10), { ceiling: 1_000 }));
        }
        await store.commitEvents(groups);
      }
      const listed = (await store.listEvents(site.id, 250)).map((e) => e.name);
      expect(listed).toEqual(Array.from({ length: 250 }, (_, i) => `n${total - 1 - i}`));
      expect(await store.listEvents(site.id, 1_000)).toHaveLength(total);
      expect(await store.getUsage(account.id, MONTH)).toBe(total);
    });

    it("stores identity links and finds a user's visitors by time, earliest link kept", async () => {
      const { account, site } = await newSite();
      const other = await newSite();
      const link = (visitorId: string, ts: number, userId = "u_1", siteId = site.id) => ({
        siteId,
        userId,
        visitorId,
        ts,
      });
      await store.commitEvents([
        group(account.id, [event(site.id, "$identify", { userId: "u_1" })], {
          ceiling: 100,
          countable: 0,
          links: [link("vis_b", T0 + 30), link("vis_a", T0 + 50), link("vis_b", T0 + 20)],
        }),
      ]);
      await store.commitEvents([
        group(account.id, [], {
          ceiling: 100,
          countable: 0,
          links: [
            link("vis_a", T0 + 10),
            link("vis_b", T0 + 40),
            link("vis_c", T0 + 60),
            link("vis_x", T0, "u_2"),
            link("vis_y", T0, "u_1", other.site.id),
          ],
        }),
      ]);
      expect(await store.findVisitorsByUser(site.id, "u_1")).toEqual([
        link("vis_a", T0 + 10),
        link("vis_b", T0 + 20),
        link("vis_c", T0 + 60),
      ]);
      expect(await store.findVisitorsByUser(site.id, "u_2")).toEqual([link("vis_x", T0, "u_2")]);
      expect(await store.findVisitorsByUser(site.id, "nobody")).toEqual([]);
    });

    it(`links at most ${MAX_VISITORS_PER_USER} visitors per user id, keeping the best first touch`, async () => {
      const { account, site } = await newSite();
      const link = (visitorId: string, ts = T0) => ({
        siteId: site.id,
        userId: "u_cap",
        visitorId,
        ts,
      });
      const identify = (links: IdentityLink[], touches?: VisitorTouch[]) =>
        store.commitEvents([
          group(account.id, [], {
            ceiling: 1_000,
            countable: 0,
            links,
            ...(touches ? { touches } : {}),
          }),
        ]);
      const ids = (n: number, from = 0) =>
        Array.from({ length: n }, (_, i) => `vis_${String(from + i).padStart(4, "0")}`);
      // 100 visitors with touches at T0 + 1000…, then 50 more in two calls: past the cap.
      await identify(
        ids(MAX_VISITORS_PER_USER).map((v) => link(v)),
        ids(MAX_VISITORS_PER_USER).map((v, i) => touch(site.id, v, { ts: T0 + 1_000 + i })),
      );
      await identify(ids(25, 500).map((v) => link(v)));
      await identify(
        ids(25, 600).map((v) => link(v)),
        [touch(site.id, "vis_0600", { ts: T0 + 5_000 })],
      );
      let linked = (await store.findVisitorsByUser(site.id, "u_cap")).map((l) => l.visitorId);
      expect(linked).toHaveLength(MAX_VISITORS_PER_USER);
      expect(linked.sort()).toEqual(ids(MAX_VISITORS_PER_USER));
      // A visitor whose first touch beats the weakest linked one replaces it (the latest touch).
      await identify([link("vis_early")], [touch(site.id, "vis_early", { ts: T0 })]);
      linked = (await store.findVisitorsByUser(site.id, "u_cap")).map((l) => l.visitorId);
      expect(linked).toHaveLength(MAX_VISITORS_PER_USER);
      expect(linked).toContain("vis_early");
      expect(linked).not.toContain(ids(1, MAX_VISITORS_PER_USER - 1)[0]);
      // Known visitors are still re-linked (earliest time kept), whatever the count.
      await identify([link("vis_0000", T0 - 5)]);
      expect((await store.findVisitorsByUser(site.id, "u_cap"))[0]).toEqual(
        link("vis_0000", T0 - 5),
      );
    });

    it("ensureSalt: the first writer wins, for every caller", async () => {
      const day = uniqueDay();
      expect(await store.ensureSalt(day, "salt-one")).toBe("salt-one");
      expect(await store.ensureSalt(day, "salt-two")).toBe("salt-one");
      expect(await store.ensureSalt(uniqueDay(), "salt-three")).toBe("salt-three");

      const racedDay = uniqueDay();
      const candidates = Array.from({ length: 10 }, (_, i) => `candidate-${i}`);
      const salts = await Promise.all(candidates.map((c) => store.ensureSalt(racedDay, c)));
      expect(new Set(salts).size).toBe(1);
      expect(candidates).toContain(salts[0]);
      expect(await store.ensureSalt(racedDay, "late")).toBe(salts[0]);
    });

    it("pruneSalts deletes the salts of earlier days only", async () => {
      // Days far before every other test's days, so pruning touches nothing else.
      await store.ensureSalt("1001-01-01", "a");
      await store.ensureSalt("1001-01-02", "b");
      await store.ensureSalt("1001-01-03", "c");
      await store.pruneSalts("1001-01-02");
      expect(await store.ensureSalt("1001-01-01", "new")).toBe("new");
      expect(await store.ensureSalt("1001-01-02", "new")).toBe("b");
      expect(await store.ensureSalt("1001-01-03", "new")).toBe("c");
    });
  });
}
