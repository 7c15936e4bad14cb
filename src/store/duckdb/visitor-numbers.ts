/**
 * Dense visitor numbers: each visitor of a site gets a number, 0, 1, 2… in
 * the order the feed first saw it (`visitor_numbers`), and every event and
 * visit carries its visitor's number (`dv`) beside the 64-bit key (`vid`).
 * The engine counts distinct visitors over them with a bitmap of one bit per
 * number (`bitstring_agg`) instead of a hash table of keys: 1.7× to 3.5×
 * faster on the counts that dominate the dashboard (docs/performance.md,
 * "Dense visitor numbers").
 *
 * Both feeds append events through the stage below, so the numbers are given
 * in the batch's transaction, with the events: a crash loses both or neither.
 * A number stays its visitor's while any of its events remains; a visitor
 * whose events were all erased or pruned loses its row (then the file's
 * rewrite drops its bytes), and comes back, if ever, under a new number.
 */
import type { DuckDBAppender, DuckDBConnection } from "@duckdb/node-api";
import { hasColumn, inTransaction, markDueForRewrite } from "./file-upgrades.js";
import { numberStagedSites } from "./site-numbers.js";

/** The numbers' table. */
export const VISITOR_NUMBERS_SCHEMA = `
CREATE TABLE IF NOT EXISTS visitor_numbers (
  site_id VARCHAR NOT NULL,
  vid BIGINT NOT NULL,
  dv INTEGER NOT NULL
);
`;

/**
 * Opens the stage of a batch's events: a temporary table of the events'
 * columns but the numbers (the visitor's and the site's), and an appender into it ({@link moveStagedEvents}
 * then numbers and moves them).
 */
export async function openEventStage(conn: DuckDBConnection): Promise<DuckDBAppender> {
  await conn.run(
    "CREATE OR REPLACE TEMP TABLE event_stage AS SELECT * EXCLUDE (dv, sn) FROM events LIMIT 0",
  );
  return conn.createAppender("event_stage", "main", "temp");
}

/**
 * Gives the staged events' new sites their numbers (site-numbers.ts) and
 * their new visitors the next numbers of their sites (in
 * the order of their first staged event), and appends the staged events to
 * `events` with their visitors' numbers, in the order they were staged. Runs
 * in the caller's transaction; the appender must be closed.
 *
 * One scan of `visitor_numbers` finds the batch's known visitors (the stage
 * is the join's small side); the sites' highest numbers come from a second,
 * of two columns. Measured at 1M numbered visitors (`bench:visitor-numbers`,
 * half of each batch new): about 32 ms a batch more than a plain copy of the
 * stage, whatever the batch's size; the scans cost about 8× more at 10M
 * (docs/performance.md, "Dense visitor numbers").
 */
export async function moveStagedEvents(conn: DuckDBConnection): Promise<void> {
  await numberStagedSites(conn);
  await conn.run(`CREATE OR REPLACE TEMP TABLE stage_numbers AS
    SELECT n.site_id, n.vid, n.dv FROM visitor_numbers n
    SEMI JOIN (SELECT DISTINCT site_id, vid FROM temp.event_stage) s ON n.site_id = s.site_id AND n.vid = s.vid`);
  await conn.run(`CREATE OR REPLACE TEMP TABLE stage_new AS
    SELECT s.site_id, s.vid,
      (coalesce(t.top, -1) + row_number() OVER (PARTITION BY s.site_id ORDER BY s.first))::INTEGER AS dv
    FROM (SELECT site_id, vid, min(seq) AS first FROM temp.event_stage GROUP BY site_id, vid) s
    ANTI JOIN temp.stage_numbers k ON k.site_id = s.site_id AND k.vid = s.vid
    LEFT JOIN (
      SELECT site_id, max(dv) AS top FROM visitor_numbers
      WHERE site_id IN (SELECT DISTINCT site_id FROM temp.event_stage) GROUP BY site_id
    ) t ON t.site_id = s.site_id`);
  await conn.run("INSERT INTO visitor_numbers SELECT site_id, vid, dv FROM temp.stage_new");
  await conn.run(`INSERT INTO events BY NAME
    SELECT e.*, n.dv, s.sn FROM temp.event_stage e
    JOIN (SELECT * FROM temp.stage_numbers UNION ALL SELECT * FROM temp.stage_new) n
      ON n.site_id = e.site_id AND n.vid = e.vid
    JOIN site_numbers s ON s.site_id = e.site_id
    ORDER BY e.seq`);
  await conn.run(
    "DROP TABLE temp.event_stage; DROP TABLE temp.stage_numbers; DROP TABLE temp.stage_new",
  );
}

/** Events a rebuild stages before it numbers, moves and commits them. */
export const REBUILD_STAGE_ROWS = 50_000;

/** A rebuild's stage of events (see {@link openRebuildStage}). */
export interface RebuildStage {
  /** The appender of the slice being staged: a new one after each commit. */
  readonly appender: DuckDBAppender;
  /** Counts one more staged event; a slice's worth are numbered, moved and committed. */
  added(): Promise<void>;
  /** Numbers, moves and commits the last slice. */
  end(): Promise<void>;
  /** Rolls the slice being staged back (the slices committed stay). */
  abort(): Promise<void>;
}

/**
 * The stage of a rebuild's events: staged, numbered and moved into `events`
 * a slice at a time, each slice in a DuckDB transaction of its own. In one
 * transaction DuckDB keeps every replaced stage until the commit (a rollback
 * needs them): a rebuild of 10M events in one ran out of its 512MB
 * (`bench:bytes` at 10M events); committed, each slice's stage is let go.
 * The caller deletes the file's watermark in the rebuild's first step and
 * sets it in its last, so a crash between them leaves a file without one,
 * which the next start rebuilds again; reads wait for the whole rebuild (the
 * feed's catch-up runs after it).
 */
export async function openRebuildStage(
  conn: DuckDBConnection,
  sliceRows = REBUILD_STAGE_ROWS,
  /** After each slice's commit (tests stand for a crash there). */
  afterSlice?: () => void,
): Promise<RebuildStage> {
  let appender: DuckDBAppender;
  let staged = 0;
  const open = async () => {
    await conn.run("BEGIN TRANSACTION");
    appender = await openEventStage(conn);
    staged = 0;
  };
  const commit = async () => {
    appender.closeSync();
    await moveStagedEvents(conn);
    await conn.run("COMMIT");
  };
  await open();
  return {
    get appender() {
      return appender;
    },
    async added() {
      if (++staged < sliceRows) return;
      await commit();
      afterSlice?.();
      await open();
    },
    end: commit,
    async abort() {
      try {
        appender.closeSync();
      } catch {
        // Already closed (its slice was being moved).
      }
      await conn.run("ROLLBACK").catch(() => {});
    },
  };
}

/**
 * Drops the numbers of `visitors` that have no event left (after an erasure
 * or a deletion removed some): their keys leave the file at its next rewrite.
 */
export async function forgetVisitorNumbers(
  conn: DuckDBConnection,
  visitors: Iterable<{ siteId: string; vid: bigint }>,
): Promise<void> {
  const list = [...visitors];
  if (list.length === 0) return;
  await conn.run("CREATE OR REPLACE TEMP TABLE number_forget (site_id VARCHAR, vid BIGINT)");
  const ap = await conn.createAppender("number_forget", "main", "temp");
  try {
    for (const v of list) {
      ap.appendVarchar(v.siteId);
      ap.appendBigInt(v.vid);
      ap.endRow();
    }
  } finally {
    ap.closeSync();
  }
  await conn.run(`DELETE FROM visitor_numbers USING temp.number_forget f
    WHERE visitor_numbers.site_id = f.site_id AND visitor_numbers.vid = f.vid
      AND NOT EXISTS (SELECT 1 FROM events e WHERE e.site_id = f.site_id AND e.vid = f.vid)`);
  await conn.run("DROP TABLE temp.number_forget");
}

/** Drops the numbers of the site's visitors that have no event left (after a pruning). */
export async function forgetSiteVisitorNumbers(
  conn: DuckDBConnection,
  siteId: string,
): Promise<void> {
  await conn.run(
    `DELETE FROM visitor_numbers WHERE site_id = $1
       AND vid NOT IN (SELECT vid FROM events WHERE site_id = $1)`,
    [siteId],
  );
}

/**
 * Brings a file written before the numbers to them, at open, in one
 * transaction: every visitor numbered in the order of its first event, the
 * events copied into a table with the numbers (nearly in their order, which
 * keeps the time ranges of the row groups narrow: a join keeps its probe
 * side's order within each thread's chunks, 18 breaks in 10M rows measured,
 * where a sort of every column would cost far more), and the visits dropped for
 * `ensureVisitsTable` to derive again with them; the file marked due for a
 * rewrite since `now`. At 10M events: 61 s with the visits, the file 389 MB
 * → 800 MB until rewritten (399 MB). Returns whether it ran.
 */
export async function ensureVisitorNumbers(
  conn: DuckDBConnection,
  eventsSchema: string,
  now: number = Date.now(),
): Promise<boolean> {
  if (await hasColumn(conn, "events", "dv")) {
    await conn.run(VISITOR_NUMBERS_SCHEMA);
    return false;
  }
  await inTransaction(conn, async () => {
    await conn.run("DROP TABLE IF EXISTS visitor_numbers");
    await conn.run(VISITOR_NUMBERS_SCHEMA);
    await conn.run(`INSERT INTO visitor_numbers
      SELECT site_id, vid, (row_number() OVER (PARTITION BY site_id ORDER BY min(seq)) - 1)::INTEGER
      FROM events GROUP BY site_id, vid`);
    await conn.run("ALTER TABLE events RENAME TO events_before_numbers");
    await conn.run(eventsSchema);
    await conn.run(`INSERT INTO events BY NAME
      SELECT e.*, n.dv FROM events_before_numbers e
      JOIN visitor_numbers n ON n.site_id = e.site_id AND n.vid = e.vid`);
    await conn.run("DROP TABLE events_before_numbers");
    await conn.run("DROP TABLE IF EXISTS visits");
    // The old table's blocks stay in the file (twice its size) until it is
    // rewritten: noted as the feed notes removals, so it is rewritten when due.
    await markDueForRewrite(conn, now);
  });
  return true;
}
