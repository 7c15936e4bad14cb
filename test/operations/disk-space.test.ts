/**
 * Disk space (issue 30, bytes on disk per event): once the analytics feed has
 * moved acknowledged events out of SQLite's outbox into the DuckDB file, the
 * pages they took in the SQLite file go back to the file system (incremental
 * auto-vacuum, SQLITE_FREE_PAGES_KEPT of them kept), and none of the events
 * is lost on the way; a file of an older build is switched to that mode.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { expect, it } from "vitest";
import { migrate } from "../../src/store/sqlite/open-sqlite.js";
import { runAdminCli } from "../helpers/cli.js";
import { listEvents, sendEvents } from "../helpers/events.js";
import { useTempDirs } from "../helpers/temp-dirs.js";
import { useTestServer } from "../helpers/use-test-server.js";

const tempDir = useTempDirs("disk-space-");

const ctx = useTestServer({ env: { SQLITE_FREE_PAGES_KEPT: "0" } });

/** 120 batches of 5 events with 1.2 KB of properties each: about 0.8 MB in the outbox. */
const BATCHES = 120;
const PER_BATCH = 5;
const PAD = "x".repeat(1_200);

it("gives the SQLite pages of the events the feed moved back to the file system, and keeps every acknowledged event", async () => {
  const file = join(ctx.server.dir, "ingest.sqlite");
  const db = new Database(file, { readonly: true });
  try {
    const pages = () => db.pragma("page_count", { simple: true }) as number;
    const empty = pages();
    for (let b = 0; b < BATCHES; b++) {
      const res = await sendEvents(ctx.url, ctx.tenant, {
        s: ctx.siteId,
        b: Array.from({ length: PER_BATCH }, (_, k) => ({
          e: "pageview",
          u: "https://example.com/",
          p: { i: b * PER_BATCH + k, pad: PAD },
        })),
      });
      expect(res.status).toBe(204);
    }
    await ctx.server.app.analytics?.feed.catchUp();

    expect(db.prepare("SELECT count(*) FROM events").pluck().get()).toBe(0);
    // Without the vacuum the freed pages (about 200) would stay in the file for ever.
    expect(db.pragma("freelist_count", { simple: true })).toBe(0);
    expect(pages() - empty).toBeLessThan(40);
    const stored = await listEvents(ctx.url, ctx.siteId, 1_000);
    expect(stored.map((e) => e.props?.i).sort((x, y) => Number(x) - Number(y))).toEqual(
      Array.from({ length: BATCHES * PER_BATCH }, (_, i) => i),
    );
  } finally {
    db.close();
  }
});

it("`admin store migrate` switches a SQLite file of an older build to incremental auto-vacuum, its rows kept and its free pages gone", async () => {
  const file = join(tempDir(), "ingest.sqlite");
  // As an older build left it: every migration, no auto-vacuum, pages freed by deletes.
  const older = new Database(file);
  older.pragma("journal_mode = WAL");
  migrate(older);
  const insert = older.prepare(
    "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES ('s1', 'pageview', 'https://example.com/', ?, ?, 'v', ?)",
  );
  older.transaction(() => {
    for (let i = 0; i < 1_000; i++) insert.run(i, i, JSON.stringify({ i, pad: PAD }));
  })();
  older.prepare("DELETE FROM events WHERE ts >= 3").run();
  expect(older.pragma("auto_vacuum", { simple: true })).toBe(0);
  expect(older.pragma("freelist_count", { simple: true })).toBeGreaterThan(200);
  older.close();

  const out = await runAdminCli(["store", "migrate"], { STORE_URL: `sqlite:${file}` });
  expect(out.exitCode).toBe(0);
  expect(out.json).toEqual({ store: "sqlite", created: [], updated: [], dropped: [] });

  const db = new Database(file, { readonly: true });
  try {
    expect(db.pragma("auto_vacuum", { simple: true })).toBe(2);
    expect(db.pragma("freelist_count", { simple: true })).toBe(0);
    expect(db.prepare("SELECT ts FROM events ORDER BY ts").pluck().all()).toEqual([0, 1, 2]);
  } finally {
    db.close();
  }
});
