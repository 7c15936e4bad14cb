/**
 * The `visits` table of the analytics store: every visit (a visitor's run of
 * events with no gap over 30 minutes, src/domain/analytics/visits.ts) with
 * its start, end, counts and touch, derived from the `events` table once
 * instead of inside every query. The rule is written here once, as SQL
 * ({@link VISITS_SQL}), and used two ways:
 * - {@link rebuildVisits} derives every visit after a bulk load;
 * - {@link refreshVisits} re-derives, per batch, the visits of the visitors
 *   the batch touched (events appended, late ones included, or deleted), from
 *   the first of their visits that the change can reach.
 * Both run on the caller's connection inside its transaction (the feed's
 * batch), so the visits commit or roll back with the events that make them.
 */
import { rmSync } from "node:fs";
import type { DuckDBConnection } from "@duckdb/node-api";
import { NONE_VALUE } from "../../domain/analytics/query-plan.js";
import { VISIT_GAP_MS } from "../../domain/analytics/visits.js";
import { inTransaction, markDueForRewrite } from "./file-upgrades.js";

/**
 * The table (`v_counted`: the events the `events` metric counts, those not
 * named `$…`; `v_converted`: whether one is a custom event). A visitor's visits never overlap (more than 30 minutes lie
 * between two), so an event's visit is the one of its site and visitor whose
 * [v_start, v_end] holds its time: the engine joins on that.
 *
 * A value the visit lacks (no source, no campaign…) is stored as the
 * queries' `(none)` (NONE_VALUE), not NULL: every column is then free of
 * NULLs, which keeps DuckDB's dictionary encoding through scans and groups
 * (the distinct sources of 5M visits, 80 ms with NULLs → 5 without; sources
 * grouped with their visitors' bitmaps, 110 → 55: raw SQL at 10M events).
 * The queries read `coalesce(v_source, '(none)')` as before, so an answer is
 * the same either way; a file written with NULLs is derived again at open.
 */
export const VISITS_SCHEMA = `
CREATE TABLE IF NOT EXISTS visits (
  site_id VARCHAR NOT NULL,
  vid BIGINT NOT NULL,
  v_start BIGINT NOT NULL,
  v_end BIGINT NOT NULL,
  v_events BIGINT NOT NULL,
  v_pageviews BIGINT NOT NULL,
  v_seconds DOUBLE NOT NULL,
  v_counted BIGINT NOT NULL,
  v_converted BOOLEAN NOT NULL,
  v_channel VARCHAR NOT NULL,
  v_source VARCHAR NOT NULL,
  v_medium VARCHAR NOT NULL,
  v_campaign VARCHAR NOT NULL,
  v_term VARCHAR NOT NULL,
  v_content VARCHAR NOT NULL,
  v_referrer VARCHAR NOT NULL,
  v_landing_page VARCHAR NOT NULL,
  v_exit_page VARCHAR NOT NULL,
  v_country VARCHAR NOT NULL,
  v_device VARCHAR NOT NULL,
  v_browser VARCHAR NOT NULL,
  v_os VARCHAR NOT NULL,
  -- The visitor's dense number (visitor-numbers.ts).
  dv INTEGER NOT NULL,
  -- The site's number (site-numbers.ts).
  sn INTEGER NOT NULL
);
`;

/** The columns of `events` a visit is derived from. */
const VISIT_INPUT = [
  "seq",
  "site_id",
  "ts",
  "vid",
  "name",
  "page",
  "referrer",
  "channel",
  "source",
  "medium",
  "campaign",
  "term",
  "content",
  "country",
  "device",
  "browser",
  "os",
  "dv",
  "sn",
];

/**
 * The visits of the events `src` yields (rows of `events`, any subset that
 * holds whole visits), in the table's column order. Events of equal time keep
 * the order SQLite acknowledged them (`seq`); a visit's touch is its first
 * event's values, absent ones included (arg_min_null); `$identify` is no event here.
 */
export function visitsSql(src: string): string {
  return `
  WITH ev AS (SELECT ${VISIT_INPUT.join(", ")} FROM (${src}) WHERE name <> '$identify'),
  marked AS (
    SELECT *, CASE WHEN ts - lag(ts) OVER (PARTITION BY site_id, vid ORDER BY ts, seq) <= ${VISIT_GAP_MS} THEN 0 ELSE 1 END AS starts
    FROM ev
  ),
  numbered AS (
    SELECT *, sum(starts) OVER (PARTITION BY site_id, vid ORDER BY ts, seq ROWS UNBOUNDED PRECEDING) AS vn FROM marked
  )
  SELECT site_id, vid,
    min(ts) AS v_start,
    max(ts) AS v_end,
    count(*) AS v_events,
    count(*) FILTER (WHERE name = 'pageview') AS v_pageviews,
    (max(ts) - min(ts)) / 1000.0 AS v_seconds,
    count(*) FILTER (WHERE NOT starts_with(name, '$')) AS v_counted,
    bool_or(name <> 'pageview' AND NOT starts_with(name, '$')) AS v_converted,
    coalesce(arg_min_null(channel, (ts, seq)), 'Direct') AS v_channel,
    coalesce(arg_min_null(source, (ts, seq)), '${NONE_VALUE}') AS v_source,
    coalesce(arg_min_null(medium, (ts, seq)), '${NONE_VALUE}') AS v_medium,
    coalesce(arg_min_null(campaign, (ts, seq)), '${NONE_VALUE}') AS v_campaign,
    coalesce(arg_min_null(term, (ts, seq)), '${NONE_VALUE}') AS v_term,
    coalesce(arg_min_null(content, (ts, seq)), '${NONE_VALUE}') AS v_content,
    coalesce(arg_min_null(referrer, (ts, seq)), '${NONE_VALUE}') AS v_referrer,
    coalesce(arg_min(page, (ts, seq)) FILTER (WHERE name = 'pageview'), arg_min(page, (ts, seq))) AS v_landing_page,
    coalesce(arg_max(page, (ts, seq)) FILTER (WHERE name = 'pageview'), arg_max(page, (ts, seq))) AS v_exit_page,
    coalesce(arg_min_null(country, (ts, seq)), '${NONE_VALUE}') AS v_country,
    coalesce(arg_min_null(device, (ts, seq)), '${NONE_VALUE}') AS v_device,
    coalesce(arg_min_null(browser, (ts, seq)), '${NONE_VALUE}') AS v_browser,
    coalesce(arg_min_null(os, (ts, seq)), '${NONE_VALUE}') AS v_os,
    any_value(dv) AS dv,
    any_value(sn) AS sn
  FROM numbered GROUP BY site_id, vid, vn`;
}

/** Events whose visits one statement of a rebuild derives (bounds its memory). */
const REBUILD_CHUNK_EVENTS = 200_000;

/**
 * Derives every visit from the events (after a rebuild filled them),
 * replacing what was there: the visitors in slices by the hash of their key,
 * so that a statement holds about {@link REBUILD_CHUNK_EVENTS} events however
 * large the store (the whole of 1M events at once outgrows a 512 MB limit).
 *
 * Each slice's visits span every time; appended one slice after the other,
 * every row group of the table would too, and no period could skip one. So
 * the slices are gathered first, and the table written from them in time
 * order, as the feed's batches append visits. With `scratch` (a file path:
 * the feeds' rebuilds, outside a transaction) they are gathered in a DuckDB
 * file of their own, each slice committed, and the file deleted after: a
 * temporary table kept about 200 MiB of 10M visits in memory and ran out of
 * 384MB, and a table of the store's own file would leave its blocks free in
 * it. Without (inside the caller's transaction: the tests, a file upgrade),
 * in a temporary table.
 */
export async function rebuildVisits(
  conn: DuckDBConnection,
  options: { chunkEvents?: number; scratch?: string } = {},
): Promise<void> {
  await conn.run("DELETE FROM visits");
  const n = Number((await conn.runAndReadAll("SELECT count(*) FROM events")).getRows()[0]?.[0]);
  const slices = Math.max(1, Math.ceil(n / (options.chunkEvents ?? REBUILD_CHUNK_EVENTS)));
  const columns = VISIT_INPUT.join(", ");
  if (slices === 1) {
    await conn.run(
      `INSERT INTO visits SELECT * FROM (${visitsSql(`SELECT ${columns} FROM events`)}) ORDER BY v_start`,
    );
    return;
  }
  const scratch = options.scratch;
  const gathered = scratch === undefined ? "temp.visits_rebuilt" : "rebuild_scratch.visits";
  if (scratch !== undefined) {
    removeDuckDbFile(scratch);
    await conn.run(`ATTACH '${scratch.replaceAll("'", "''")}' AS rebuild_scratch`);
  }
  try {
    await conn.run(
      `CREATE OR REPLACE ${scratch === undefined ? "TEMP TABLE visits_rebuilt" : `TABLE ${gathered}`} AS SELECT * FROM visits LIMIT 0`,
    );
    for (let k = 0; k < slices; k++) {
      await conn.run(
        `INSERT INTO ${gathered} ${visitsSql(`SELECT ${columns} FROM events WHERE hash(vid) % ${slices} = ${k}`)}`,
      );
    }
    await conn.run(`INSERT INTO visits SELECT * FROM ${gathered} ORDER BY v_start`);
    if (scratch === undefined) await conn.run(`DROP TABLE ${gathered}`);
  } finally {
    if (scratch !== undefined) {
      await conn.run("DETACH rebuild_scratch").catch(() => {});
      removeDuckDbFile(scratch);
    }
  }
}

/** The scratch file of a store's rebuild (`rebuildVisits`): beside its file; none for a store in memory. */
export function scratchOf(path: string): string | undefined {
  return path === ":memory:" ? undefined : `${path}.rebuild`;
}

/** Removes a DuckDB file and its WAL. */
function removeDuckDbFile(path: string): void {
  for (const f of [path, `${path}.wal`]) rmSync(f, { force: true });
}

/**
 * A visitor a batch touched: an event of it at `from` was appended (however
 * late) or deleted. Its visits from the one that `from` can reach are re-derived.
 */
export interface TouchedVisitor {
  siteId: string;
  vid: bigint;
  /** The earliest time of its events the batch appended or deleted. */
  from: number;
}

/** Collects the visitors a batch touches, the earliest time of each. */
export class TouchedVisitors {
  private readonly byKey = new Map<string, TouchedVisitor>();
  add(siteId: string, vid: bigint, from: number): void {
    const key = `${siteId}\u0000${vid}`;
    const cur = this.byKey.get(key);
    if (!cur) this.byKey.set(key, { siteId, vid, from });
    else if (from < cur.from) cur.from = from;
  }
  get size(): number {
    return this.byKey.size;
  }
  values(): IterableIterator<TouchedVisitor> {
    return this.byKey.values();
  }
}

/**
 * The visitors whose events `seqs` name, each with the earliest time among
 * them: read before those events are deleted, so their visits can be re-derived.
 */
export async function touchedByDeletion(
  conn: DuckDBConnection,
  seqs: readonly number[],
  into: TouchedVisitors,
): Promise<void> {
  for (let k = 0; k < seqs.length; k += 1000) {
    const r = await conn.runAndReadAll(
      `SELECT site_id, vid, min(ts) FROM events WHERE seq IN (${seqs.slice(k, k + 1000).join(",")}) GROUP BY ALL`,
    );
    for (const [site, vid, ts] of r.getRows()) into.add(String(site), vid as bigint, Number(ts));
  }
}

/**
 * Re-derives the visits of the touched visitors from their events. For each,
 * the visits that end 30 minutes or less before its earliest touched time
 * (or later) can change: those are deleted and the visits of its events from
 * the first of them (or from that time) derived again. The earlier visits stay
 * as they are: more than 30 minutes separate them from anything re-derived.
 * Runs in the caller's transaction.
 *
 * `appendedAfter`: the events the batch appended are exactly those with a
 * `seq` above it (the SQLite feed's outbox ids, appended in order). A touched
 * visitor with no visit in reach (a new visitor, the common case) then has no
 * event at or after its earliest touched time but the batch's: any such
 * event would lie in a visit in reach. Its events are read by `seq` from the
 * batch's rows alone, which the engine finds at the table's end, instead of
 * scanning every event of the last 30 minutes.
 */
export async function refreshVisits(
  conn: DuckDBConnection,
  touched: Iterable<TouchedVisitor>,
  appendedAfter?: number,
  /**
   * Given, gets per site the earliest time the change reaches: the start of
   * the first visit re-derived, or the earliest touched time (a write's scope:
   * write-generation.ts). A visit before it, and every event, is as it was.
   */
  reached?: Map<string, number>,
): Promise<void> {
  const list = [...touched];
  if (list.length === 0) return;
  // Plain bounds besides the per-visitor ones: DuckDB skips the row groups
  // (in time order) that end before them.
  const reach = list.reduce((m, t) => Math.min(m, t.from), Number.POSITIVE_INFINITY) - VISIT_GAP_MS;
  await conn.run(
    "CREATE OR REPLACE TEMP TABLE visit_touched (site_id VARCHAR, vid BIGINT, from_ts BIGINT)",
  );
  const ap = await conn.createAppender("visit_touched", "main", "temp");
  try {
    for (const t of list) {
      ap.appendVarchar(t.siteId);
      ap.appendBigInt(t.vid);
      ap.appendBigInt(BigInt(t.from));
      ap.endRow();
    }
  } finally {
    ap.closeSync();
  }
  // Where each touched visitor's re-derivation starts, and whether any of its
  // visits is in reach (`known`): without one, only the batch's events count.
  await conn.run(`CREATE OR REPLACE TEMP TABLE visit_bounds AS
    SELECT t.site_id, t.vid, least(min(t.from_ts), coalesce(min(v.v_start), min(t.from_ts))) AS s,
      ${appendedAfter === undefined ? "true" : "count(v.vid) > 0"} AS known
    FROM visit_touched t
    LEFT JOIN visits v ON v.site_id = t.site_id AND v.vid = t.vid AND v.v_end >= t.from_ts - ${VISIT_GAP_MS}
      AND v.v_end >= ${reach}
    GROUP BY t.site_id, t.vid`);
  // Per site (one read of the bounds): where its re-derivation starts, and its
  // visitors with no visit in reach. `reached` takes the former.
  let lowest: bigint | null = null;
  let fresh = 0;
  const bySite = await conn.runAndReadAll(
    "SELECT site_id, min(s), min(s) FILTER (WHERE known), count(*) FILTER (WHERE NOT known) FROM visit_bounds GROUP BY site_id",
  );
  for (const [site, s, known, unknown] of bySite.getRows()) {
    if (known !== null && (lowest === null || (known as bigint) < lowest)) lowest = known as bigint;
    fresh += Number(unknown);
    const at = Number(s);
    reached?.set(String(site), Math.min(at, reached.get(String(site)) ?? at));
  }
  const columns = VISIT_INPUT.map((c) => `e.${c}`).join(", ");
  const sources: string[] = [];
  if (lowest !== null) {
    await conn.run(`DELETE FROM visits USING visit_bounds b
      WHERE b.known AND visits.site_id = b.site_id AND visits.vid = b.vid AND visits.v_start >= b.s
        AND visits.v_end >= ${reach}`);
    // The plain bound lets DuckDB skip the row groups before it (events come in time order).
    sources.push(`SELECT ${columns} FROM events e JOIN visit_bounds b ON e.site_id = b.site_id AND e.vid = b.vid
      WHERE b.known AND e.ts >= b.s AND e.ts >= ${lowest}`);
  }
  if (fresh > 0) {
    sources.push(`SELECT ${columns} FROM events e JOIN visit_bounds b ON e.site_id = b.site_id AND e.vid = b.vid
      WHERE NOT b.known AND e.seq > ${BigInt(appendedAfter ?? 0)} AND e.ts >= b.s`);
  }
  await conn.run(`INSERT INTO visits ${visitsSql(sources.join(" UNION ALL "))}`);
  await conn.run("DROP TABLE visit_touched; DROP TABLE visit_bounds");
}

/**
 * Creates the table; a file written before it existed, or with NULLs for
 * absent values (before `(none)` was stored: VISITS_SCHEMA), gets every visit
 * derived from its events at once (in one transaction), as a rebuild would,
 * and is marked due for a rewrite since `now` (the old table's blocks stay in
 * the file until then, as visitor-numbers.ts notes). Returns whether it derived them.
 */
export async function ensureVisitsTable(
  conn: DuckDBConnection,
  now: number = Date.now(),
): Promise<boolean> {
  const known = await conn.runAndReadAll(
    `SELECT count(*), count(*) FILTER (WHERE c.is_nullable = 'YES')
     FROM duckdb_tables() t LEFT JOIN information_schema.columns c
       ON c.table_schema = 'main' AND c.table_name = 'visits' AND c.column_name = 'v_source'
     WHERE t.schema_name = 'main' AND t.table_name = 'visits'`,
  );
  const [exists, nullable] = (known.getRows()[0] ?? [0, 0]).map(Number);
  if (exists && !nullable) return false;
  await inTransaction(conn, async () => {
    if (nullable) {
      await conn.run("DROP TABLE visits");
      await markDueForRewrite(conn, now);
    }
    await conn.run(VISITS_SCHEMA);
    await rebuildVisits(conn);
  });
  return true;
}
