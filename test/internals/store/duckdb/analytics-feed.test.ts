/**
 * The feed SQLite → DuckDB: exactly once across a crash at any edge of a
 * batch (before DuckDB's commit, after it before SQLite's delete, during
 * that delete), the events it moved deleted from SQLite's outbox, ids never
 * given twice, erasure's and retention's entries applied in log order, and
 * a new DuckDB file filled from SQLite, and the pages of what it moved
 * given back to the file system in short steps.
 */
import { rmSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { createAnalyticsFeed } from "../../../../src/store/duckdb/analytics-feed.js";
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
  return { dir, sqlitePath, db, add, analytics, moved, initialize, outbox };
}

const once = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, k) => [from + k, 1]);

describe("the analytics feed", () => {
  it("applies a batch exactly once when the process dies after DuckDB's commit, before the outbox is deleted", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(30);
    const crashing = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 1000,
      batchMax: 10,
      faults: {
        afterCommit() {
          throw new Error("killed");
        },
      },
    });
    await expect(crashing.runOnce()).rejects.toThrow("killed");
    await crashing.stop();
    // The outbox still holds the batch DuckDB committed (and events have no log
    // entry: migration 23); the restarted feed skips and deletes them by the id DuckDB recorded.
    expect(t.db.prepare("SELECT count(*) AS n FROM analytics_feed").get()).toEqual({ n: 0 });
    expect(t.outbox()).toBe(30);
    expect(await t.moved(a)).toEqual(once(0, 10));
    const restarted = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 1000,
      batchMax: 10,
    });
    await restarted.runOnce();
    await restarted.stop();
    expect(await t.moved(a)).toEqual(once(0, 30));
    expect(t.db.prepare("SELECT count(*) AS n FROM analytics_feed").get()).toEqual({ n: 0 });
    expect(t.outbox()).toBe(0);
  });

  it("finishes a delete of the outbox that died between two slices, and applies nothing twice", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(2_500);
    const crashing = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 1000,
      faults: {
        duringDelete() {
          throw new Error("killed");
        },
      },
    });
    await expect(crashing.runOnce()).rejects.toThrow("killed");
    await crashing.stop();
    // One slice of 1,000 deleted; DuckDB committed all of them.
    expect(t.outbox()).toBe(1_500);
    expect(await t.moved(a)).toEqual(once(0, 2_500));
    const restarted = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 1000,
    });
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
    const crashing = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 1000,
      batchMax: 10,
      faults: {
        beforeCommit() {
          batches += 1;
          if (batches === 2) throw new Error("killed");
        },
      },
    });
    await expect(crashing.runOnce()).rejects.toThrow("killed");
    await crashing.stop();
    expect(await t.moved(a)).toEqual(once(0, 10));
    const restarted = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 1000,
      batchMax: 10,
    });
    await restarted.runOnce();
    await restarted.stop();
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
    const crashing = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 1000,
      freePagesKept: 0,
      faults: {
        duringReclaim() {
          throw new Error("killed");
        },
      },
    });
    await expect(crashing.runOnce()).rejects.toThrow("killed");
    await crashing.stop();
    expect(t.outbox()).toBe(0);
    expect(t.db.pragma("freelist_count", { simple: true })).toBeGreaterThan(before.pages / 2);
    const restarted = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 1000,
      freePagesKept: 0,
    });
    await restarted.runOnce();
    await restarted.stop();
    expect(t.db.pragma("freelist_count", { simple: true })).toBe(0);
    expect(pages()).toBeLessThan(before.pages / 4);
    expect(await t.moved(a)).toEqual(once(0, 4_000));
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
