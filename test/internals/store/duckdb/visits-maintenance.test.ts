/**
 * The visits the feed keeps in DuckDB: re-derived per batch for the visitors
 * it touched, late events merging or splitting visits, deleted events taking
 * theirs away, and always equal to the visits derived from scratch, across a
 * crash at either edge of a batch; a file from before the table gets them at open.
 */
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createAnalyticsFeed } from "../../../../src/store/duckdb/analytics-feed.js";
import {
  type AnalyticsStore,
  openAnalyticsStore,
  visitorKey,
} from "../../../../src/store/duckdb/analytics-store.js";
import {
  rebuildVisits,
  scratchOf,
  VISITS_SCHEMA,
} from "../../../../src/store/duckdb/visits-maintenance.js";
import { openSqlite } from "../../../../src/store/sqlite/open-sqlite.js";
import { createSqliteStore } from "../../../../src/store/sqlite/sqlite-store.js";
import { useTempDirs } from "../../../helpers/temp-dirs.js";

const tempDir = useTempDirs("visits-maintenance-");
const opened: { close(): void }[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
});

const MIN = 60_000;
/** A fixed instant: the tests never read the clock. */
const T0 = Date.UTC(2026, 2, 1, 10);

function setUp() {
  const dir = tempDir();
  const sqlitePath = join(dir, "ingest.sqlite");
  const db = openSqlite(sqlitePath);
  opened.push(db);
  const insert = db.prepare(
    `INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, utm_source, utm_medium)
     VALUES ('s1', ?, ?, ?, ?, ?, ?, ?)`,
  );
  /** Appends one event (in SQLite's order, whatever its time). */
  const add = (
    visitor: string,
    minute: number,
    page: string,
    o: { name?: string; source?: string; medium?: string } = {},
  ) =>
    Number(
      insert.run(
        o.name ?? "pageview",
        `https://example.com${page}`,
        T0 + minute * MIN,
        T0 + minute * MIN,
        visitor,
        o.source ?? null,
        o.medium ?? null,
      ).lastInsertRowid,
    );
  const analytics = async (path = join(dir, "analytics.duckdb")): Promise<AnalyticsStore> => {
    const a = await openAnalyticsStore({ path, threads: 1, memoryLimit: "256MB" });
    opened.push(a);
    return a;
  };
  const feedOf = (a: AnalyticsStore, o: Partial<Parameters<typeof createAnalyticsFeed>[0]> = {}) =>
    createAnalyticsFeed({ sqlitePath, analytics: a, intervalMs: 1000, ...o });
  return { dir, sqlitePath, db, add, analytics, feedOf };
}

/** The visits of a visitor: start and end (minutes after T0), events, pageviews, channel, landing and exit. */
async function visitsOf(a: AnalyticsStore, visitor: string) {
  const r = await a.writer.runAndReadAll(
    `SELECT v_start, v_end, v_events, v_pageviews, v_seconds, v_channel, v_source, v_landing_page, v_exit_page
     FROM visits WHERE site_id = 's1' AND vid = $1 ORDER BY v_start`,
    [visitorKey(visitor)],
  );
  return r
    .getRows()
    .map(([start, end, events, pageviews, seconds, channel, source, landing, exit]) => ({
      from: (Number(start) - T0) / MIN,
      to: (Number(end) - T0) / MIN,
      events: Number(events),
      pageviews: Number(pageviews),
      seconds: Number(seconds),
      channel,
      source,
      landing,
      exit,
    }));
}

/** Every row of `visits`, in order. */
async function allVisits(a: AnalyticsStore) {
  const r = await a.writer.runAndReadAll("SELECT * FROM visits ORDER BY site_id, vid, v_start");
  return r.getRowsJS();
}

/** The visits as a rebuild derives them from the events now (rolled back: nothing changes). */
async function derivedFromScratch(a: AnalyticsStore) {
  await a.writer.run("BEGIN TRANSACTION");
  try {
    await rebuildVisits(a.writer);
    return await allVisits(a);
  } finally {
    await a.writer.run("ROLLBACK");
  }
}

const page = (p: string) => `https://example.com${p}`;

describe("the visits the feed keeps", () => {
  it("merges visits when a late event fills the gap, and takes a late first event's touch", async () => {
    const t = setUp();
    const a = await t.analytics();
    const feed = t.feedOf(a);
    t.add("v1", 0, "/a");
    t.add("v1", 40, "/b");
    await feed.runOnce();
    expect(await visitsOf(a, "v1")).toEqual([
      {
        from: 0,
        to: 0,
        events: 1,
        pageviews: 1,
        seconds: 0,
        channel: "Direct",
        source: "(none)",
        landing: page("/a"),
        exit: page("/a"),
      },
      {
        from: 40,
        to: 40,
        events: 1,
        pageviews: 1,
        seconds: 0,
        channel: "Direct",
        source: "(none)",
        landing: page("/b"),
        exit: page("/b"),
      },
    ]);
    // Arrives after both, at minute 20: 20 minutes from each, one visit of three events.
    t.add("v1", 20, "/c");
    await feed.runOnce();
    expect(await visitsOf(a, "v1")).toEqual([
      {
        from: 0,
        to: 40,
        events: 3,
        pageviews: 3,
        seconds: 2400,
        channel: "Direct",
        source: "(none)",
        landing: page("/a"),
        exit: page("/b"),
      },
    ]);
    // Earlier still, from a newsletter, 25 minutes before: the visit now starts there.
    t.add("v1", -25, "/news", { source: "newsletter", medium: "email" });
    await feed.runOnce();
    await feed.stop();
    expect(await visitsOf(a, "v1")).toEqual([
      {
        from: -25,
        to: 40,
        events: 4,
        pageviews: 4,
        seconds: 3900,
        channel: "Email",
        source: "newsletter",
        landing: page("/news"),
        exit: page("/b"),
      },
    ]);
    expect(await allVisits(a)).toEqual(await derivedFromScratch(a));
  });

  it("re-derives a visit a retention pruning cuts through, drops the visits before the cut, keeps other visitors'", async () => {
    const t = setUp();
    const a = await t.analytics();
    const feed = t.feedOf(a);
    t.add("v1", 0, "/a");
    t.add("v1", 25, "/b");
    t.add("v1", 50, "/c", { name: "signup" });
    t.add("v2", 10, "/x");
    t.add("v3", -100, "/old");
    await feed.runOnce();
    expect((await visitsOf(a, "v1")).map((v) => [v.from, v.to, v.events])).toEqual([[0, 50, 3]]);
    expect(await visitsOf(a, "v3")).toHaveLength(1);
    // Events leave SQLite once moved: the pruning reaches DuckDB through its log entry.
    const store = createSqliteStore(t.sqlitePath);
    try {
      await store.pruneEventsStep("s1", T0 + MIN, 1000);
    } finally {
      await store.close();
    }
    await feed.runOnce();
    await feed.stop();
    expect(await visitsOf(a, "v1")).toEqual([
      {
        from: 25,
        to: 50,
        events: 2,
        pageviews: 1,
        seconds: 1500,
        channel: "Direct",
        source: "(none)",
        landing: page("/b"),
        exit: page("/b"),
      },
    ]);
    expect(await visitsOf(a, "v3")).toEqual([]);
    expect((await visitsOf(a, "v2")).map((v) => [v.from, v.to, v.events])).toEqual([[10, 10, 1]]);
    expect(await allVisits(a)).toEqual(await derivedFromScratch(a));
  });

  it("has no visit of an erased visitor once the feed applied the erasure", async () => {
    const t = setUp();
    const a = await t.analytics();
    const feed = t.feedOf(a);
    t.add("gone", 0, "/a");
    t.add("gone", 90, "/b");
    t.add("stays", 5, "/c");
    await feed.runOnce();
    expect(await visitsOf(a, "gone")).toHaveLength(2);
    const store = createSqliteStore(t.sqlitePath);
    try {
      await store.eraseVisitors("s1", ["gone"], []);
    } finally {
      await store.close();
    }
    await feed.runOnce();
    await feed.stop();
    expect(await visitsOf(a, "gone")).toEqual([]);
    expect((await visitsOf(a, "stays")).map((v) => [v.from, v.to, v.events])).toEqual([[5, 5, 1]]);
    expect(await allVisits(a)).toEqual(await derivedFromScratch(a));
  });

  it("commits a batch's visits with its events: a crash before or after DuckDB's commit leaves them consistent", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.feedOf(a).runOnce();
    // Two visitors, each with a late event that merges two visits, in batches of 3.
    for (const m of [0, 40]) t.add("v1", m, `/v1-${m}`);
    for (const m of [0, 40]) t.add("v2", m, `/v2-${m}`);
    t.add("v1", 20, "/v1-late");
    t.add("v2", 20, "/v2-late");
    let batches = 0;
    const dying = t.feedOf(a, {
      batchMax: 3,
      faults: {
        beforeCommit() {
          batches += 1;
          if (batches === 2) throw new Error("killed");
        },
      },
    });
    await expect(dying.runOnce()).rejects.toThrow("killed");
    await dying.stop();
    // The first batch only: v1's two visits and v2's first event.
    expect((await visitsOf(a, "v1")).map((v) => [v.from, v.to, v.events])).toEqual([
      [0, 0, 1],
      [40, 40, 1],
    ]);
    expect((await visitsOf(a, "v2")).map((v) => [v.from, v.to, v.events])).toEqual([[0, 0, 1]]);
    expect(await allVisits(a)).toEqual(await derivedFromScratch(a));
    const afterCommit = t.feedOf(a, {
      batchMax: 3,
      faults: {
        afterCommit() {
          throw new Error("killed");
        },
      },
    });
    await expect(afterCommit.runOnce()).rejects.toThrow("killed");
    await afterCommit.stop();
    const restarted = t.feedOf(a, { batchMax: 3 });
    await restarted.runOnce();
    await restarted.stop();
    for (const v of ["v1", "v2"]) {
      expect((await visitsOf(a, v)).map((x) => [x.from, x.to, x.events])).toEqual([[0, 40, 3]]);
    }
    expect(await allVisits(a)).toEqual(await derivedFromScratch(a));
  });

  it("derives a batch's new visitors from its own events, beside visitors coming back within and after 30 minutes", async () => {
    const t = setUp();
    const a = await t.analytics();
    const feed = t.feedOf(a);
    t.add("back", 0, "/a");
    t.add("again", 0, "/x");
    t.add("again", 5, "/y");
    await feed.runOnce();
    // One batch: a new visitor (two events, out of order), one back after
    // 10 minutes (its visit grows), one back after 45 (a second visit; the
    // first stays as it was).
    t.add("new", 12, "/n2");
    t.add("back", 10, "/b");
    t.add("new", 11, "/n1", { source: "newsletter", medium: "email" });
    t.add("again", 50, "/z");
    await feed.runOnce();
    await feed.stop();
    const brief = async (visitor: string) =>
      (await visitsOf(a, visitor)).map((v) => [v.from, v.to, v.events, v.landing, v.exit]);
    expect(await brief("new")).toEqual([[11, 12, 2, page("/n1"), page("/n2")]]);
    expect((await visitsOf(a, "new"))[0]?.channel).toBe("Email");
    expect(await brief("back")).toEqual([[0, 10, 2, page("/a"), page("/b")]]);
    expect(await brief("again")).toEqual([
      [0, 5, 2, page("/x"), page("/y")],
      [50, 50, 1, page("/z"), page("/z")],
    ]);
    expect(await allVisits(a)).toEqual(await derivedFromScratch(a));
  });

  it("derives the same visits in slices of visitors as per batch, stored in time order", async () => {
    const t = setUp();
    const a = await t.analytics();
    const feed = t.feedOf(a, { batchMax: 2 });
    for (let i = 0; i < 12; i++) t.add(`v${i % 5}`, (i * 17) % 90, `/p${i}`);
    await feed.runOnce();
    await feed.stop();
    const kept = await allVisits(a);
    expect(kept).toHaveLength(6);
    await a.writer.run("BEGIN TRANSACTION");
    // Two events a slice: six statements, each a part of the visitors.
    await rebuildVisits(a.writer, { chunkEvents: 2 });
    expect(await allVisits(a)).toEqual(kept);
    // Stored in time order across the slices, as the feed appends them (a
    // period's scans skip the row groups before it).
    const stored = (await a.writer.runAndReadAll("SELECT v_start FROM visits ORDER BY rowid"))
      .getRowsJS()
      .map(([t]) => Number(t));
    expect(stored).toEqual([...stored].sort((x, y) => x - y));
    await a.writer.run("ROLLBACK");
  });

  it("gathers a rebuild's slices in a scratch file beside the store, each committed, then deletes it: the same visits, in time order", async () => {
    const t = setUp();
    const path = join(t.dir, "analytics.duckdb");
    const a = await t.analytics(path);
    const feed = t.feedOf(a, { batchMax: 2 });
    for (let i = 0; i < 12; i++) t.add(`v${i % 5}`, (i * 17) % 90, `/p${i}`);
    await feed.runOnce();
    await feed.stop();
    const kept = await allVisits(a);
    const scratch = scratchOf(a.path) as string;
    expect(scratch).toBe(`${path}.rebuild`);
    // A crash's leftover is replaced.
    writeFileSync(scratch, "left by a crash");
    // Outside a transaction, as the feeds' rebuilds run it.
    await rebuildVisits(a.writer, { chunkEvents: 2, scratch });
    expect(await allVisits(a)).toEqual(kept);
    const stored = (await a.writer.runAndReadAll("SELECT v_start FROM visits ORDER BY rowid"))
      .getRowsJS()
      .map(([t]) => Number(t));
    expect(stored).toEqual([...stored].sort((x, y) => x - y));
    expect(readdirSync(t.dir).filter((f) => f.includes(".rebuild"))).toEqual([]);
    const attached = await a.writer.runAndReadAll(
      "SELECT database_name FROM duckdb_databases() WHERE database_name = 'rebuild_scratch'",
    );
    expect(attached.getRows()).toEqual([]);
  });

  it("derives the visits of a file written before the table existed when it is opened", async () => {
    const t = setUp();
    const path = join(t.dir, "analytics.duckdb");
    const a = await t.analytics(path);
    const feed = t.feedOf(a);
    t.add("v1", 0, "/a");
    t.add("v1", 10, "/b");
    await feed.runOnce();
    await feed.stop();
    await a.writer.run("DROP TABLE visits");
    a.close();
    const again = await t.analytics(path);
    expect((await visitsOf(again, "v1")).map((v) => [v.from, v.to, v.events])).toEqual([
      [0, 10, 2],
    ]);
  });

  it("derives again, with (none) for what a visit lacks, the visits of a file that stored NULL, and marks the file due for a rewrite", async () => {
    const t = setUp();
    const path = join(t.dir, "analytics.duckdb");
    const a = await t.analytics(path);
    const feed = t.feedOf(a);
    t.add("v1", 0, "/a");
    t.add("v2", 0, "/b", { source: "google", medium: "cpc" });
    await feed.runOnce();
    await feed.stop();
    // The layout before: the same visits, an absent source as NULL.
    await a.writer.run(
      "CREATE TABLE kept AS SELECT * REPLACE (nullif(v_source, '(none)') AS v_source) FROM visits",
    );
    await a.writer.run("DROP TABLE visits");
    await a.writer.run(VISITS_SCHEMA.replace("v_source VARCHAR NOT NULL", "v_source VARCHAR"));
    await a.writer.run("INSERT INTO visits SELECT * FROM kept; DROP TABLE kept");
    await a.writer.run("DELETE FROM feed_state WHERE id = 3");
    expect((await visitsOf(a, "v1")).map((v) => v.source)).toEqual([null]);
    a.close();
    const again = await t.analytics(path);
    expect((await visitsOf(again, "v1")).map((v) => [v.source, v.landing])).toEqual([
      ["(none)", page("/a")],
    ]);
    expect((await visitsOf(again, "v2")).map((v) => [v.source, v.channel])).toEqual([
      ["google", "Paid Search"],
    ]);
    const layout = await again.writer.runAndReadAll(
      `SELECT count(*) FILTER (WHERE is_nullable = 'YES') FROM information_schema.columns
       WHERE table_name = 'visits' AND column_name LIKE 'v\\_%' ESCAPE '\\'`,
    );
    expect(layout.getRows()).toEqual([[0n]]);
    const due = await again.writer.runAndReadAll("SELECT count(*) FROM feed_state WHERE id = 3");
    expect(due.getRows()).toEqual([[1n]]);
    // Opened again, the file is left as it is.
    again.close();
    const third = await t.analytics(path);
    expect((await visitsOf(third, "v1")).map((v) => v.source)).toEqual(["(none)"]);
  });
});
