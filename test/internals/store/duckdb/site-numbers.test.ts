/**
 * Site numbers (site-numbers.ts): given in the feed's batch to the sites it
 * first sees, carried by every event and visit, never given twice; a file
 * written before them is numbered when it opens.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AnalyticsStore,
  openAnalyticsStore,
} from "../../../../src/store/duckdb/analytics-store.js";
import { NO_SITE_NUMBER, ofSite, siteNumberOf } from "../../../../src/store/duckdb/site-numbers.js";
import { moveStagedEvents, openEventStage } from "../../../../src/store/duckdb/visitor-numbers.js";
import { rebuildVisits } from "../../../../src/store/duckdb/visits-maintenance.js";
import {
  expectDueForRewriteSince,
  rewindAnalyticsFile,
} from "../../../helpers/older-analytics-file.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Stages events `[seq, site, visitor]` (one minute apart) and moves them, as a feed's batch does. */
async function feed(store: AnalyticsStore, events: [number, string, number][]): Promise<void> {
  const w = store.writer;
  (await openEventStage(w)).closeSync();
  await w.run(`INSERT INTO temp.event_stage BY NAME
    SELECT seq, site AS site_id, seq * 60000 AS ts, vid, 'pageview' AS name, '/' AS page,
      'https://example.com/' AS url, seq * 60000 AS received_at, 'v' || vid AS visitor_id
    FROM (VALUES ${events.map(([seq, site, vid]) => `(${seq}, '${site}', ${vid})`).join(", ")}) t(seq, site, vid)`);
  await moveStagedEvents(w);
}

const rowsOf = async (store: AnalyticsStore, sql: string) =>
  (await store.writer.runAndReadAll(sql)).getRowsJS();

describe("site numbers", () => {
  it("are given once per site, in the order of the batch that first brings it, and carried by its events and visits", async () => {
    const store = await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" });
    try {
      await feed(store, [
        [1, "site_b", 1],
        [2, "site_a", 2],
      ]);
      await feed(store, [
        [3, "site_c", 3],
        [4, "site_a", 4],
      ]);
      expect(await rowsOf(store, "SELECT site_id, sn FROM site_numbers ORDER BY sn")).toEqual([
        ["site_a", 1],
        ["site_b", 2],
        ["site_c", 3],
      ]);
      expect(await rowsOf(store, "SELECT seq, site_id, sn FROM events ORDER BY seq")).toEqual([
        [1n, "site_b", 2],
        [2n, "site_a", 1],
        [3n, "site_c", 3],
        [4n, "site_a", 1],
      ]);
      await rebuildVisits(store.writer);
      expect(
        await rowsOf(store, "SELECT DISTINCT site_id, sn FROM visits ORDER BY site_id"),
      ).toEqual([
        ["site_a", 1],
        ["site_b", 2],
        ["site_c", 3],
      ]);
      const conn = await store.connect();
      try {
        expect(await siteNumberOf(conn, "site_c")).toBe(3);
        expect(await siteNumberOf(conn, "site_new")).toBe(NO_SITE_NUMBER);
      } finally {
        conn.closeSync();
      }
      // A site's events all gone (an erasure, a pruning): its number stays its own.
      await store.writer.run("DELETE FROM events WHERE site_id = 'site_c'");
      await feed(store, [[5, "site_d", 5]]);
      expect(await rowsOf(store, "SELECT site_id, sn FROM site_numbers ORDER BY sn")).toEqual([
        ["site_a", 1],
        ["site_b", 2],
        ["site_c", 3],
        ["site_d", 4],
      ]);
    } finally {
      store.close();
    }
  });

  it("are written into a statement only as integers", () => {
    expect(ofSite("e", 7)).toBe("e.sn = 7");
    expect(ofSite("", NO_SITE_NUMBER)).toBe("sn = -1");
    expect(() => ofSite("e", 1.5)).toThrow("not a site number: 1.5");
    expect(() => ofSite("e", Number.NaN)).toThrow("not a site number: NaN");
  });

  it("number a file written before them when it opens, the site with the most events first, and mark it due for a rewrite", async () => {
    const dir = mkdtempSync(join(tmpdir(), "site-numbers-"));
    dirs.push(dir);
    const path = join(dir, "analytics.duckdb");
    const store = await openAnalyticsStore({ path, threads: 1, memoryLimit: "256MB" });
    await feed(store, [
      [1, "s1", 1],
      [2, "s2", 2],
      [3, "s2", 3],
      [4, "s3", 4],
    ]);
    await rebuildVisits(store.writer);
    store.close();
    // The schema before the site numbers.
    await rewindAnalyticsFile(
      path,
      `ALTER TABLE events DROP COLUMN sn; ALTER TABLE visits DROP COLUMN sn;
       DROP TABLE site_numbers; DELETE FROM feed_state`,
    );
    const before = Date.now();
    const reopened = await openAnalyticsStore({ path, threads: 1, memoryLimit: "256MB" });
    try {
      expect(await rowsOf(reopened, "SELECT site_id, sn FROM site_numbers ORDER BY sn")).toEqual([
        ["s2", 1],
        ["s1", 2],
        ["s3", 3],
      ]);
      expect(await rowsOf(reopened, "SELECT seq, sn FROM events ORDER BY seq")).toEqual([
        [1n, 2],
        [2n, 1],
        [3n, 1],
        [4n, 3],
      ]);
      expect(
        await rowsOf(reopened, "SELECT site_id, sn FROM visits ORDER BY site_id, vid"),
      ).toEqual([
        ["s1", 2],
        ["s2", 1],
        ["s2", 1],
        ["s3", 3],
      ]);
      // No default left behind: a row without its site's number is refused.
      await expect(
        reopened.writer.run("INSERT INTO events BY NAME SELECT * EXCLUDE (sn) FROM events LIMIT 1"),
      ).rejects.toThrow("NOT NULL constraint failed: events.sn");
      await expectDueForRewriteSince(reopened, before);
      // The next site seen gets the next number.
      await feed(reopened, [[5, "s4", 5]]);
      expect(await rowsOf(reopened, "SELECT sn FROM site_numbers WHERE site_id = 's4'")).toEqual([
        [4],
      ]);
    } finally {
      reopened.close();
    }
  });
});
