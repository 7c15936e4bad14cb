/**
 * A breakdown of events counted by bitmaps is kept across batches of events
 * and grown by the events they appended; any other write makes it counted
 * again, and lets its groups go.
 */
import { describe, expect, it } from "vitest";
import { recordingStore } from "../../../../bench/lib/recording-store.mjs";
import type { MetricValue, QueryPlan } from "../../../../src/domain/analytics/query-plan.js";
import { createDuckDbAnalytics } from "../../../../src/store/duckdb/analytics-engine.js";
import { openAnalyticsStore } from "../../../../src/store/duckdb/analytics-store.js";
import {
  createGrownBreakdowns,
  type GrowableBreakdown,
} from "../../../../src/store/duckdb/grown-breakdowns.js";
import { addSiteEvent, settleSite } from "../../../helpers/site-events.js";

const DAY = 86_400_000;

/** A count's value (the breakdown has counts alone). */
const countOf = (m: MetricValue) => (m.kind === "count" ? m.value : undefined);

describe("breakdowns grown by the events appended since", () => {
  it("keeps a breakdown of events across batches of events, grows it by the events past its snapshot's highest seq, and counts it again after any other write", async () => {
    const s = await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" });
    try {
      /** A pageview of visitor `dv` on `page` at `minute`, stored `seq`th. */
      const add = (seq: number, dv: number, page: string, minute: number) =>
        addSiteEvent(s, {
          seq,
          dv,
          name: "pageview",
          page,
          url: `https://example.com${page}`,
          minute,
        });
      await add(1, 0, "/a", 1);
      await add(2, 1, "/a", 2);
      await add(3, 1, "/b", 3);
      await settleSite(s, 10);
      const ran: string[] = [];
      const engine = createDuckDbAnalytics({
        analytics: recordingStore(s, (st) => ran.push(st.sql)),
        timeoutMs: 60_000,
        perSite: 4,
      });
      const plan: QueryPlan = {
        siteId: "s1",
        timeZone: "UTC",
        metrics: ["visitors", "pageviews"],
        dimensions: ["page"],
        filters: [],
        period: { from: 0, to: DAY },
        model: "first_touch",
        orderBy: [{ field: "visitors", desc: true }],
        limit: 10,
        offset: 0,
      };
      /** The breakdown's rows and totals, and how its groups were counted. */
      const pages = async () => {
        ran.length = 0;
        const r = await engine.query(plan);
        const made = ran.filter((sql) => sql.includes("CREATE TABLE read_memo.g"));
        const since = made.map((sql) => /x\.seq > (\d+)/.exec(sql)?.[1]);
        const plain = ran.some((sql) => sql.includes("FROM events e") && !sql.includes("CREATE"));
        return {
          rows: r.rows
            .map((row) => [row.dimensions[0], ...row.metrics.map(countOf)])
            .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
          totals: r.totals.map(countOf),
          counted:
            made.length > 0
              ? since[0]
                ? `grown past ${since[0]}`
                : "kept afresh"
              : plain
                ? "counted"
                : "no statement",
        };
      };
      /** A batch of the feed's that appended events alone (analytics-feed.ts): a scoped write. */
      const batch = (write: () => Promise<unknown>) =>
        s.scopedWrite({ sites: new Map([["s1", 4 * 60_000]]) }, write);

      // Asked once: counted as the engine counts it; again in the same generation: the memo's.
      expect(await pages()).toEqual({
        rows: [
          ["/a", 2, 2],
          ["/b", 1, 1],
        ],
        totals: [2, 3],
        counted: "counted",
      });
      expect(await pages()).toMatchObject({ counted: "no statement", totals: [2, 3] });
      // A batch: a new visitor on /b, an old one on /c. Asked again after a
      // write: counted afresh and kept from now on.
      await batch(async () => {
        await add(4, 2, "/b", 4);
        await add(5, 0, "/c", 5);
      });
      const afterBatch = {
        rows: [
          ["/a", 2, 2],
          ["/b", 2, 2],
          ["/c", 1, 1],
        ],
        totals: [3, 5],
      };
      expect(await pages()).toEqual({ ...afterBatch, counted: "kept afresh" });
      expect(await pages()).toEqual({ ...afterBatch, counted: "no statement" });
      // Another batch: visitor 1 again on /a (no new visitor, one more pageview):
      // grown by the events past seq 5.
      await batch(() => add(6, 1, "/a", 6));
      expect(await pages()).toMatchObject({ totals: [3, 6], counted: "grown past 5" });
      // A batch of another site's events, and one past the period: the kept rows.
      await s.scopedWrite({ sites: new Map([["s2", 0]]) }, () => s.writer.run("SELECT 1"));
      await s.scopedWrite({ sites: new Map([["s1", DAY]]) }, () => add(7, 3, "/d", 24 * 60 + 1));
      expect(await pages()).toMatchObject({ totals: [3, 6], counted: "no statement" });
      // A batch of events in the period: grown past seq 6 (the kept seq; event 7 is past the period).
      await batch(() => add(8, 3, "/c", 8));
      expect(await pages()).toEqual({
        rows: [
          ["/a", 2, 3],
          ["/b", 2, 2],
          ["/c", 2, 2],
        ],
        totals: [4, 7],
        counted: "grown past 6",
      });
      // Any other write (an erasure, a pruning…): its groups dropped at once,
      // and counted as the engine counts it.
      await s.writer.run("DELETE FROM events WHERE seq = 5");
      expect(await pages()).toEqual({
        rows: [
          ["/a", 2, 3],
          ["/b", 2, 2],
          ["/c", 1, 1],
        ],
        totals: [4, 6],
        counted: "counted",
      });
      const conn = await s.connect();
      try {
        const tables = (
          await conn.runAndReadAll(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'read_memo' AND table_name LIKE 'g%'",
          )
        ).getRows();
        expect(tables).toEqual([[0n]]);
      } finally {
        conn.closeSync();
      }
    } finally {
      s.close();
    }
  });

  it("lets a breakdown's groups go at once after any write but a batch of events: its table is dropped before any read", async () => {
    const s = await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" });
    const conn = await s.connect();
    try {
      await s.writer.run(`INSERT INTO events BY NAME
        SELECT i + 1 AS seq, 's1' AS site_id, i * 60000 AS ts, i AS vid, 'pageview' AS name,
          '/p' || (i % 2) AS page, 'https://example.com/' AS url, 0 AS received_at,
          'v' || i AS visitor_id, i AS dv, 1 AS sn
        FROM range(3) t(i)`);
      const grown = createGrownBreakdowns(s);
      const pages: GrowableBreakdown = {
        key: "pages",
        groups: (since) =>
          `SELECT page AS d0, bitstring_agg(dv, 0, 15) AS m0, count(*) AS c FROM events
          WHERE sn = 1${since === undefined ? "" : ` AND seq > ${since}`} GROUP BY page`,
        values: [],
        dims: 1,
        metrics: ["bitmap"],
        label: (column) => column,
        groupBytes: 2,
        scope: { siteId: "s1", before: Number.POSITIVE_INFINITY },
        // The engine's own statement, through the memo: no table.
        plain: async () => [],
      };
      const tables = async () =>
        (
          await conn.runAndReadAll(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'read_memo'",
          )
        ).getRows();
      // Asked once: counted as the engine counts it; asked after a write: kept.
      expect(await grown.rows(conn, pages)).toEqual([]);
      expect(await tables()).toEqual([[0n]]);
      await s.scopedWrite({ sites: new Map([["s1", 0]]) }, () => s.writer.run("SELECT 1"));
      const rows = await grown.rows(conn, pages);
      expect(rows.map(String).sort()).toEqual([",3,3,1", "/p0,2,2,0", "/p1,1,1,0"]);
      expect(await tables()).toEqual([[1n]]);
      // A batch of events keeps it.
      await s.scopedWrite({ sites: new Map([["s1", 0]]) }, () => s.writer.run("SELECT 1"));
      await grown.idle();
      expect(await tables()).toEqual([[1n]]);
      // An erasure (any other write): dropped now, not at the next read.
      await s.writer.run("DELETE FROM events WHERE seq = 1");
      await grown.idle();
      expect(await tables()).toEqual([[0n]]);
    } finally {
      conn.closeSync();
      s.close();
    }
  });
});
