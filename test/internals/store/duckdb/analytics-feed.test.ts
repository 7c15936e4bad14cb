/**
 * The feed SQLite → DuckDB: exactly once across a crash at any edge of a
 * batch (before DuckDB's commit, after it before SQLite's delete, during
 * that delete), the events it moved deleted from SQLite's outbox, ids never
 * given twice, erasure's and retention's entries applied in log order, and
 * a new DuckDB file filled from SQLite, and the pages of what it moved
 * given back to the file system in short steps.
 */
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { recordingStore } from "../../../../bench/lib/recording-store.mjs";
import { createDuckDbAnalytics } from "../../../../src/store/duckdb/analytics-engine.js";
import {
  type AnalyticsFeedOptions,
  createAnalyticsFeed,
} from "../../../../src/store/duckdb/analytics-feed.js";
import {
  type AnalyticsStore,
  openAnalyticsStore,
} from "../../../../src/store/duckdb/analytics-store.js";
import { MIGRATIONS } from "../../../../src/store/sqlite/migrations.js";
import { openSqlite } from "../../../../src/store/sqlite/open-sqlite.js";
import { useTempDirs } from "../../../helpers/temp-dirs.js";

const tempDir = useTempDirs("analytics-feed-");
const opened: { close(): void }[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
});

function setUp() {
  const dir = tempDir();
  const sqlitePath = join(dir, "ingest.sqlite");
  const db = openSqlite(sqlitePath);
  opened.push(db);
  const insert = db.prepare(
    "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES ('s1', 'pageview', ?, ?, ?, ?, ?)",
  );
  const add = (n: number, from = 0) => {
    db.transaction(() => {
      for (let i = from; i < from + n; i++) {
        insert.run(
          `https://example.com/${i}`,
          1_000 + i,
          1_000 + i,
          `v${i % 7}`,
          JSON.stringify({ i }),
        );
      }
    })();
  };
  const analytics = async (): Promise<AnalyticsStore> => {
    const a = await openAnalyticsStore({
      path: join(dir, "analytics.duckdb"),
      threads: 1,
      memoryLimit: "256MB",
    });
    opened.push(a);
    return a;
  };
  const moved = async (a: AnalyticsStore) => {
    const r = await a.writer.runAndReadAll(
      "SELECT CAST(props->>'$.i' AS INTEGER) AS i, count(*) FROM events GROUP BY 1 ORDER BY 1",
    );
    return r.getRows().map(([i, n]) => [Number(i), Number(n)]);
  };
  /** The first run of a feed on an empty file: the rebuild from SQLite (nothing yet). */
  const initialize = async (a: AnalyticsStore) => {
    const feed = createAnalyticsFeed({ sqlitePath, analytics: a, intervalMs: 1000 });
    expect(await feed.runOnce()).toBe(0);
    await feed.stop();
  };
  /** The events still in SQLite's outbox. */
  const outbox = () => (db.prepare("SELECT count(*) AS n FROM events").get() as { n: number }).n;
  /** A feed of this directory (polling every second unless told; no loop is started). */
  type Extra = Partial<Omit<AnalyticsFeedOptions, "sqlitePath" | "analytics">>;
  const feed = (a: AnalyticsStore, extra: Extra = {}) =>
    createAnalyticsFeed({ sqlitePath, analytics: a, intervalMs: 1000, ...extra });
  /**
   * A feed whose process dies where `faults` throws "killed" (in runOnce, or
   * in `during` when given); it is stopped, as the dead process's connections would be.
   */
  const crash = async (
    a: AnalyticsStore,
    extra: Extra,
    during: (f: ReturnType<typeof feed>) => Promise<unknown> = (f) => f.runOnce(),
  ) => {
    const crashing = feed(a, extra);
    await expect(during(crashing)).rejects.toThrow("killed");
    await crashing.stop();
  };
  /** The next start's feed: it runs until nothing is left, then stops. */
  const restart = async (a: AnalyticsStore, extra: Extra = {}) => {
    const restarted = feed(a, extra);
    await restarted.runOnce();
    await restarted.stop();
  };
  return { dir, sqlitePath, db, add, analytics, moved, initialize, outbox, feed, crash, restart };
}

/** A fault that stands for a `kill -9` at that point. */
const killed = () => {
  throw new Error("killed");
};

const once = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, k) => [from + k, 1]);

describe("the analytics feed", () => {
  it("applies a batch exactly once when the process dies after DuckDB's commit, before the outbox is deleted", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(30);
    await t.crash(a, { batchMax: 10, faults: { afterCommit: killed } });
    // The outbox still holds the batch DuckDB committed (and events have no log
    // entry: migration 23); the restarted feed skips and deletes them by the id DuckDB recorded.
    expect(t.db.prepare("SELECT count(*) AS n FROM analytics_feed").get()).toEqual({ n: 0 });
    expect(t.outbox()).toBe(30);
    expect(await t.moved(a)).toEqual(once(0, 10));
    await t.restart(a, { batchMax: 10 });
    expect(await t.moved(a)).toEqual(once(0, 30));
    expect(t.db.prepare("SELECT count(*) AS n FROM analytics_feed").get()).toEqual({ n: 0 });
    expect(t.outbox()).toBe(0);
  });

  it("finishes a delete of the outbox that died between two slices, and applies nothing twice", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(2_500);
    await t.crash(a, { faults: { duringDelete: killed } });
    // One slice of 1,000 deleted; DuckDB committed all of them.
    expect(t.outbox()).toBe(1_500);
    expect(await t.moved(a)).toEqual(once(0, 2_500));
    const restarted = t.feed(a);
    await restarted.runOnce();
    t.add(5, 2_500);
    await restarted.runOnce();
    await restarted.stop();
    expect(await t.moved(a)).toEqual(once(0, 2_505));
    expect(t.outbox()).toBe(0);
  });

  it("applies nothing of a batch that dies before DuckDB's commit, then all of it after the restart", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(25);
    let batches = 0;
    await t.crash(a, {
      batchMax: 10,
      faults: {
        beforeCommit() {
          batches += 1;
          if (batches === 2) killed();
        },
      },
    });
    expect(await t.moved(a)).toEqual(once(0, 10));
    await t.restart(a, { batchMax: 10 });
    expect(await t.moved(a)).toEqual(once(0, 25));
    expect(t.outbox()).toBe(0);
  });

  it("catchUp applies every entry committed before the call, over several batches, then resolves", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    // 25 events, 10 per batch: three batches before catchUp may resolve. No polling loop.
    t.add(25);
    const feed = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 60_000,
      batchMax: 10,
    });
    await feed.catchUp();
    expect(await t.moved(a)).toEqual(once(0, 25));
    expect(t.outbox()).toBe(0);
    // Nothing written since: it resolves at once, and applies nothing.
    await feed.catchUp();
    expect(await t.moved(a)).toEqual(once(0, 25));
    t.add(3, 25);
    await feed.catchUp();
    expect(await t.moved(a)).toEqual(once(0, 28));
    await feed.stop();
  });

  it("catchUp called while a batch appends waits for that batch's commit before it resolves", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(20);
    let committed = false;
    let caughtUp: Promise<boolean> | undefined;
    const feed = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 60_000,
      faults: {
        // Every event of the outbox is appended; DuckDB has not committed them yet.
        beforeCommit() {
          caughtUp ??= feed.catchUp().then(() => committed);
        },
        afterCommit() {
          committed = true;
        },
      },
    });
    await feed.runOnce();
    // Resolved only once the rows a read would look for were committed.
    expect(await caughtUp).toBe(true);
    expect(await t.moved(a)).toEqual(once(0, 20));
    await feed.stop();
  });

  it("catchUp resolves under a steady flow of events once what was committed before the call is in, not when the outbox is empty", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(20);
    // Ingestion never pauses: every batch's commit finds 10 more events in
    // the outbox (batches of 10), for 200 batches; the polling loop runs.
    let batches = 0;
    let next = 20;
    const feed = t.feed(a, {
      intervalMs: 10,
      batchMax: 10,
      faults: {
        afterCommit() {
          batches += 1;
          if (batches < 200) {
            t.add(10, next);
            next += 10;
          }
        },
      },
    });
    feed.start();
    while (batches < 3) await new Promise((r) => setTimeout(r, 5));
    t.add(1, 10_000);
    const asked = batches;
    await feed.catchUp();
    const answered = batches;
    expect(await t.moved(a)).toContainEqual([10_000, 1]);
    // The outbox held at most 21 events then: a few batches, not the flow's end.
    expect(answered - asked).toBeLessThanOrEqual(5);
    await feed.stop();
  });

  it("never gives a moved event's id again, even once the outbox is empty", async () => {
    const t = setUp();
    t.add(5);
    const a = await t.analytics();
    const feed = createAnalyticsFeed({ sqlitePath: t.sqlitePath, analytics: a, intervalMs: 1000 });
    await feed.runOnce();
    expect(t.outbox()).toBe(0);
    t.add(1, 100);
    expect(t.db.prepare("SELECT id FROM events").all()).toEqual([{ id: 6 }]);
    await feed.runOnce();
    await feed.stop();
    expect(await t.moved(a)).toEqual([...once(0, 5), [100, 1]]);
    const seqs = await a.writer.runAndReadAll("SELECT seq FROM events ORDER BY seq");
    expect(seqs.getRows().map(([x]) => Number(x))).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("applies erasure's and retention's entries in log order, without logging its own deletes", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(14);
    const feed = createAnalyticsFeed({ sqlitePath: t.sqlitePath, analytics: a, intervalMs: 1000 });
    await feed.runOnce();
    // The feed's delete of what it moved logged nothing (migration 19 dropped the trigger).
    expect(t.db.prepare("SELECT count(*) AS n FROM analytics_feed").get()).toEqual({ n: 0 });
    const log = t.db.prepare(
      "INSERT INTO analytics_feed (kind, site_id, key, ref) VALUES (?, 's1', ?, ?)",
    );
    // v3's events erased (i = 3, 10), then one more of v3 arrives: it stays.
    log.run(5, "v3", null);
    t.add(1, 17);
    expect(t.db.prepare("SELECT visitor_id FROM events").all()).toEqual([{ visitor_id: "v3" }]);
    // Events before ts 1_002 pruned (i = 0, 1); the other site's are not touched.
    log.run(7, null, 1_002);
    t.db
      .prepare(
        "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, user_id, props) VALUES ('s2', '$identify', 'https://example.com/', 1, 1, 'v9', 'u1', '{\"i\":50}')",
      )
      .run();
    await feed.runOnce();
    expect(await t.moved(a)).toEqual([
      ...once(2, 14).filter(([i]) => i !== 3 && i !== 10),
      [17, 1],
      [50, 1],
    ]);
    // A user's $identify events erased on one site only: one already moved
    // (the entry deletes it from DuckDB), one still in the outbox (the
    // erasure's own delete takes it there, in the entry's transaction).
    const identify = t.db.prepare(
      "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, user_id, props) VALUES ('s1', '$identify', 'https://example.com/', 5_000, 5_000, 'v9', 'u1', ?)",
    );
    identify.run('{"i":60}');
    await feed.runOnce();
    identify.run('{"i":61}');
    t.db.transaction(() => {
      t.db.prepare("DELETE FROM events WHERE site_id = 's1' AND user_id = 'u1'").run();
      log.run(6, "u1", null);
    })();
    // Then one more of that user: logged after the erasure, it stays.
    identify.run('{"i":62}');
    await feed.runOnce();
    await feed.stop();
    expect((await t.moved(a)).filter(([i]) => (i as number) >= 50)).toEqual([
      [50, 1],
      [62, 1],
    ]);
    expect(feed.removedRows()).toBe(true);
    expect(t.outbox()).toBe(0);
  });

  it("counts a removal once DuckDB committed it, not before: a read taken while it was applied is older than the count", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(14);
    let atCommit: number | undefined;
    const feed = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 60_000,
      faults: {
        beforeCommit() {
          atCommit ??= feed.removals();
        },
      },
    });
    await feed.runOnce();
    expect(feed.removals()).toBe(0);
    atCommit = undefined;
    t.db
      .prepare("INSERT INTO analytics_feed (kind, site_id, key, ref) VALUES (5, 's1', 'v3', NULL)")
      .run();
    await feed.runOnce();
    // The erasure's rows were deleted in the transaction, its count moved after the commit.
    expect(atCommit).toBe(0);
    expect(feed.removals()).toBe(1);
    await feed.stop();
  });

  it("numbers each site's visitors in the order it first saw them, events and visits carrying the number; an erased or pruned-away visitor's number goes, the top one given again", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    const rows = async (sql: string) => (await a.writer.runAndReadAll(sql)).getRowsJS();
    /** Each visitor's number, as its events carry it, by site. */
    const numbers = () =>
      rows("SELECT DISTINCT site_id, visitor_id, dv FROM events ORDER BY site_id, dv");
    /** Events and visits whose number is not their visitor's, and numbers without a visitor. */
    const astray = () =>
      rows(`SELECT
        (SELECT count(*) FROM events e ANTI JOIN visitor_numbers n ON n.site_id = e.site_id AND n.vid = e.vid AND n.dv = e.dv),
        (SELECT count(*) FROM visits v ANTI JOIN visitor_numbers n ON n.site_id = v.site_id AND n.vid = v.vid AND n.dv = v.dv),
        (SELECT count(*) FROM visitor_numbers n ANTI JOIN events e ON n.site_id = e.site_id AND n.vid = e.vid)`);
    const f = t.feed(a, { batchMax: 4 });
    // v0…v6 over several batches, each seen again in a later batch.
    t.add(14);
    t.db
      .prepare(
        "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES ('s2', 'pageview', 'https://example.com/', 1, 1, 'v5', '{\"i\":80}')",
      )
      .run();
    await f.runOnce();
    t.add(7, 14);
    // A new visitor whose only event is older than the others'.
    t.db
      .prepare(
        "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES ('s1', 'pageview', 'https://example.com/', 500, 500, 'old', '{\"i\":70}')",
      )
      .run();
    await f.runOnce();
    const s1 = ["v0", "v1", "v2", "v3", "v4", "v5", "v6", "old"];
    expect(await numbers()).toEqual([
      ...s1.map((v, dv) => ["s1", v, dv]),
      // Another site numbers its own visitors from 0.
      ["s2", "v5", 0],
    ]);
    expect(await astray()).toEqual([[0n, 0n, 0n]]);
    // v3 erased, and everything before ts 1_000 pruned (the visitor "old").
    const log = t.db.prepare(
      "INSERT INTO analytics_feed (kind, site_id, key, ref) VALUES (?, 's1', ?, ?)",
    );
    log.run(5, "v3", null);
    log.run(7, null, 1_000);
    await f.runOnce();
    expect(await rows("SELECT dv FROM visitor_numbers WHERE site_id = 's1' ORDER BY dv")).toEqual([
      [0],
      [1],
      [2],
      [4],
      [5],
      [6],
    ]);
    expect(await astray()).toEqual([[0n, 0n, 0n]]);
    // v3 comes back: the next number after the highest left, 7 again.
    t.add(1, 17);
    await f.runOnce();
    await f.stop();
    expect((await numbers()).filter(([site]) => site === "s1")).toEqual(
      ["v0", "v1", "v2", "v4", "v5", "v6", "v3"].map((v, k) => ["s1", v, k < 3 ? k : k + 1]),
    );
    expect(await astray()).toEqual([[0n, 0n, 0n]]);
  });

  it("appends an event after every erasure logged before it, however the log is split into batches", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(7);
    const feed = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 1000,
      batchMax: 1,
    });
    await feed.runOnce();
    const log = t.db.prepare(
      "INSERT INTO analytics_feed (kind, site_id, key, ref) VALUES (?, 's1', ?, NULL)",
    );
    // A payment entry (of no payment: nothing to apply), then v3's erasure, then
    // an event of v3: one entry a batch, so the event must wait for the erasure's batch.
    log.run(1, "pay_none");
    log.run(5, "v3");
    t.add(1, 10);
    await feed.runOnce();
    await feed.stop();
    expect(await t.moved(a)).toEqual([...once(0, 7).filter(([i]) => i !== 3), [10, 1]]);
    expect(t.outbox()).toBe(0);
  });

  it("moves the events of a log written before migration 23 exactly once, and the upgrade leaves no entry per event", async () => {
    const dir = tempDir();
    const sqlitePath = join(dir, "ingest.sqlite");
    const old = new Database(sqlitePath);
    for (const m of MIGRATIONS.filter((x) => x.version < 23)) {
      old.exec(m.sql);
      old.pragma(`user_version = ${m.version}`);
    }
    const insert = old.prepare(
      "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES ('s1', 'pageview', 'https://example.com/', ?, ?, 'v1', ?)",
    );
    for (let i = 0; i < 6; i++) insert.run(1_000 + i, 1_000 + i, JSON.stringify({ i }));
    // The old trigger logged each insert.
    expect(old.prepare("SELECT kind, ref FROM analytics_feed ORDER BY seq").all()).toHaveLength(6);
    old.close();
    const db = openSqlite(sqlitePath);
    opened.push(db);
    expect(db.prepare("SELECT count(*) AS n FROM analytics_feed").get()).toEqual({ n: 0 });
    expect(
      db.prepare("SELECT name FROM sqlite_master WHERE name = 'analytics_feed_event_insert'").all(),
    ).toEqual([]);
    db.prepare(
      "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES ('s1', 'pageview', 'https://example.com/', 2000, 2000, 'v1', '{\"i\":6}')",
    ).run();
    expect(db.prepare("SELECT count(*) AS n FROM analytics_feed").get()).toEqual({ n: 0 });
    const a = await openAnalyticsStore({
      path: join(dir, "analytics.duckdb"),
      threads: 1,
      memoryLimit: "256MB",
    });
    opened.push(a);
    const feed = createAnalyticsFeed({ sqlitePath, analytics: a, intervalMs: 1000, batchMax: 4 });
    await feed.runOnce();
    db.prepare(
      "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES ('s1', 'pageview', 'https://example.com/', 2001, 2001, 'v1', '{\"i\":7}')",
    ).run();
    await feed.catchUp();
    await feed.stop();
    const r = await a.writer.runAndReadAll(
      "SELECT CAST(props->>'$.i' AS INTEGER), count(*) FROM events GROUP BY 1 ORDER BY 1",
    );
    expect(r.getRows().map(([i, n]) => [Number(i), Number(n)])).toEqual(once(0, 8));
    expect((db.prepare("SELECT count(*) AS n FROM events").get() as { n: number }).n).toBe(0);
  });

  it("fills a new analytics file with SQLite's outbox (moved events live only in the file), then follows the log", async () => {
    const t = setUp();
    t.add(12);
    const first = await t.analytics();
    const feed = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: first,
      intervalMs: 1000,
    });
    await feed.runOnce();
    await feed.stop();
    first.close();
    rmSync(join(t.dir, "analytics.duckdb"), { force: true });
    rmSync(join(t.dir, "analytics.duckdb.wal"), { force: true });
    t.add(3, 12);
    const a = await t.analytics();
    const again = createAnalyticsFeed({ sqlitePath: t.sqlitePath, analytics: a, intervalMs: 1000 });
    await again.runOnce();
    t.add(2, 15);
    await again.runOnce();
    await again.stop();
    // The first 12 left SQLite with the deleted file: what the backup of both files is for.
    expect(await t.moved(a)).toEqual(once(12, 17));
  });

  it("rebuilds an analytics file that is ahead of SQLite's log (a restored backup)", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(10);
    const feed = createAnalyticsFeed({ sqlitePath: t.sqlitePath, analytics: a, intervalMs: 1000 });
    await feed.runOnce();
    await feed.stop();
    expect(await t.moved(a)).toEqual(once(0, 10));
    // An older database in its place: its events end before the file's highest one.
    t.db.close();
    for (const f of ["", "-wal", "-shm"]) rmSync(`${t.sqlitePath}${f}`, { force: true });
    const older = openSqlite(t.sqlitePath);
    opened.push(older);
    const insert = older.prepare(
      "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES ('s1', 'pageview', 'https://example.com/', 1, 1, 'v', ?)",
    );
    for (const i of [100, 101, 102]) insert.run(JSON.stringify({ i }));
    const again = createAnalyticsFeed({ sqlitePath: t.sqlitePath, analytics: a, intervalMs: 1000 });
    await again.runOnce();
    await again.stop();
    expect(await t.moved(a)).toEqual(once(100, 103));
  });
  it("rebuilds a file a slice of events at a time, each committed; after a crash between two, the file has no watermark and the next start rebuilds every event once", async () => {
    const t = setUp();
    t.add(7);
    const a = await t.analytics();
    let slices = 0;
    await t.crash(a, {
      rebuildStageRows: 2,
      faults: {
        afterRebuildSlice() {
          if (++slices === 2) killed();
        },
      },
    });
    // Two slices were committed (one transaction for all of them held every
    // slice's stage in memory until the end: 10M events ran out of 512MB).
    expect(await t.moved(a)).toEqual(once(0, 4));
    const marks = await a.writer.runAndReadAll("SELECT count(*) FROM feed_state");
    expect(Number(marks.getRows()[0]?.[0])).toBe(0);
    expect(t.outbox()).toBe(7);
    await t.restart(a, { rebuildStageRows: 2 });
    expect(await t.moved(a)).toEqual(once(0, 7));
    expect(t.outbox()).toBe(0);
    // Each visitor numbered once, in the order of its first event.
    const numbers = await a.writer.runAndReadAll(
      "SELECT dv, count(*) FROM visitor_numbers GROUP BY dv ORDER BY dv",
    );
    expect(numbers.getRows().map(([dv, n]) => [Number(dv), Number(n)])).toEqual(once(0, 7));
    const visits = await a.writer.runAndReadAll("SELECT count(*), sum(v_events) FROM visits");
    expect(visits.getRows().map((r) => r.map(Number))).toEqual([[7, 7]]);
  });

  it("gives the pages of the events it moved back to the file system in short steps, ingestion committing between two", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    const { before, pages } = fillOutbox(t);
    // A writer of ingestion that never waits: it fails if a step's lock were still held.
    const other = new Database(t.sqlitePath);
    opened.push(other);
    other.pragma("busy_timeout = 0");
    const write = other.prepare(
      "INSERT INTO readiness_probe (id, checked_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at",
    );
    let steps = 0;
    const feed = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 1000,
      freePagesKept: 100,
      faults: {
        duringReclaim() {
          steps += 1;
          write.run(steps);
        },
      },
    });
    await feed.runOnce();
    expect(t.outbox()).toBe(0);
    expect(await t.moved(a)).toEqual(once(0, 4_000));
    // 100 free pages kept for the next events, the rest given back, 512 pages a step at most.
    expect(t.db.pragma("freelist_count", { simple: true })).toBe(100);
    expect(pages()).toBeLessThan(before.pages / 4);
    expect(steps).toBeGreaterThanOrEqual(Math.floor((before.pages * 0.75) / 512));
    // The next poll finds nothing to apply: the grown WAL is checkpointed (the file is
    // cut to its pages) and truncated.
    await feed.runOnce();
    await feed.stop();
    expect(statSync(`${t.sqlitePath}-wal`).size).toBe(0);
    expect(statSync(t.sqlitePath).size).toBe(pages() * 4096);
    expect(statSync(t.sqlitePath).size).toBeLessThan(before.bytes / 4);
  });

  it("finishes giving pages back after a process that died between two steps", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    const { before, pages } = fillOutbox(t);
    await t.crash(a, { freePagesKept: 0, faults: { duringReclaim: killed } });
    expect(t.outbox()).toBe(0);
    expect(t.db.pragma("freelist_count", { simple: true })).toBeGreaterThan(before.pages / 2);
    await t.restart(a, { freePagesKept: 0 });
    expect(t.db.pragma("freelist_count", { simple: true })).toBe(0);
    expect(pages()).toBeLessThan(before.pages / 4);
    expect(await t.moved(a)).toEqual(once(0, 4_000));
  });
});

describe("the analytics feed while the file is rewritten", () => {
  /**
   * A visitor's events erased as erasure does it, in one transaction: its
   * events still in the outbox deleted there, and a log entry for DuckDB.
   */
  const erase = (t: ReturnType<typeof setUp>, visitor: string) =>
    t.db.transaction(() => {
      t.db.prepare("DELETE FROM events WHERE site_id = 's1' AND visitor_id = ?").run(visitor);
      t.db
        .prepare("INSERT INTO analytics_feed (kind, site_id, key, ref) VALUES (5, 's1', ?, NULL)")
        .run(visitor);
    })();
  /** A rewrite held once its copy is written: `copied` resolves there, `release()` lets it swap. */
  const holdAtCopy = () => {
    let release = () => {};
    let reached = () => {};
    const copied = new Promise<void>((r) => {
      reached = r;
    });
    const held = new Promise<void>((r) => {
      release = r;
    });
    return {
      copied,
      release: () => release(),
      afterCopy: () => {
        reached();
        return held;
      },
    };
  };
  /** The events of `i` from `from` on that a query's own connection finds (not the feed's writer). */
  const queried = async (a: AnalyticsStore, from: number) => {
    const conn = await a.connect();
    try {
      const r = await conn.runAndReadAll(
        "SELECT count(*) FROM events WHERE CAST(props->>'$.i' AS INTEGER) >= $1",
        [from],
      );
      return Number(r.getRows()[0]?.[0]);
    } finally {
      conn.closeSync();
    }
  };
  /**
   * The events of `0..to` minus those of the visitors `erased` (by `i % 7`)
   * moved before 20 (one added after an erasure stays).
   */
  const left = (to: number, erased: number[]) =>
    once(0, to).filter(([i = 0]) => i >= 20 || !erased.includes(i % 7));
  const dirtyRow = async (a: AnalyticsStore) =>
    (await a.writer.runAndReadAll("SELECT seq FROM feed_state WHERE id = 3"))
      .getRows()
      .map(([x]) => Number(x));
  /**
   * A rewrite whose process dies at `faults(t, catchUp)`: 20 events moved and
   * v3 erased, then a feed that runs once and compacts (`catchUp` is that
   * feed's, for what moves into the old file during the copy). The dead
   * process's feed is stopped; `a` is the file it left.
   */
  const crashAroundSwap = async (
    faults: (
      t: ReturnType<typeof setUp>,
      catchUp: () => Promise<void>,
      a: AnalyticsStore,
    ) => AnalyticsFeedOptions["faults"],
  ) => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(20);
    await t.restart(a);
    erase(t, "v3");
    let f: ReturnType<typeof t.feed> | undefined;
    const catchUp = async () => {
      await f?.catchUp();
    };
    await t.crash(a, { faults: faults(t, catchUp, a) }, async (crashing) => {
      f = crashing;
      await crashing.runOnce();
      return crashing.compact();
    });
    return { t, a };
  };

  it("moves events during the copy (catchUp and a query see them at once), keeps them in SQLite, and holds each once after the swap", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(20);
    const hold = holdAtCopy();
    const feed = t.feed(a, { now: () => 5_000, faults: { afterCopy: hold.afterCopy } });
    await feed.runOnce();
    erase(t, "v3");
    await feed.runOnce();
    expect(feed.dirtySince()).toBe(5_000);
    const compacting = feed.compact();
    await hold.copied;
    // Acknowledged while the copy waits to be swapped in: read-your-writes does not wait for it.
    t.add(5, 20);
    await feed.catchUp();
    expect(await queried(a, 20)).toBe(5);
    // Moved into the open file, but kept in SQLite for the new file's replay.
    expect(t.outbox()).toBe(5);
    hold.release();
    const report = await compacting;
    expect(report?.bytesAfter).toBeGreaterThan(0);
    const expected = left(25, [3]);
    expect(await t.moved(a)).toEqual(expected);
    expect(await queried(a, 20)).toBe(5);
    expect(t.outbox()).toBe(0);
    expect(t.db.prepare("SELECT count(*) AS n FROM analytics_feed").get()).toEqual({ n: 0 });
    // The new file holds no removed row: it is not due again.
    expect(feed.dirtySince()).toBeUndefined();
    expect(await dirtyRow(a)).toEqual([]);
    // The feed goes on with the new file.
    t.add(2, 25);
    await feed.catchUp();
    await feed.stop();
    expect(await t.moved(a)).toEqual([...expected, [25, 1], [26, 1]]);
  });

  it("applies an erasure logged during the copy to the new file, which is then due again; the next rewrite leaves none of its bytes", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    const marker = "erased-during-copy-5e1c";
    t.db
      .prepare(
        "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES ('s1', 'pageview', ?, 900, 900, ?, '{\"i\":99}')",
      )
      .run(`https://example.com/${marker}`, marker);
    t.add(10);
    let clock = 5_000;
    const hold = holdAtCopy();
    const feed = t.feed(a, { now: () => clock, faults: { afterCopy: hold.afterCopy } });
    await feed.runOnce();
    erase(t, "v3");
    await feed.runOnce();
    const compacting = feed.compact();
    await hold.copied;
    // The copy holds the marked visitor's first event; another one is moved during the
    // copy (kept in the outbox for the replay); then the erasure, after the copy's snapshot.
    t.db
      .prepare(
        "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES ('s1', 'pageview', ?, 950, 950, ?, '{\"i\":98}')",
      )
      .run(`https://example.com/${marker}/2`, marker);
    await feed.catchUp();
    expect(await queried(a, 98)).toBe(2);
    clock = 9_000;
    erase(t, marker);
    await feed.catchUp();
    expect(await queried(a, 98)).toBe(0);
    hold.release();
    await compacting;
    expect(await queried(a, 98)).toBe(0);
    expect(await t.moved(a)).toEqual(left(10, [3]));
    // The replay deleted rows of the new file: it is dirty again, since the replay.
    expect(feed.dirtySince()).toBe(9_000);
    expect(await dirtyRow(a)).toEqual([9_000]);
    const again = holdAtCopy();
    again.release();
    expect(await feed.compact()).toBeDefined();
    await feed.stop();
    expect(feed.dirtySince()).toBeUndefined();
    a.close();
    expect(readFileSync(join(t.dir, "analytics.duckdb")).includes(marker)).toBe(false);
  });

  it("after a crash between the copy and the swap: the old file and SQLite's kept rows give every event once", async () => {
    const { t, a } = await crashAroundSwap((t, catchUp, open) => ({
      async afterCopy() {
        // Moved into the old file during the copy, then the process dies.
        t.add(5, 20);
        await catchUp();
        expect(await t.moved(open)).toEqual(left(25, [3]));
        killed();
      },
    }));
    expect(t.outbox()).toBe(5);
    a.close();
    const reopened = await t.analytics();
    expect(readdirSync(t.dir).filter((x) => x.includes("compact"))).toEqual([]);
    t.add(1, 25);
    await t.restart(reopened);
    expect(await t.moved(reopened)).toEqual(left(26, [3]));
    expect(t.outbox()).toBe(0);
  });

  it("after a crash right after the swap, before the replay: the new file replays from its own watermark, every event once", async () => {
    const { t, a } = await crashAroundSwap((t, catchUp, open) => ({
      async afterCopy() {
        t.add(5, 20);
        erase(t, "v5");
        await catchUp();
        // In the open file during the copy: the five events, v5 erased.
        expect(await t.moved(open)).toEqual(left(25, [3, 5]));
      },
      afterSwap: killed,
    }));
    // The new file is the copy: without what moved during it, and v5 not yet erased there.
    expect(await t.moved(a)).toEqual(left(20, [3]));
    expect(t.outbox()).toBe(5);
    a.close();
    const reopened = await t.analytics();
    await t.restart(reopened);
    expect(await t.moved(reopened)).toEqual(left(25, [3, 5]));
    expect(t.outbox()).toBe(0);
    expect(t.db.prepare("SELECT count(*) AS n FROM analytics_feed").get()).toEqual({ n: 0 });
  });
});

describe("the analytics feed's batches of events and the engine's answers", () => {
  it("says what a batch of events changed: an answer over earlier times is kept, one whose visit or events the batch reaches, or whose site a log entry touches, is computed again", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    const f = t.feed(a);
    const MIN = 60_000;
    const DAY = 86_400_000;
    const event = t.db.prepare(
      "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES (?, 'pageview', 'https://example.com/', ?, ?, ?, '{}')",
    );
    const add = (site: string, visitor: string, ts: number) => event.run(site, ts, ts, visitor);
    const ran: string[] = [];
    const engine = createDuckDbAnalytics({
      analytics: recordingStore(a, (st: { sql: string }) => ran.push(st.sql)),
      timeoutMs: 60_000,
      perSite: 4,
    });
    /** Visitors, visits and bounce rate of day 1 on s1, and whether its traffic statements ran. */
    const dayOne = async () => {
      ran.length = 0;
      const r = await engine.query({
        siteId: "s1",
        timeZone: "UTC",
        metrics: ["visitors", "visits", "bounce_rate"],
        dimensions: [],
        filters: [],
        period: { from: DAY, to: 2 * DAY },
        model: "first_touch",
        orderBy: [{ field: "visitors", desc: true }],
        limit: 10,
        offset: 0,
      });
      return {
        totals: r.totals.map((m) => ("value" in m ? m.value : m)),
        computed: ran.some((sql) => sql.includes("FROM visits")),
      };
    };
    add("s1", "a", 2 * DAY - 10 * MIN);
    add("s1", "b", DAY + 60 * MIN);
    await f.runOnce();
    expect(await dayOne()).toEqual({ totals: [2, 2, 100], computed: true });
    expect(await dayOne()).toEqual({ totals: [2, 2, 100], computed: false });
    // Later events of s1 (a visit of its own), and events of another site: kept.
    add("s1", "c", 2 * DAY + 40 * MIN);
    add("s2", "a", DAY + 60 * MIN);
    await f.runOnce();
    expect(await dayOne()).toEqual({ totals: [2, 2, 100], computed: false });
    // An event after day 1 that extends a's visit, which began in day 1 (20
    // minutes later): the visit has two events now, so it is no bounce.
    add("s1", "a", 2 * DAY + 10 * MIN);
    await f.runOnce();
    expect(await dayOne()).toEqual({ totals: [2, 2, 50], computed: true });
    expect(await dayOne()).toEqual({ totals: [2, 2, 50], computed: false });
    // A late event inside day 1: computed again.
    add("s1", "d", DAY + 2 * 60 * MIN);
    await f.runOnce();
    expect(await dayOne()).toEqual({ totals: [3, 3, 66.67], computed: true });
    // A payment's, a customer's links' and a stitch's entries (with an event
    // after day 1) change no event or visit: kept.
    const entry = t.db.prepare(
      "INSERT INTO analytics_feed (kind, site_id, key, ref) VALUES (?, 's1', ?, NULL)",
    );
    entry.run(1, "pay_1");
    entry.run(2, "cus_1");
    entry.run(3, "e");
    add("s1", "e", 2 * DAY + 50 * MIN);
    await f.runOnce();
    expect(await dayOne()).toEqual({ totals: [3, 3, 66.67], computed: false });
    // A log entry (b erased) may change anything: computed again.
    t.db
      .prepare("INSERT INTO analytics_feed (kind, site_id, key, ref) VALUES (5, 's1', 'b', NULL)")
      .run();
    await f.runOnce();
    expect(await dayOne()).toEqual({ totals: [2, 2, 50], computed: true });
    await f.stop();
  });
});

/**
 * 4,000 events of about 1.5 KB each (some 8 MB, two a page) in the outbox;
 * the file's pages and bytes before the feed moves them.
 */
function fillOutbox(t: ReturnType<typeof setUp>) {
  const insert = t.db.prepare(
    "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES ('s1', 'pageview', 'https://example.com/', ?, ?, 'v', ?)",
  );
  const pad = "x".repeat(1_500);
  t.db.transaction(() => {
    for (let i = 0; i < 4_000; i++) insert.run(1_000 + i, 1_000 + i, JSON.stringify({ i, pad }));
  })();
  t.db.pragma("wal_checkpoint(TRUNCATE)");
  const pages = () => t.db.pragma("page_count", { simple: true }) as number;
  return { before: { pages: pages(), bytes: statSync(t.sqlitePath).size }, pages };
}
