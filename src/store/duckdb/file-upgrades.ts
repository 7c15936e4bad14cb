/**
 * What the upgrades of an analytics file share (run at open, before the feed
 * or a query uses it: site-numbers.ts, visitor-numbers.ts,
 * visits-maintenance.ts): whether a column is there yet, one transaction
 * for the whole upgrade (a crash leaves the old file whole, and the next open
 * upgrades it again), and the mark that the file is due for a rewrite.
 */
import type { DuckDBConnection } from "@duckdb/node-api";

/** Whether `table` of the main schema has `column`. */
export async function hasColumn(
  conn: DuckDBConnection,
  table: string,
  column: string,
): Promise<boolean> {
  const r = await conn.runAndReadAll(
    `SELECT count(*) FROM information_schema.columns
     WHERE table_schema = 'main' AND table_name = $1 AND column_name = $2`,
    [table, column],
  );
  return Number(r.getRows()[0]?.[0]) > 0;
}

/** Runs `work` in one transaction on `conn`: committed whole, or rolled back and rethrown. */
export async function inTransaction<T>(conn: DuckDBConnection, work: () => Promise<T>): Promise<T> {
  await conn.run("BEGIN TRANSACTION");
  try {
    const out = await work();
    await conn.run("COMMIT");
    return out;
  } catch (err) {
    await conn.run("ROLLBACK").catch(() => {});
    throw err;
  }
}

/**
 * Marks the file due for a rewrite since `at` (feed_state row 3, unless an
 * earlier mark is there): rows removed or replaced leave their old blocks in
 * the file until it is rewritten (analytics-feed.ts, the running rewrite).
 * In the caller's transaction, so a crash does not forget it.
 */
export async function markDueForRewrite(conn: DuckDBConnection, at: number): Promise<void> {
  await conn.run("INSERT INTO feed_state VALUES (3, $1) ON CONFLICT (id) DO NOTHING", [BigInt(at)]);
}
