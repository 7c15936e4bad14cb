/**
 * A funnel's first step, as each visitor's first place in it, is kept across
 * batches of events and grown by the events they appended; the walk reads the
 * events up to the places' snapshot alone; any other write lets them go.
 */
import { describe, expect, it, vi } from "vitest";
import { recordingStore } from "../../../../bench/lib/recording-store.mjs";
import type { FunnelPlan } from "../../../../src/domain/analytics/query-plan.js";
import { createDuckDbAnalytics } from "../../../../src/store/duckdb/analytics-engine.js";
import { openAnalyticsStore } from "../../../../src/store/duckdb/analytics-store.js";
import { hookConnections } from "../../../helpers/hooked-connections.js";
import { addSiteEvent, settleSite } from "../../../helpers/site-events.js";

const DAY = 86_400_000;
const PAGE_A = "https://example.com/a";

describe("a funnel's first step kept across batches of events", () => {
  it("keeps each visitor's first place at step 1, grows it by the events past its snapshot (an earlier one wins), walks the events up to that snapshot alone, and lets it go after any other write", async () => {
    const s = await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" });
    try {
      /** An event `name` of visitor `dv` on /a at `minute`, stored `seq`th. */
      const add = (seq: number, dv: number, name: string, minute: number) =>
        addSiteEvent(s, { seq, dv, name, page: PAGE_A, url: PAGE_A, minute });
      await add(1, 0, "pageview", 10);
      await add(2, 1, "pageview", 20);
      await add(3, 0, "signup", 12);
      await settleSite(s, 10);
      /** A batch of the feed's that appended events alone (analytics-feed.ts): a scoped write. */
      const batch = (write: () => Promise<unknown>) =>
        s.scopedWrite({ sites: new Map([["s1", 0]]) }, write);
      const ran: string[] = [];
      /** Runs once, on the commit of the next first places' table. */
      let afterPlaces: (() => Promise<unknown>) | undefined;
      let placesMade = false;
      const store = recordingStore(s, (st) => ran.push(st.sql));
      hookConnections(store, {
        async after(sql) {
          if (sql.startsWith("CREATE TABLE read_memo.f")) placesMade = true;
          if (sql !== "COMMIT") return;
          const write = placesMade ? afterPlaces : undefined;
          placesMade = false;
          if (!write) return;
          afterPlaces = undefined;
          await write();
        },
      });
      const engine = createDuckDbAnalytics({ analytics: store, timeoutMs: 60_000, perSite: 4 });
      // Its places of 10 visitors (the numbers 0…9, 16 bytes each) past its budget: walked from the events.
      const tight = createDuckDbAnalytics({
        analytics: store,
        timeoutMs: 60_000,
        perSite: 4,
        firstStepBytes: 159,
      });
      const plan: FunnelPlan = {
        siteId: "s1",
        timeZone: "UTC",
        steps: [
          { kind: "page_prefix", value: "/", filters: [], label: "any page" },
          { kind: "event", value: "signup", filters: [], label: "signup" },
        ],
        filters: [],
        period: { from: 0, to: DAY },
        windowMs: DAY,
        model: "first_touch",
      };
      /** The funnel's reach and median minutes to step 2, and how its first places came. */
      const funnel = async (by = engine) => {
        ran.length = 0;
        const r = await by.funnel(plan);
        const made = ran.find((sql) => sql.startsWith("CREATE TABLE read_memo.f"));
        const since = made && /x\.seq > (\d+)/.exec(made)?.[1];
        // The walk starts from the places, not from step 1's events.
        const fromPlaces = ran
          .find((sql) => sql.includes("funnel_runs AS"))
          ?.includes("FROM read_memo.f");
        return {
          reached: r.steps.map((x) => x.visitors),
          minutes: (r.steps[1]?.medianSecondsFromPrevious ?? 0) / 60,
          places: made ? (since ? `grown past ${since}` : "made") : fromPlaces ? "kept" : "none",
          walk: fromPlaces ? "from places" : "from events",
        };
      };

      expect(await funnel()).toEqual({
        reached: [2, 1],
        minutes: 2,
        places: "made",
        walk: "from places",
      });
      // A site whose every visitor's place would pass the budget: none made.
      expect(await funnel(tight)).toEqual({
        reached: [2, 1],
        minutes: 2,
        places: "none",
        walk: "from events",
      });
      // The same generation: the kept places, no pass over step 1's events.
      expect(await funnel()).toEqual({
        reached: [2, 1],
        minutes: 2,
        places: "kept",
        walk: "from places",
      });
      // A batch: a new visitor, and visitor 1 earlier than their kept place,
      // with a signup between the two. Grown past seq 3: the earlier place wins.
      await batch(async () => {
        await add(4, 2, "pageview", 30);
        await add(5, 1, "pageview", 5);
        await add(6, 1, "signup", 15);
      });
      expect(await funnel()).toEqual({
        reached: [3, 2],
        minutes: 6,
        places: "grown past 3",
        walk: "from places",
      });
      // Visitor 2 signs up while the walk starts from places grown past seq 6:
      // the walk reads the events up to their snapshot, the next one grows them.
      await batch(() => add(7, 2, "pageview", 40));
      afterPlaces = () => batch(() => add(8, 2, "signup", 31));
      expect(await funnel()).toEqual({
        reached: [3, 2],
        minutes: 6,
        places: "grown past 6",
        walk: "from places",
      });
      expect(await funnel()).toEqual({
        reached: [3, 3],
        minutes: 2,
        places: "grown past 7",
        walk: "from places",
      });
      // Any other write (an erasure, a pruning…): the places dropped at once, and made again.
      await s.writer.run("DELETE FROM events WHERE seq = 5");
      const conn = await s.connect();
      try {
        const tables = async () =>
          (
            await conn.runAndReadAll(
              "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'read_memo' AND table_name LIKE 'f%'",
            )
          ).getRows();
        await vi.waitFor(async () => expect(await tables()).toEqual([[0n]]), { timeout: 20_000 });
        // Visitor 1's first place is 20 again, after their signup at 15.
        expect(await funnel()).toEqual({
          reached: [3, 2],
          minutes: 1.5,
          places: "made",
          walk: "from places",
        });
        expect(await tables()).toEqual([[1n]]);
      } finally {
        conn.closeSync();
      }
    } finally {
      s.close();
    }
  });
});
