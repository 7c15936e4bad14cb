/**
 * The engine's guards, with a connection the test holds: a query past its
 * time limit is interrupted and answers 503 `unavailable` with a clear
 * message; a site's queries beyond the configured number answer 429 with
 * Retry-After while another site's run; a slot is given back when a query ends.
 */
import type { DuckDBConnection } from "@duckdb/node-api";
import { describe, expect, it } from "vitest";
import { recordingStore } from "../../../../bench/lib/recording-store.mjs";
import type { FunnelPlan, QueryPlan } from "../../../../src/domain/analytics/query-plan.js";
import { createDuckDbAnalytics } from "../../../../src/store/duckdb/analytics-engine.js";
import {
  type AnalyticsStore,
  openAnalyticsStore,
} from "../../../../src/store/duckdb/analytics-store.js";
import { BITMAP_HEADROOM } from "../../../../src/store/duckdb/visitor-count.js";
import { rebuildVisits } from "../../../../src/store/duckdb/visits-maintenance.js";
import { hookConnections } from "../../../helpers/hooked-connections.js";

/** A store whose connections answer only when the test says, and reject when interrupted. */
function heldStore() {
  const pending: { release(): void }[] = [];
  let interrupts = 0;
  const connect = async () => {
    let reject: (err: Error) => void = () => {};
    const conn = {
      runAndReadAll: () =>
        new Promise((resolve, rej) => {
          reject = rej;
          pending.push({
            release: () => resolve({ getRows: () => [[0n]] }),
          });
        }),
      interrupt: () => {
        interrupts += 1;
        reject(new Error("INTERRUPT Error: Interrupted!"));
      },
      closeSync: () => {},
    };
    return conn as unknown as DuckDBConnection;
  };
  const store = { connect } as unknown as AnalyticsStore;
  return { store, pending, interrupts: () => interrupts };
}

const plan = (siteId: string): QueryPlan => ({
  siteId,
  timeZone: "UTC",
  metrics: ["visitors"],
  dimensions: [],
  filters: [],
  period: { from: 0, to: 86_400_000 },
  model: "first_touch",
  orderBy: [{ field: "visitors", desc: true }],
  limit: 10,
  offset: 0,
});

/** Resolves once `n` statements are waiting on the held store. */
async function waiting(pending: unknown[], n: number) {
  while (pending.length < n) await new Promise((r) => setImmediate(r));
}

/** Answers every statement the held store gets until `done` settles (a query runs one or more). */
async function answerUntil(pending: { release(): void }[], done: Promise<unknown>) {
  let settled = false;
  const mark = () => {
    settled = true;
  };
  done.then(mark, mark);
  while (!settled) {
    for (const p of pending.splice(0)) p.release();
    await new Promise((r) => setImmediate(r));
  }
}

describe("the analytics engine's guards", () => {
  it("interrupts a query past its time limit and answers unavailable", async () => {
    const held = heldStore();
    const engine = createDuckDbAnalytics({ analytics: held.store, timeoutMs: 30, perSite: 2 });
    const err = await engine.query(plan("s1")).catch((e: unknown) => e);
    expect(held.interrupts()).toBe(1);
    expect(err).toMatchObject({
      kind: "unavailable",
      message:
        "the query ran past its time limit of 0.03 s and was cancelled; narrow the period or the dimensions",
      retryAfterSeconds: 2,
    });
  });

  it("runs at most perSite queries of one site at once: the next answers 429, other sites run", async () => {
    const held = heldStore();
    const engine = createDuckDbAnalytics({ analytics: held.store, timeoutMs: 60_000, perSite: 2 });
    const first = engine.query(plan("s1"));
    const second = engine.query(plan("s1"));
    await expect(engine.query(plan("s1"))).rejects.toMatchObject({
      kind: "too_many_requests",
      message: "too many analytics queries running for this site, retry later",
      retryAfterSeconds: 1,
    });
    const other = engine.query(plan("s2"));
    // The two of s1 and the one of s2 run at once.
    await waiting(held.pending, 3);
    await answerUntil(held.pending, Promise.all([first, second, other]));
    // The slots are free again.
    const again = engine.query(plan("s1"));
    await waiting(held.pending, 1);
    await answerUntil(held.pending, again);
    await expect(again).resolves.toMatchObject({ more: false });
  });
});

/** How a traffic statement counts visitors: by bitmaps, by bitmaps of a part of the numbers, or by key. */
const way = (sql: string) =>
  /bitstring_agg\([xv]\.dv, \d+, /.test(sql)
    ? /\bx\.dv >= \d+/.test(sql)
      ? "part"
      : "bitmap"
    : "hash";

/** The numbers a part's statement counts (its test of `x.dv`). */
const partOf = (sql: string) => /x\.dv >= \d+(?: AND x\.dv <= \d+)?/.exec(sql)?.[0];

describe("how the engine counts visitors", () => {
  it("by bitmaps of their numbers while the groups times the site's numbers stay within 32 MiB, filtered or not, in parts of the numbers within eight times that, else by their keys; by key again when a number passed the bitmaps' top", async () => {
    const s = await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" });
    try {
      const add = (seq: number, vid: number, dv: number) =>
        s.writer.run(`INSERT INTO events BY NAME
          SELECT ${seq} AS seq, 's1' AS site_id, ${seq} * 60000 AS ts, ${vid} AS vid, 'pageview' AS name,
            '/p' || ${seq} AS page, 'https://example.com/' AS url, 0 AS received_at, 'v${vid}' AS visitor_id, ${dv} AS dv, 1 AS sn`);
      for (const i of [0, 1, 2]) await add(i, i, i);
      await s.writer.run("INSERT INTO visitor_numbers SELECT 's1', i, i FROM range(3) t(i)");
      await s.writer.run("INSERT INTO site_numbers VALUES ('s1', 1)");
      await rebuildVisits(s.writer);
      const ran: string[] = [];
      const recording = recordingStore(s, (st) => ran.push(st.sql));
      const engine = createDuckDbAnalytics({ analytics: recording, timeoutMs: 60_000, perSite: 4 });
      /** How each of a query's traffic statements counted visitors, in order, and its total. */
      const counted = async (
        dimensions: QueryPlan["dimensions"],
        days = 1,
        filters: QueryPlan["filters"] = [],
        metrics: QueryPlan["metrics"] = ["visitors"],
      ) => {
        ran.length = 0;
        const r = await engine.query({
          ...plan("s1"),
          metrics,
          dimensions,
          filters,
          period: { from: 0, to: days * 86_400_000 },
        });
        const ways = ran.filter((sql) => sql.includes("FROM events e")).map(way);
        return { ways, total: r.totals, rows: r.rows };
      };
      const three = [{ kind: "count", value: 3 }];
      // A total alone: by key (the bitmap is no faster for one group)…
      expect(await counted([])).toMatchObject({ ways: ["hash"], total: three });
      // …but over whole visits (a metric of visits: the period's visits read
      // from `visits`, a row each), by bitmap; filtered, by key.
      const visits = ["visitors", "visits"] as QueryPlan["metrics"];
      const perVisit = [...three, ...three];
      expect(await counted([], 1, [], visits)).toMatchObject({ ways: ["bitmap"], total: perVisit });
      expect(
        await counted([], 1, [{ dimension: "page", op: "contains", values: ["/p"] }], visits),
      ).toMatchObject({ ways: ["hash"], total: perVisit });
      // Groups by bitmap: one statement, the total from the union of the groups' bitmaps.
      expect(await counted(["page"])).toMatchObject({ ways: ["bitmap"], total: three });
      // A property's values are not bounded beforehand (the total, the same
      // statement as the first query's, comes from the memo).
      expect(await counted(["prop:plan"])).toMatchObject({ ways: ["hash"], total: three });
      // Filtered groups: by bitmap too, the total from their union.
      const slash = [{ dimension: "page" as const, op: "contains" as const, values: ["/p"] }];
      expect(await counted(["page"], 1, slash)).toMatchObject({ ways: ["bitmap"], total: three });
      // 10,000,001 numbers: 11 groups of days fit (110M bits); 722 hours do
      // not, in eight parts either. Visitor 99, numbered 10,000,000, views /p0.
      await s.writer.run("INSERT INTO visitor_numbers VALUES ('s1', 99, 10000000)");
      await s.writer.run(`INSERT INTO events BY NAME
        SELECT 10 AS seq, 's1' AS site_id, 600000 AS ts, 99 AS vid, 'pageview' AS name, '/p0' AS page,
          'https://example.com/' AS url, 0 AS received_at, 'v99' AS visitor_id, 10000000 AS dv, 1 AS sn`);
      await rebuildVisits(s.writer);
      const four = [{ kind: "count", value: 4 }];
      // (A write: the memo starts again; by key, the rows' statement, then the total's.)
      expect(await counted(["time:day"], 7)).toMatchObject({ ways: ["bitmap"], total: four });
      expect((await counted(["time:hour"], 30)).ways).toEqual(["hash", "hash"]);
      // Three pages (four values with none) on ten days, 41 groups, 410M bits: two
      // parts, the numbers below 5,005,312 and those from it. /p0's two visitors are
      // one in each part; each part's groups and total add up.
      const inParts = await counted(["page", "time:day"], 7);
      expect(inParts).toMatchObject({ ways: ["part", "part"], total: four });
      expect(inParts.rows.map((r) => [r.dimensions, r.metrics])).toEqual([
        [["/p0", "1970-01-01"], [{ kind: "count", value: 2 }]],
        [["/p1", "1970-01-01"], [{ kind: "count", value: 1 }]],
        [["/p2", "1970-01-01"], [{ kind: "count", value: 1 }]],
      ]);
      expect(ran.filter((sql) => sql.includes("FROM events e")).map(partOf)).toEqual([
        "x.dv >= 0 AND x.dv <= 5005311",
        "x.dv >= 5005312",
      ]);
      // An event numbered past the highest number plus BITMAP_HEADROOM,
      // rounded up to a multiple of it (as when the feed numbers many visitors
      // after the highest was read): the bitmaps fail, the statement runs
      // again by key (rows and total in one).
      await add(3, 3, 10_000_000 + 2 * BITMAP_HEADROOM);
      const five = [{ kind: "count", value: 5 }];
      expect(await counted(["page"])).toMatchObject({ ways: ["bitmap", "hash"], total: five });
      // The same in parts: the last part fails, and the parts are counted again by key.
      expect(await counted(["page", "time:day"], 7)).toMatchObject({
        ways: ["part", "part", "hash"],
        total: five,
      });
    } finally {
      s.close();
    }
  });

  it("bounds a breakdown's groups by the values kept for the period, grown by the events appended since: past the bitmaps' budget it counts by key without reading them again", async () => {
    const s = await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" });
    try {
      const add = (seq: number, page: string, source = "NULL") =>
        s.writer.run(`INSERT INTO events BY NAME
          SELECT ${seq} AS seq, 's1' AS site_id, ${seq} * 60000 AS ts, ${seq} AS vid, 'pageview' AS name,
            '${page}' AS page, ${source} AS source, 'https://example.com/' AS url, 0 AS received_at,
            'v${seq}' AS visitor_id, ${seq} AS dv, 1 AS sn`);
      for (const i of [0, 1, 2]) await add(i, `/p${i}`);
      // 10,000,001 numbers: bitmaps of 10,010,624 bits, 26 of them within the
      // budget, 214 within eight parts of it.
      await s.writer.run("INSERT INTO visitor_numbers SELECT 's1', i, i FROM range(3) t(i)");
      await s.writer.run("INSERT INTO site_numbers VALUES ('s1', 1)");
      await s.writer.run("INSERT INTO visitor_numbers VALUES ('s1', 99, 10000000)");
      await rebuildVisits(s.writer);
      const ran: string[] = [];
      const recording = recordingStore(s, (st) => ran.push(st.sql));
      const engine = createDuckDbAnalytics({ analytics: recording, timeoutMs: 60_000, perSite: 4 });
      /** The values read before the statement (column, and whether only since a seq), how it counted, its total. */
      const breakdown = async (dimension: "page" | "source") => {
        ran.length = 0;
        const r = await engine.query({ ...plan("s1"), dimensions: [dimension] });
        return {
          bounds: ran.flatMap((sql) => {
            const m = /list\(DISTINCT (\w+)\)[\s\S]*FROM (events|visits)/.exec(sql);
            return m ? [`${m[1]} from ${m[2]}${/seq > \$/.test(sql) ? " since" : ""}`] : [];
          }),
          way: ran.map(way).find((w) => w !== "hash") ?? "hash",
          total: r.totals,
        };
      };
      const count = (value: number) => [{ kind: "count", value }];
      expect(await breakdown("page")).toEqual({
        bounds: ["page from events"],
        way: "bitmap",
        total: count(3),
      });
      expect(await breakdown("source")).toEqual({
        bounds: ["v_source from visits"],
        way: "bitmap",
        total: count(3),
      });
      // After a write, only the events past the highest seq read are read (none here).
      await s.writer.run("SELECT 1");
      expect(await breakdown("page")).toEqual({
        bounds: ["page from events since"],
        way: "bitmap",
        total: count(3),
      });
      // 24 more pages and sources: 28 values with (none), past the budget, counted
      // in two parts; only the new events are read (a visit's source, from its events).
      for (let i = 3; i < 27; i++) await add(i, `/p${i}`, `'s${i}'`);
      await rebuildVisits(s.writer);
      expect(await breakdown("page")).toEqual({
        bounds: ["page from events since"],
        way: "part",
        total: count(27),
      });
      expect(await breakdown("source")).toEqual({
        bounds: ["source from events since"],
        way: "part",
        total: count(27),
      });
      // 216 pages: past eight parts of the budget (214 groups), by key.
      for (let i = 27; i < 216; i++) await add(i, `/p${i}`);
      expect(await breakdown("page")).toEqual({
        bounds: ["page from events since"],
        way: "hash",
        total: count(216),
      });
      // Past the budget the period's values are not read again.
      await add(216, "/p0");
      expect(await breakdown("page")).toEqual({ bounds: [], way: "hash", total: count(217) });
    } finally {
      s.close();
    }
  });

  it("walks a funnel in 64-bit places where the stored order's span fits, in 128-bit ones past it, and again in 128 bits when an event's order is outside the places read", async () => {
    const s = await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" });
    try {
      const add = (seq: bigint, vid: number, name: string, page: string, minute: number) =>
        s.writer.run(`INSERT INTO events BY NAME
          SELECT ${seq} AS seq, 's1' AS site_id, ${minute} * 60000 AS ts, ${vid} AS vid, '${name}' AS name,
            '${page}' AS page, 'https://example.com${page}' AS url, 0 AS received_at, 'v${vid}' AS visitor_id, ${vid} AS dv, 1 AS sn`);
      // Two visitors with both events in the same millisecond: v0's pageview
      // stored before its signup (it converts), v1's after (it does not).
      await add(5n, 0, "pageview", "/a", 1);
      await add(6n, 0, "signup", "/a", 1);
      await add(3n, 1, "signup", "/a", 1);
      await add(4n, 1, "pageview", "/a", 1);
      await s.writer.run("INSERT INTO visitor_numbers SELECT 's1', i, i FROM range(3) t(i)");
      await s.writer.run("INSERT INTO site_numbers VALUES ('s1', 1)");
      await rebuildVisits(s.writer);
      const funnel: FunnelPlan = {
        siteId: "s1",
        timeZone: "UTC",
        steps: [
          { kind: "page", value: "/a", filters: [], label: "a" },
          { kind: "event", value: "signup", filters: [], label: "signup" },
        ],
        filters: [],
        period: { from: 0, to: 86_400_000 },
        windowMs: 86_400_000,
        model: "first_touch",
      };
      /** The funnel's reach per step and how each walk placed the events. */
      const walked = async (rewrite: (sql: string) => string = (sql) => sql) => {
        const ran: string[] = [];
        const store = recordingStore(s, (st) => ran.push(st.sql));
        hookConnections(store, { rewrite });
        const engine = createDuckDbAnalytics({ analytics: store, timeoutMs: 60_000, perSite: 4 });
        const r = await engine.funnel(funnel);
        // The first places' table (first-step-places.ts), then the walk from it.
        const walks = ran
          .filter(
            (sql) => sql.includes("funnel_runs AS") || sql.includes("CREATE TABLE read_memo.f"),
          )
          .map((sql) => (sql.includes("HUGEINT") ? 128 : 64));
        return { reached: r.steps.map((x) => x.visitors), walks };
      };
      expect(await walked()).toEqual({ reached: [2, 1], walks: [64, 64] });
      // The span read before the walk is older than an event it meets (an
      // event stored meanwhile): that walk fails at the first places, the next
      // one places in 128 bits.
      const stale = (sql: string) =>
        sql.replace(
          "SELECT min(seq), max(seq) FROM events",
          "SELECT max(seq), max(seq) FROM events",
        );
      expect(await walked(stale)).toEqual({ reached: [2, 1], walks: [64, 128, 128] });
      // An order stored past half the span a day's period leaves (2^35): 128 bits from the start.
      await add(2n ** 40n, 2, "pageview", "/b", 2);
      expect(await walked()).toEqual({ reached: [2, 1], walks: [128, 128] });
    } finally {
      s.close();
    }
  });

  it("tests a page step against the page's path, whether the page is stored as a URL or as a path, with every character of the value taken as itself", async () => {
    const s = await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" });
    try {
      // One visitor per page, each with one pageview. Pages are stored as the
      // feed stores them (visits.ts, pageOf): a URL without its query, or the
      // URL itself when it does not parse (a relative one: a path).
      const pages = [
        "https://example.com/a.b/c",
        "https://example.com/aXb/c",
        "/a.b/c",
        "https://example.com/it's+(1)",
        "https://example.com/",
        "a.b/c",
        "https://example.com/a.b",
        "https://other.org/x/a.b/c",
        "https://example.com/a.b/line\nbreak",
      ];
      for (const [i, page] of pages.entries()) {
        await s.writer.run(
          `INSERT INTO events BY NAME
            SELECT ${i + 1} AS seq, 's1' AS site_id, 60000 AS ts, ${i} AS vid, 'pageview' AS name,
              $1 AS page, $1 AS url, 0 AS received_at, 'v${i}' AS visitor_id, ${i} AS dv, 1 AS sn`,
          [page],
        );
      }
      await s.writer.run(
        `INSERT INTO visitor_numbers SELECT 's1', i, i FROM range(${pages.length}) t(i)`,
      );
      await s.writer.run("INSERT INTO site_numbers VALUES ('s1', 1)");
      await rebuildVisits(s.writer);
      const engine = createDuckDbAnalytics({ analytics: s, timeoutMs: 60_000, perSite: 4 });
      /** The visitors a step reaches. */
      const reached = async (kind: "page" | "page_prefix", value: string) => {
        const r = await engine.funnel({
          siteId: "s1",
          timeZone: "UTC",
          steps: [
            { kind, value, filters: [], label: "page" },
            { kind: "event", value: "never", filters: [], label: "never" },
          ],
          filters: [],
          period: { from: 0, to: 86_400_000 },
          windowMs: 86_400_000,
          model: "first_touch",
        });
        return r.steps[0]?.visitors;
      };
      // Every page with a path: all but "a.b/c".
      expect(await reached("page_prefix", "/")).toBe(8);
      // "/a.b" is no pattern: "/aXb/c" does not start with it, nor does a path that holds it later.
      expect(await reached("page_prefix", "/a.b")).toBe(4);
      expect(await reached("page_prefix", "/a.b/")).toBe(3);
      expect(await reached("page", "/a.b")).toBe(1);
      expect(await reached("page", "/a.b/c")).toBe(2);
      expect(await reached("page", "/it's+(1)")).toBe(1);
      expect(await reached("page_prefix", "/it's+(")).toBe(1);
      expect(await reached("page", "/")).toBe(1);
      expect(await reached("page", "/a.b/line\nbreak")).toBe(1);
      // A value without "/" first is tested against the whole page.
      expect(await reached("page_prefix", "a.b")).toBe(1);
      expect(await reached("page", "https://example.com/a.b")).toBe(1);
      expect(await reached("page_prefix", "https://example.com/a")).toBe(4);
    } finally {
      s.close();
    }
  });
});
