/**
 * Disk space (issue 30, bytes on disk per event): once the analytics feed has
 * moved acknowledged events out of SQLite's outbox into the DuckDB file, the
 * pages they took in the SQLite file go back to the file system (incremental
 * auto-vacuum, SQLITE_FREE_PAGES_KEPT of them kept), and none of the events
 * is lost on the way.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { expect, it } from "vitest";
import { listEvents, sendEvents } from "../helpers/events.js";
import { useTestServer } from "../helpers/use-test-server.js";

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
