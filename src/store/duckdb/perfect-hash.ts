/**
 * A statement grouped by a site's dense visitor numbers (visitor-numbers.ts)
 * in a perfect hash table: a slot per possible key, no hashing.
 */
import type { DuckDBConnection } from "@duckdb/node-api";

/**
 * Group keys of up to this many bits in all (by the key columns' statistics)
 * go in a perfect table while the setting holds (DuckDB's
 * `perfect_ht_threshold`, 12 by default): a site of up to 2^20 visitors
 * (about 1M). A larger site's numbers take more bits and are hashed.
 */
export const PERFECT_HASH_BITS = 20;

/**
 * Runs `work` on `conn` with keys of up to {@link PERFECT_HASH_BITS} grouped
 * in a perfect table. Only for a statement whose groups carry no state but
 * their key (a count of distinct numbers: 2^20 slots of 5 bytes per thread),
 * or one small aggregate (a funnel's first places, first-step-places.ts: a
 * `min` of 16 bytes, whose hash table took more: the process's peak RSS 232
 * MiB in a perfect table against 279 by hash, 1M visitors over 90 days):
 * DuckDB allocates the table whole, outside its memory limit and without
 * spilling, so a group with a 32-byte state would take 64 MiB at two threads
 * (the funnel's walk took that, and the server's peak RSS rose from 739–762
 * to 802–860 MiB in `bench:first-view`). Measured at 10M events, 1M
 * visitors: the visitors with a pageview over 90 days, `count(DISTINCT vid)`
 * 250 ms, counted from the groups by number in a perfect table 57 ms.
 */
export async function withPerfectHash<T>(
  conn: DuckDBConnection,
  work: () => Promise<T>,
): Promise<T> {
  await conn.run(`SET perfect_ht_threshold = ${PERFECT_HASH_BITS}`);
  try {
    return await work();
  } finally {
    // A failed reset leaves a connection the engine closes at the query's end.
    await conn.run("RESET perfect_ht_threshold").catch(() => undefined);
  }
}
