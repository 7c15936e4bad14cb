/**
 * A breakdown of events by bitmaps kept across a live site's writes, and
 * grown by the events appended since, instead of counted again.
 *
 * On a live site every batch of events the feed applies moves the write
 * generation, and the read memo (read-memo.ts) computes again every answer
 * over a period the batch reaches: the dashboard's panels over the current
 * period. For a breakdown whose rows are the site's events alone (no visit
 * joined, `trafficRows` "none": pages, countries, days…) whose visitors are
 * counted by bitmaps of their numbers (visitor-count.ts), the answer after a
 * batch is the answer before, each group's bitmap or'ed with that of the
 * batch's events and its counts added. That holds while only scoped writes
 * were applied (write-generation.ts `scoped`: the feed's batches of events,
 * with payments, links or stitches at most): they append events, each with a
 * `seq` past every stored one (SQLite's, moved in order), and change no stored
 * event. Any other write (an erasure, a retention, a deletion, a rebuild, a
 * rewrite's swap) may change anything: the kept groups go at once, and the
 * next read counts again.
 *
 * Each kept breakdown is a table of its groups (values, bitmaps, counts) in
 * the memo's in-memory database (`read_memo`), with the highest `seq` its
 * snapshot held. Growing it reads the period's events past that `seq` alone
 * (the events are stored in `seq` order, so the scan skips every older block)
 * and writes a new table of the union, in one transaction, so the new
 * highest `seq` is that of the same snapshot.
 */
import type { DuckDBConnection, DuckDBValue } from "@duckdb/node-api";
import { createKeptTables, type KeptTable } from "./kept-tables.js";
import type { GenerationSource, ReadScope } from "./read-memo.js";

/** A breakdown's statement in the pieces that let it grow (the engine's sideStatement). */
export interface GrowableBreakdown {
  /** The same answer for the same key: the statement and its parameters. */
  key: string;
  /**
   * The groups' SELECT (columns `d0`…, `m0`…, `c`) over the period's
   * events, those past `since` alone when it is given. Its parameters are
   * `values`.
   */
  groups(since?: bigint): string;
  values: DuckDBValue[];
  /** The dimensions' columns (`d0`…). */
  dims: number;
  /** Each metric's column (`m0`…): a bitmap of visitors, or a count. */
  metrics: ("bitmap" | "count")[];
  /** The answer's row label of a dimension column (a time bucket's label). */
  label(column: string, i: number): string;
  /** The bytes of one group's bitmaps, to keep within the budget. */
  groupBytes: number;
  /** What it reads (read-memo.ts): writes that reached only later times leave its answer. */
  scope: ReadScope;
  /** Its answer as the engine's own statement counts it, through the read memo, keeping nothing here. */
  plain(): Promise<DuckDBValue[][]>;
}

interface Kept extends KeptTable {
  /** Its answer's rows, as read. */
  rows: DuckDBValue[][];
}

export interface GrownBreakdowns {
  /** Resolves once the tables of the breakdowns that passed are dropped. */
  idle(): Promise<void>;
  /**
   * The answer's rows (the groups, then the grand total's row, as the
   * engine's bitmap statements answer them), from the kept groups grown by
   * the events appended since, or counted afresh and kept.
   */
  rows(conn: DuckDBConnection, st: GrowableBreakdown): Promise<DuckDBValue[][]>;
}

export interface GrownBreakdownsOptions {
  /**
   * Bytes of bitmaps kept in all (least recently used out past it): they
   * live in DuckDB's memory, within its limit. 48 MiB by default: two
   * 90-day top pages of the 10M site (151 groups of 1M visitors, 19 MB each).
   */
  maxBytes?: number;
}

/** Keys of breakdowns asked once remembered (an ask's SQL, no answer). */
const MAX_ASKED = 1024;

/** Creates the kept breakdowns of an engine over `source`'s write generations. */
export function createGrownBreakdowns(
  source: GenerationSource,
  options: GrownBreakdownsOptions = {},
): GrownBreakdowns {
  const kept = createKeptTables<Kept>(source, "g", options.maxBytes ?? 48 * 1024 * 1024);
  /**
   * Breakdowns asked before and not kept, with the generation of their last
   * ask (least recently asked first): an ask in a later generation keeps one.
   */
  const asked = new Map<string, number>();
  const grow = async (conn: DuckDBConnection, st: GrowableBreakdown): Promise<DuckDBValue[][]> => {
    // While a write runs, what it changes is not known yet: as the memo reads.
    if (source.writing) return st.plain();
    await kept.drop(conn);
    const generation = source.generation;
    // Only batches of events since: the new events are those past its seq.
    const found = kept.find(st.key, st.scope);
    // None reached its period (or no write at all): its answer stands, as the memo's would.
    if (found?.stands) return found.entry.rows;
    const before = found?.entry;
    if (!before && (asked.get(st.key) ?? generation) === generation) {
      // Asked for the first time, or again in the same generation (the memo
      // answers): counted as the engine counts it. A breakdown asked once
      // costs no table (writing a 30-day top pages' bitmaps at 10M events
      // took about 20 ms); one asked again after a write is kept from then on.
      asked.delete(st.key);
      asked.set(st.key, generation);
      if (asked.size > MAX_ASKED) asked.delete(asked.keys().next().value as string);
      return st.plain();
    }
    asked.delete(st.key);
    const dims = Array.from({ length: st.dims }, (_, i) => `d${i}`);
    const metrics = st.metrics.map((_, i) => `m${i}`);
    const table = kept.name();
    const select = before
      ? `SELECT ${[
          ...dims,
          ...st.metrics.map((m, i) =>
            m === "bitmap" ? `bit_or(m${i}) AS m${i}` : `sum(m${i})::BIGINT AS m${i}`,
          ),
          "sum(c)::BIGINT AS c",
        ].join(", ")}
          FROM (SELECT ${[...dims, ...metrics, "c"].join(", ")} FROM ${before.table} WHERE g = 0
            UNION ALL SELECT ${[...dims, ...metrics, "c"].join(", ")} FROM (${st.groups(before.seq)}))
          GROUP BY ${dims.join(", ")}`
      : st.groups();
    // The groups, each one's visitors counted beside its bitmap in the
    // projection over the grouping, which DuckDB runs on every thread (as the
    // engine's own statement does), then the grand total's row (`g` 1): the
    // union of the groups' bitmaps, the sum of their counts.
    const counted = st.metrics.flatMap((m, i) => (m === "bitmap" ? [`m${i}`, `n${i}`] : [`m${i}`]));
    const counts = st.metrics.flatMap((m, i) =>
      m === "bitmap" ? [`bit_count(m${i}) AS n${i}`] : [],
    );
    const totals = st.metrics.flatMap((m, i) =>
      m === "bitmap"
        ? [`bit_or(m${i})`, `coalesce(bit_count(bit_or(m${i})), 0)`]
        : [`coalesce(sum(m${i}), 0)::BIGINT`],
    );
    const make = `CREATE TABLE ${table} AS WITH grp AS MATERIALIZED (SELECT ${["*", ...counts].join(", ")} FROM (${select}))
      SELECT ${[...dims, ...counted, "c", "0 AS g"].join(", ")} FROM grp
      UNION ALL
      SELECT ${[...dims.map(() => "NULL"), ...totals, "coalesce(sum(c), 0)::BIGINT", "1 AS g"].join(", ")} FROM grp`;
    const answer = `SELECT ${[
      ...dims.map((d, i) => `CASE WHEN g = 0 THEN ${st.label(d, i)} END`),
      ...st.metrics.map((m, i) => (m === "bitmap" ? `n${i}` : `m${i}`)),
      "c",
      "g",
    ].join(", ")} FROM ${table}`;
    // One snapshot: the highest seq is that of the events the table counts.
    const count = () =>
      kept.snapshot(conn, table, async () => {
        await conn.run(make, st.values);
        return (await conn.runAndReadAll(answer)).getRows();
      });
    // The table it grows is read meanwhile: a write letting it go drops it after.
    const release = before ? kept.hold(before) : () => {};
    const { seq, made: rows } = await count().finally(release);
    // Kept only if no write that may change anything ended meanwhile, and within the budget.
    await kept.keep(
      conn,
      st.key,
      { table, seq, generation, rows, bytes: rows.length * st.groupBytes },
      generation,
    );
    return rows;
  };

  return {
    idle: () => kept.idle(),
    // One at a time per breakdown: a second read waits, then grows the first's table.
    rows: (conn, st) => kept.serial(st.key, () => grow(conn, st)),
  };
}
