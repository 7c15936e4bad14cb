/**
 * Analytics files as an older build left them, for the upgrades a file gets
 * when it opens (src/store/duckdb/site-numbers.ts, visitor-numbers.ts…).
 */
import { DuckDBInstance } from "@duckdb/node-api";
import { expect } from "vitest";
import type { AnalyticsStore } from "../../src/store/duckdb/analytics-store.js";

/**
 * Takes the closed analytics file at `path` back to an older schema: runs
 * `sql` on it with DuckDB alone (no upgrade runs), then closes it.
 */
export async function rewindAnalyticsFile(path: string, sql: string): Promise<void> {
  const old = await DuckDBInstance.create(path);
  try {
    const c = await old.connect();
    try {
      await c.run(sql);
    } finally {
      c.closeSync();
    }
  } finally {
    old.closeSync();
  }
}

/** Expects the store's file marked due for a rewrite (feed_state row 3) at a time from `since` to now. */
export async function expectDueForRewriteSince(
  store: AnalyticsStore,
  since: number,
): Promise<void> {
  const rows = (
    await store.writer.runAndReadAll("SELECT seq FROM feed_state WHERE id = 3")
  ).getRowsJS();
  expect(rows).toHaveLength(1);
  const due = Number(rows[0]?.[0]);
  expect(due).toBeGreaterThanOrEqual(since);
  expect(due).toBeLessThanOrEqual(Date.now());
}
