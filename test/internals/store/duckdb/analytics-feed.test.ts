/**
 * The feed SQLite → DuckDB: exactly once across a crash at either edge of a
 * batch, converging on SQLite's state when rowids are reused after a delete,
 * and a deleted DuckDB file rebuilt from SQLite.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createAnalyticsFeed } from "../../../../src/store/duckdb/analytics-feed.js";
import {
  type AnalyticsStore,
  openAnalyticsStore,
} from "../../../../src/store/duckdb/analytics-store.js";
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
  return { dir, sqlitePath, db, add, analytics, moved, initialize };
}

const once = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, k) => [from + k, 1]);

describe("the analytics feed", () => {
  it("applies a batch exactly once when the process dies after DuckDB's commit, before the log is trimmed", async () => {
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
    // The log still holds the batch DuckDB committed; the restarted feed skips it by the watermark.
    expect(t.db.prepare("SELECT count(*) AS n FROM analytics_feed").get()).toEqual({ n: 30 });
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
  });

  it("catchUp applies every entry committed before the call, over several batches, then resolves", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    // 25 log entries, 10 per batch: three batches before catchUp may resolve. No polling loop.
    t.add(25);
    const feed = createAnalyticsFeed({
      sqlitePath: t.sqlitePath,
      analytics: a,
      intervalMs: 60_000,
      batchMax: 10,
    });
    await feed.catchUp();
    expect(feed.watermark()).toBe(25);
    expect(await t.moved(a)).toEqual(once(0, 25));
    // Nothing written since: it resolves at once, and applies nothing.
    await feed.catchUp();
    expect(feed.watermark()).toBe(25);
    t.add(3, 25);
    await feed.catchUp();
    expect(await t.moved(a)).toEqual(once(0, 28));
    await feed.stop();
  });

  it("converges on SQLite's rows when a deleted event's rowid is reused", async () => {
    const t = setUp();
    t.add(5);
    const a = await t.analytics();
    const feed = createAnalyticsFeed({ sqlitePath: t.sqlitePath, analytics: a, intervalMs: 1000 });
    await feed.runOnce();
    // The last rowid deleted, then taken again by the next insert (no AUTOINCREMENT on events).
    t.db.prepare("DELETE FROM events WHERE id = (SELECT max(id) FROM events)").run();
    t.add(1, 100);
    expect(t.db.prepare("SELECT max(id) AS id FROM events").get()).toEqual({ id: 5 });
    await feed.runOnce();
    await feed.stop();
    expect(await t.moved(a)).toEqual([...once(0, 4), [100, 1]]);
  });

  it("rebuilds a deleted analytics file from SQLite, then follows the log", async () => {
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
    expect(await t.moved(a)).toEqual(once(0, 17));
  });

  it("rebuilds an analytics file that is ahead of SQLite's log (a restored backup)", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.initialize(a);
    t.add(10);
    const feed = createAnalyticsFeed({ sqlitePath: t.sqlitePath, analytics: a, intervalMs: 1000 });
    expect(await feed.runOnce()).toBe(10);
    await feed.stop();
    // An older database in its place: its log ends before the file's watermark.
    t.db.close();
    for (const f of ["", "-wal", "-shm"]) rmSync(`${t.sqlitePath}${f}`, { force: true });
    const older = openSqlite(t.sqlitePath);
    opened.push(older);
    const insert = older.prepare(
      "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES ('s1', 'pageview', 'https://example.com/', 1, 1, 'v', ?)",
    );
    for (const i of [100, 101, 102]) insert.run(JSON.stringify({ i }));
    const again = createAnalyticsFeed({ sqlitePath: t.sqlitePath, analytics: a, intervalMs: 1000 });
    expect(await again.runOnce()).toBe(3);
    await again.stop();
    expect(await t.moved(a)).toEqual(once(100, 103));
  });
});
