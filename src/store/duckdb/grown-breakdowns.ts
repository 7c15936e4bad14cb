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
import { type GenerationSource, onOwnConnection, type ReadScope } from "./read-memo.js";

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

interface Kept {
  table: string;
  /** The highest `seq` of its snapshot: later events are new. */
  seq: bigint;
  /** The write generation when its snapshot was taken. */
  generation: number;
  /** Its answer's rows, as read. */
  rows: DuckDBValue[][];
  bytes: number;
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

/** Tables of this module, named apart from another copy's (a bench loading two builds). */
let made = 0;

/** Creates the kept breakdowns of an engine over `source`'s write generations. */
export function createGrownBreakdowns(
  source: GenerationSource,
  options: GrownBreakdownsOptions = {},
): GrownBreakdowns {
  const maxBytes = options.maxBytes ?? 48 * 1024 * 1024;
  const prefix = `read_memo.g${Math.random().toString(36).slice(2, 8)}_`;
  /** By key, in use order. */
  const kept = new Map<string, Kept>();
  /** Tables to drop (their breakdown passed), on the next connection that comes. */
  const passed: string[] = [];
  /** Each key's work in progress: one grows a breakdown at a time. */
  const busy = new Map<string, Promise<unknown>>();
  let bytes = 0;
  const forget = (key: string) => {
    const k = kept.get(key);
    if (!k) return;
    kept.delete(key);
    bytes -= k.bytes;
    passed.push(k.table);
  };
  const drop = async (conn: DuckDBConnection) => {
    while (passed.length > 0) {
      const table = passed.pop() as string;
      // Gone with its instance when a rewrite swapped the file.
      await conn.run(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
    }
  };
  /** The drop of passed tables in progress, on a connection of its own. */
  let dropping: Promise<void> | undefined;
  const dropPassed = () => {
    const connect = source.connect?.bind(source);
    if (!connect || dropping || passed.length === 0) return;
    dropping = onOwnConnection(connect, drop).finally(() => {
      dropping = undefined;
    });
  };
  // A write that may change anything: the kept groups go now, their tables
  // at once too (an erasure's visitors do not stay in memory).
  source.onGeneration?.((scope) => {
    if (scope !== undefined) return;
    for (const key of [...kept.keys()]) forget(key);
    dropPassed();
  });

  /**
   * Breakdowns asked before and not kept, with the generation of their last
   * ask (least recently asked first): an ask in a later generation keeps one.
   */
  const asked = new Map<string, number>();
  const grow = async (conn: DuckDBConnection, st: GrowableBreakdown): Promise<DuckDBValue[][]> => {
    // While a write runs, what it changes is not known yet: as the memo reads.
    if (source.writing) return st.plain();
    await drop(conn);
    const generation = source.generation;
    const before = kept.get(st.key);
    // Only batches of events since: the new events are those past its seq.
    const changed = before ? source.changedSince?.(before.generation) : undefined;
    if (before && changed) {
      kept.delete(st.key);
      kept.set(st.key, before);
      // None reached its period (or no write at all): its answer stands, as the memo's would.
      if ((changed.get(st.scope.siteId) ?? Number.POSITIVE_INFINITY) >= st.scope.before) {
        before.generation = generation;
        return before.rows;
      }
    }
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
    const table = `${prefix}${++made}`;
    const select =
      before && changed
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
    let seq: bigint;
    let rows: DuckDBValue[][];
    // In memory, beside the file, as the memo's tables (a rewrite opens a new instance).
    await conn.run("ATTACH IF NOT EXISTS ':memory:' AS read_memo");
    // One snapshot: the highest seq is that of the events the table counts.
    await conn.run("BEGIN TRANSACTION");
    try {
      const [top] = (await conn.runAndReadAll("SELECT max(seq) FROM events")).getRows()[0] ?? [];
      seq = typeof top === "bigint" ? top : BigInt(Number(top ?? 0));
      await conn.run(make, st.values);
      rows = (await conn.runAndReadAll(answer)).getRows();
      await conn.run("COMMIT");
    } catch (err) {
      await conn.run("ROLLBACK").catch(() => {});
      await conn.run(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
      throw err;
    }
    const size = rows.length * st.groupBytes;
    // Kept only if no write that may change anything ended meanwhile, and within the budget.
    const alive = source.changedSince?.(generation) !== undefined && !source.writing;
    if (before) forget(st.key);
    if (!alive || size > maxBytes) {
      passed.push(table);
      await drop(conn);
      return rows;
    }
    kept.set(st.key, { table, seq, generation, rows, bytes: size });
    bytes += size;
    for (const key of kept.keys()) {
      if (bytes <= maxBytes) break;
      forget(key);
    }
    await drop(conn);
    return rows;
  };

  return {
    async idle() {
      while (dropping) await dropping;
    },
    rows(conn, st) {
      // One at a time per breakdown: a second read waits, then grows the first's table.
      const prior = busy.get(st.key) ?? Promise.resolve();
      const run = prior.catch(() => {}).then(() => grow(conn, st));
      const settled = run.catch(() => {});
      busy.set(st.key, settled);
      void settled.then(() => {
        if (busy.get(st.key) === settled) busy.delete(st.key);
      });
      return run;
    },
  };
}
