/**
 * The store contract of persistent visitors (issue 22): stitches of daily
 * visitor ids to persistent ones, written by commitEvents and read by
 * findStitches. Run against every adapter by sqlite.test.ts and
 * mongodb.test.ts, next to the main contract (contract.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_STITCHES_PER_VISITOR } from "../../src/domain/events/persistent-visitor.js";
import type {
  EventGroup,
  EventRecord,
  Store,
  VisitorStitch,
  VisitorTouch,
} from "../../src/store/port.js";

/** 2025-06-01T00:00:00Z. */
const T0 = Date.UTC(2025, 5, 1);

let counter = 0;
function uid(prefix: string): string {
  counter += 1;
  return `${prefix}_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}_${counter}`;
}

/** A daily id (32 hex characters) no other test uses. */
function daily(n: number): string {
  counter += 1;
  return `${counter.toString(16).padStart(8, "0")}${n.toString(16).padStart(24, "0")}`;
}

export function describePersistentVisitorContract(name: string, open: () => Promise<Store>): void {
  describe(`persistent visitor contract: ${name}`, () => {
    let store: Store;
    let accountId: string;
    let siteId: string;

    beforeAll(async () => {
      store = await open();
      accountId = uid("acct");
      siteId = uid("site");
      await store.createAccount({ id: accountId, name: "Shop", plan: "free", createdAt: T0 });
      await store.createSite({ id: siteId, accountId, hostnames: ["shop.test"], createdAt: T0 });
    });

    afterAll(async () => {
      await store?.close();
    });

    function pageview(visitorId: string, ts = T0): EventRecord {
      return { siteId, name: "pageview", url: "https://shop.test/", ts, receivedAt: ts, visitorId };
    }

    function touch(visitorId: string, ts: number): VisitorTouch {
      return {
        siteId,
        visitorId,
        ts,
        internal: false,
        channel: "Email",
        landingPage: "https://shop.test/",
      };
    }

    function stitch(visitorId: string, persistentId: string, ts = T0): VisitorStitch {
      return { siteId, visitorId, persistentId, ts };
    }

    async function commit(stitches: VisitorStitch[], touches: VisitorTouch[] = []): Promise<void> {
      const g: EventGroup = {
        accountId,
        month: "2025-06",
        ceiling: 1_000_000,
        countable: 1,
        events: [pageview(stitches[0]?.persistentId ?? "p:none")],
        links: [],
        stitches,
      };
      if (touches.length > 0) g.touches = touches;
      const [r] = await store.commitEvents([g]);
      expect(r?.ok).toBe(true);
    }

    it("stores a stitch with its group and finds it from either side", async () => {
      const p = `p:${uid("vid")}`;
      const d = daily(1);
      await commit([stitch(d, p, T0 + 5)]);
      const expected = [{ siteId, visitorId: d, persistentId: p, ts: T0 + 5 }];
      expect(await store.findStitches(siteId, [d])).toEqual(expected);
      expect(await store.findStitches(siteId, [p])).toEqual(expected);
      expect(await store.findStitches(siteId, [d, p])).toEqual(expected);
      // Another site sees none of it.
      expect(await store.findStitches(uid("site"), [d, p])).toEqual([]);
      expect(await store.findStitches(siteId, [daily(2), `p:${uid("vid")}`])).toEqual([]);
      expect(await store.findStitches(siteId, [])).toEqual([]);
    });

    it("keeps a daily id's first persistent id: two persistent ids are never joined", async () => {
      const first = `p:${uid("vid")}`;
      const second = `p:${uid("vid")}`;
      const d = daily(3);
      await commit([stitch(d, first, T0)]);
      await commit([stitch(d, second, T0 + 1)]);
      expect(await store.findStitches(siteId, [d])).toEqual([
        { siteId, visitorId: d, persistentId: first, ts: T0 },
      ]);
      expect(await store.findStitches(siteId, [second])).toEqual([]);
    });

    it("lists a persistent id's daily ids, earliest first", async () => {
      const p = `p:${uid("vid")}`;
      const days = [daily(4), daily(5), daily(6)];
      await commit([stitch(days[2] as string, p, T0 + 2 * 86_400_000)]);
      await commit([
        stitch(days[0] as string, p, T0),
        stitch(days[1] as string, p, T0 + 86_400_000),
      ]);
      expect((await store.findStitches(siteId, [p])).map((s) => s.visitorId)).toEqual(days);
    });

    it(`caps a persistent id at ${MAX_STITCHES_PER_VISITOR} daily ids, keeping the best first touches`, async () => {
      const p = `p:${uid("vid")}`;
      // Every stitched daily id has a touch; the last one's is the latest.
      const ids = Array.from({ length: MAX_STITCHES_PER_VISITOR }, (_v, i) => daily(1000 + i));
      const touches = ids.map((id, i) => touch(id, T0 + 1000 + i));
      for (let i = 0; i < ids.length; i += 100) {
        await commit(
          ids.slice(i, i + 100).map((id) => stitch(id, p)),
          touches.slice(i, i + 100),
        );
      }
      expect(await store.findStitches(siteId, [p])).toHaveLength(MAX_STITCHES_PER_VISITOR);

      // Past the cap, a daily id without a touch is not stitched...
      const touchless = daily(5000);
      await commit([stitch(touchless, p)]);
      expect(await store.findStitches(siteId, [touchless])).toEqual([]);
      // ...nor one whose touch is later than every stitched one's...
      const later = daily(5001);
      await commit([stitch(later, p)], [touch(later, T0 + 999_999)]);
      expect(await store.findStitches(siteId, [later])).toEqual([]);
      // ...but an earlier touch replaces the weakest (the latest) stitched daily id.
      const earlier = daily(5002);
      await commit([stitch(earlier, p)], [touch(earlier, T0)]);
      const now = (await store.findStitches(siteId, [p])).map((s) => s.visitorId);
      expect(now).toHaveLength(MAX_STITCHES_PER_VISITOR);
      expect(now).toContain(earlier);
      expect(now).not.toContain(ids.at(-1));
    });

    it("writes nothing of a group refused for quota, stitches included", async () => {
      const p = `p:${uid("vid")}`;
      const d = daily(7);
      const g: EventGroup = {
        accountId,
        month: "2025-07",
        ceiling: 0,
        countable: 1,
        events: [pageview(p)],
        links: [],
        stitches: [stitch(d, p)],
      };
      const [r] = await store.commitEvents([g]);
      expect(r).toMatchObject({ ok: false, reason: "quota_exceeded" });
      expect(await store.findStitches(siteId, [d, p])).toEqual([]);
    });
  });
}
