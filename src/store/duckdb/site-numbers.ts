/**
 * Site numbers: each site of the analytics file gets a number, 1, 2, 3… in
 * the order the feed first saw it (`site_numbers`), and every event and
 * visit carries its site's number (`sn`) beside the site's id. The engine
 * selects a site's rows by it, written into the statement as a literal.
 *
 * Why: DuckDB's statistics keep 8 bytes of a string, so they cannot prove
 * that a block holds one site only, and a filter on the 29-character id is
 * evaluated on every row: about 16 ms of each 90-day scan of 10M events (a
 * bare count 25 ms → 9 by the number; top pages 185–196 → 159–174 ms by raw
 * SQL). A block of one site's number has min = max, so the filter is dropped
 * for it; a block of several sites is filtered as before. A parameter in its
 * place is not folded into the blocks' statistics (15 ms), hence the literal.
 *
 * A number is never given twice within a file's lineage: rows are never
 * deleted from `site_numbers` (a site id is no personal data), the feed's
 * rebuild keeps them, and a rewrite or a backup copies the table with the
 * rest (`COPY FROM DATABASE`). New numbers are given in the feed's batch
 * transaction, with the events that need them: a crash loses both or neither.
 */
import type { DuckDBConnection } from "@duckdb/node-api";
import { hasColumn, inTransaction, markDueForRewrite } from "./file-upgrades.js";

/** The numbers' table. */
export const SITE_NUMBERS_SCHEMA = `
CREATE TABLE IF NOT EXISTS site_numbers (
  site_id VARCHAR NOT NULL,
  sn INTEGER NOT NULL
);
`;

/**
 * The number a site without one stands for in a statement: no row carries
 * it, so a site with no event stored yet selects none (its payments, keyed
 * by the site's id, are read as before).
 */
export const NO_SITE_NUMBER = -1;

/**
 * Gives the sites of the staged events (`temp.event_stage`) that have no
 * number yet the next ones, in the order of their ids. Runs in the caller's
 * transaction (the feed's batch).
 */
export async function numberStagedSites(conn: DuckDBConnection): Promise<void> {
  await conn.run(`INSERT INTO site_numbers
    SELECT s.site_id,
      ((SELECT coalesce(max(sn), 0) FROM site_numbers) + row_number() OVER (ORDER BY s.site_id))::INTEGER
    FROM (SELECT DISTINCT site_id FROM temp.event_stage) s
    ANTI JOIN site_numbers n ON n.site_id = s.site_id`);
}

/** The site's number in the file, {@link NO_SITE_NUMBER} when it has none. */
export async function siteNumberOf(conn: DuckDBConnection, siteId: string): Promise<number> {
  const rows = (
    await conn.runAndReadAll("SELECT sn FROM site_numbers WHERE site_id = $1", [siteId])
  ).getRows();
  const sn = rows[0]?.[0];
  return typeof sn === "number" && Number.isInteger(sn) ? sn : NO_SITE_NUMBER;
}

/**
 * The SQL test that a row of `alias` (events or visits) is of the site
 * numbered `sn`: the number as a literal (see above), checked to be one.
 */
export function ofSite(alias: string, sn: number): string {
  if (!Number.isSafeInteger(sn)) throw new Error(`not a site number: ${sn}`);
  return `${alias ? `${alias}.` : ""}sn = ${sn}`;
}

/**
 * Brings a file written before the site numbers to them, at open, in one
 * transaction: every site numbered, the one with the most events first; the
 * column added to `events` and `visits` with that first number as its value
 * (DuckDB stores a column added with a constant default as that constant:
 * 10M events in 87 ms, no byte more on disk), then the other sites' rows
 * updated, and the file marked due for a rewrite since `now` when any was
 * (an update leaves the old values' blocks until then). Returns whether it ran.
 */
export async function ensureSiteNumbers(
  conn: DuckDBConnection,
  now: number = Date.now(),
): Promise<boolean> {
  if (await hasColumn(conn, "events", "sn")) {
    await conn.run(SITE_NUMBERS_SCHEMA);
    return false;
  }
  await inTransaction(conn, async () => {
    await conn.run("DROP TABLE IF EXISTS site_numbers");
    await conn.run(SITE_NUMBERS_SCHEMA);
    await conn.run(`INSERT INTO site_numbers
      SELECT site_id, row_number() OVER (ORDER BY count(*) DESC, site_id)::INTEGER
      FROM events GROUP BY site_id`);
    const tables = (
      await conn.runAndReadAll(
        `SELECT table_name FROM duckdb_tables()
         WHERE schema_name = 'main' AND table_name IN ('events', 'visits')`,
      )
    ).getRows();
    let updated = 0;
    for (const [table] of tables) {
      const t = String(table);
      // NOT NULL and no default before the update: DuckDB refuses the
      // constraint over a column with outstanding updates in the transaction.
      await conn.run(`ALTER TABLE ${t} ADD COLUMN sn INTEGER DEFAULT 1`);
      await conn.run(`ALTER TABLE ${t} ALTER COLUMN sn SET NOT NULL`);
      await conn.run(`ALTER TABLE ${t} ALTER COLUMN sn DROP DEFAULT`);
      const done = await conn.runAndReadAll(`UPDATE ${t} SET sn = n.sn FROM site_numbers n
        WHERE n.site_id = ${t}.site_id AND n.sn <> 1`);
      updated += Number(done.getRows()[0]?.[0] ?? 0);
    }
    if (updated > 0) await markDueForRewrite(conn, now);
  });
  return true;
}

/** A plan with its site's number in the file (the engine's statements select rows by it). */
export type WithSiteNumber<P> = P & { sn: number };
