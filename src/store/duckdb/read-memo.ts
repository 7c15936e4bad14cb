/**
 * What the engine's reads computed, kept for the other reads of the same
 * write generation (write-generation.ts): the dashboard's first view sends a
 * dozen queries that compute the same pieces (the period's visitors as each
 * breakdown's total, the period's payment shares under the model for each
 * panel's revenue, a funnel's first step). Within one generation the data is
 * the same, so the same statement has the same answer: it runs once, and a
 * read that asks for it while it runs waits for it. Any write moves the
 * generation and the next read computes again, so an answer never lags the
 * data: nothing here is a cache with an age. One exception, exact too: a
 * statement that says what it reads (`ReadScope`: one site's events and
 * visits before a time) keeps its answer past the writes that say they
 * changed none of it (the feed's batches of events: write-generation.ts
 * `scoped`), as a live site's new events leave the comparison period alone.
 *
 * Two kinds of piece: a statement's rows (`rows`, small answers: at most
 * `maxRows` rows each and `maxTotalRows` in all are kept), and a table made
 * from a SELECT (`table`: the payment shares, read by several statements) in
 * an in-memory database attached to the instance (`read_memo`), which every
 * connection sees, as a temporary table is not. A table is dropped once its
 * generation has passed (or it is the least recently used past `maxTables`)
 * and no running query holds it.
 */
import { randomBytes } from "node:crypto";
import type { DuckDBConnection, DuckDBValue } from "@duckdb/node-api";
import type { FirstStepPlaces } from "./first-step-places.js";
import type { GrownBreakdowns } from "./grown-breakdowns.js";
import type { ValueSets } from "./value-sets.js";

/** The generation the memo follows (the analytics store). */
export interface GenerationSource {
  readonly generation: number;
  readonly writing: boolean;
  /**
   * With these the memo lets go of a passed generation's pieces as soon as
   * it passes, not at the next read: an erasure's rows do not stay in memory
   * on a server nobody queries.
   */
  onGeneration?(
    listener: (scope: { readonly sites: Map<string, number> } | undefined) => void,
  ): void;
  connect?(): Promise<DuckDBConnection>;
  /**
   * What the writes since a generation changed: per site the earliest event
   * time they reached (write-generation.ts); undefined: anything. Without it
   * every write passes every answer.
   */
  changedSince?(since: number): Map<string, number> | undefined;
}

/**
 * What a statement reads, when it says so: the events and visits of one site
 * at event times before `before` (a visit by its start), and no other table.
 * Its answer then outlives the writes that changed only later times of that
 * site, or other sites: a live site's new events leave the comparison
 * period's answers, and any earlier period's, as they were.
 */
export interface ReadScope {
  siteId: string;
  before: number;
}

/**
 * The scope of a statement over a period's traffic rows (the engine's
 * trafficRows, wholeVisits): the site's events before the period's end, and
 * its visits that start before it.
 */
export const periodScope = (siteId: string, period: { to: number }): ReadScope => ({
  siteId,
  before: period.to,
});

/** One query's reads on its connection, through the memo. */
export interface QueryReads {
  readonly conn: DuckDBConnection;
  /**
   * The statement's rows: computed once per generation, or, with `scope`,
   * once until a write changes what the scope names.
   */
  rows(sql: string, values?: DuckDBValue[], scope?: ReadScope): Promise<DuckDBValue[][]>;
  /** A table holding `select`'s rows, made once per generation: its name, to read in this query. */
  table(select: string, values?: DuckDBValue[]): Promise<string>;
  /** The engine's traffic columns' values per period, kept across generations (value-sets.ts). */
  readonly valueSets?: ValueSets;
  /** The visitor bitmaps' budget and headroom (visitor-count.ts); their defaults when unset. */
  readonly bitmaps?: BitmapLimits;
  /** The engine's breakdowns kept across batches of events and grown by them (grown-breakdowns.ts). */
  readonly grown?: GrownBreakdowns;
  /** Funnels' first steps kept across batches of events and grown by them (first-step-places.ts). */
  readonly firsts?: FirstStepPlaces;
}

/** How large a traffic statement's visitor bitmaps may be (visitor-count.ts). */
export interface BitmapLimits {
  /** The bits a statement's bitmaps may take in all (per part). */
  bits: number;
  /** The numbers past the site's highest that a bitmap covers. */
  headroom: number;
}

export interface ReadMemo {
  /**
   * The reads of a query running on `conn`. `alive` says whether the query
   * may still run a statement: one that waited on another query's
   * computation and finds it failed computes its own only while alive (its
   * time limit not passed, its caller still there).
   */
  reads(conn: DuckDBConnection, alive?: () => boolean): QueryReads;
  /** The query on `conn` ended: the tables it read may go (before the connection closes). */
  release(conn: DuckDBConnection): Promise<void>;
  /** Resolves once the tables of passed generations that no query holds are dropped. */
  idle(): Promise<void>;
}

export interface ReadMemoOptions {
  /** Statements' answers kept (least recently used out). */
  maxEntries?: number;
  /** A statement's answer longer than this is not kept. */
  maxRows?: number;
  /** Rows kept in all (least recently used answers out past it): what the memo holds in memory. */
  maxTotalRows?: number;
  /** Tables kept in the current generation. */
  maxTables?: number;
  /**
   * Rows of the tables kept, in all (least recently used out past it); a
   * larger table serves its own query alone. They live in DuckDB's memory,
   * within its limit (the shares of a 100M-event site's month: about
   * 330,000 rows). 300,000 by default: about 55 MiB, as 200,000 were when a
   * share table stored every column (a 90-day linear share table of the 10M
   * site, 287,162 rows of 11 columns, takes 42 MiB).
   */
  maxTableRows?: number;
}

interface TableEntry {
  name: string;
  /** Its rows, once made. */
  rows: number;
  /** Set once the table was made and holds its generation's rows. */
  made: Promise<void>;
  holders: number;
  /** No new reader: its generation passed, it was evicted, or its making failed. */
  retired: boolean;
}

/** The key of a statement and its parameters (bigints as strings). */
export const statementKey = (sql: string, values: DuckDBValue[] | undefined) =>
  `${sql}\u0000${JSON.stringify(values ?? [], (_k, v) => (typeof v === "bigint" ? `${v}n` : v))}`;

/**
 * Memos made by this module: each names its tables apart (several may share
 * an instance), and apart from another copy of this module's (a bench that
 * loads two builds' engines over one store), by a random part.
 */
let memos = 0;
const moduleTag = randomBytes(3).toString("hex");

/**
 * Runs `work` on a connection of its own once the current call has returned
 * (the write's call that moved the generation: a drop of what it passed).
 * A failure is the store closing, whose instance takes the tables with it.
 */
export async function onOwnConnection(
  connect: () => Promise<DuckDBConnection>,
  work: (conn: DuckDBConnection) => Promise<void>,
): Promise<void> {
  await new Promise((r) => setImmediate(r));
  let conn: DuckDBConnection | undefined;
  try {
    conn = await connect();
    await work(conn);
  } catch {
    // The store closing: its instance (and the tables with it) goes.
  } finally {
    conn?.closeSync();
  }
}

/** Creates a memo over `source`'s generations. */
export function createReadMemo(source: GenerationSource, options: ReadMemoOptions = {}): ReadMemo {
  memos += 1;
  const prefix = `read_memo.m${moduleTag}_${memos}_`;
  const maxEntries = options.maxEntries ?? 256;
  const maxRows = options.maxRows ?? 10_000;
  const maxTotalRows = options.maxTotalRows ?? 50_000;
  const maxTables = options.maxTables ?? 16;
  const maxTableRows = options.maxTableRows ?? 300_000;
  let generation = source.generation;
  /** Statements' answers of `generation`, in use order (a Map keeps insertion order). */
  let answers = new Map<string, Promise<DuckDBValue[][]>>();
  /** The rows of each answer that came (a running one has none yet), and their sum. */
  const kept = new Map<Promise<DuckDBValue[][]>, number>();
  let keptRows = 0;
  /** The scope of each answer that said one (by its key). */
  const scopes = new Map<string, ReadScope>();
  const evict = (key: string) => {
    const p = answers.get(key);
    if (!p) return;
    answers.delete(key);
    scopes.delete(key);
    keptRows -= kept.get(p) ?? 0;
    kept.delete(p);
  };
  /** Tables by their SELECT's key (the current generation's), and every table still in the database. */
  let tables = new Map<string, TableEntry>();
  const live = new Set<TableEntry>();
  /** The tables each running query holds. */
  const held = new Map<DuckDBConnection, TableEntry[]>();
  let made = 0;

  /** Whether a retired table may be waiting for its drop (set on retiring or releasing one). */
  let passedTables = false;
  /** The generation's tables get no new reader; each is dropped once none holds it. */
  const retireTables = () => {
    for (const t of tables.values()) t.retired = true;
    if (tables.size > 0) passedTables = true;
    tables = new Map();
  };
  /**
   * Lets go of what the generation before kept: its tables (once no query
   * reads them), and its answers but those whose scope the writes since left
   * alone (`changed`: per site the earliest event time they reached), which
   * are the current generation's answers as well.
   */
  const pass = (changed?: Map<string, number>) => {
    generation = source.generation;
    const before = answers;
    answers = new Map();
    for (const [key, p] of before) {
      const scope = scopes.get(key);
      if (
        changed &&
        scope &&
        (changed.get(scope.siteId) ?? Number.POSITIVE_INFINITY) >= scope.before
      ) {
        answers.set(key, p);
        continue;
      }
      scopes.delete(key);
      keptRows -= kept.get(p) ?? 0;
      kept.delete(p);
    }
    retireTables();
  };

  /** Whether a read may use or keep pieces now: the generation it follows, or none while a write runs. */
  const current = (): number | undefined => {
    if (source.writing) return undefined;
    if (source.generation !== generation) pass(source.changedSince?.(generation));
    return generation;
  };

  const drop = async (conn: DuckDBConnection) => {
    passedTables = false;
    for (const t of [...live]) {
      if (!t.retired || t.holders > 0) continue;
      live.delete(t);
      // Gone with its instance when a rewrite swapped the file.
      await conn.run(`DROP TABLE IF EXISTS ${t.name}`).catch(() => {});
    }
  };

  /** The drop of passed tables in progress, on a connection of its own. */
  let dropping: Promise<void> | undefined;
  const dropPassed = () => {
    const connect = source.connect?.bind(source);
    if (!connect || dropping || !passedTables) return;
    dropping = onOwnConnection(connect, drop).finally(() => {
      dropping = undefined;
    });
  };
  source.onGeneration?.((scope) => {
    // A write that may change anything passes everything now (an erasure's rows
    // do not stay in memory); a scoped one is weighed at the next read, once it ended.
    if (scope === undefined && (answers.size > 0 || tables.size > 0)) pass();
    else if (scope !== undefined) retireTables();
    dropPassed();
  });

  return {
    reads(conn, alive = () => true) {
      const hold = (t: TableEntry) => {
        t.holders += 1;
        held.set(conn, [...(held.get(conn) ?? []), t]);
      };
      return {
        conn,
        async rows(sql, values, scope) {
          const run = async () => {
            if (!alive()) throw new Error("INTERRUPT Error: the query ended while it waited");
            return (await conn.runAndReadAll(sql, values)).getRows();
          };
          const g = current();
          if (g === undefined) return run();
          const key = statementKey(sql, values);
          const known = answers.get(key);
          if (known) {
            answers.delete(key);
            answers.set(key, known);
            // Another query's computation: when it fails (its query was cancelled), this one computes.
            return known.catch(run);
          }
          const mine = run();
          answers.set(key, mine);
          if (scope) scopes.set(key, scope);
          else scopes.delete(key);
          if (answers.size > maxEntries) evict(answers.keys().next().value as string);
          const forget = () => {
            if (answers.get(key) === mine) evict(key);
          };
          // A write that ran meanwhile moved the generation: the next read starts a new map.
          mine.then((r) => {
            if (answers.get(key) !== mine) return;
            if (r.length > maxRows) return forget();
            kept.set(mine, r.length);
            keptRows += r.length;
            // The least recently used answers go until the rows kept fit.
            for (const k of answers.keys()) {
              if (keptRows <= maxTotalRows) break;
              evict(k);
            }
          }, forget);
          return mine;
        },
        async table(select, values) {
          const g = current();
          const key = statementKey(select, values);
          let t = g === undefined ? undefined : tables.get(key);
          if (t) {
            tables.delete(key);
            tables.set(key, t);
            hold(t);
            try {
              await t.made;
              return t.name;
            } catch (err) {
              // Its query was cancelled while making it: this one makes its own, if still running.
              if (!alive()) throw err;
              t = undefined;
            }
          }
          await drop(conn);
          made += 1;
          const name = `${prefix}${made}`;
          let done: () => void = () => {};
          let failed: (err: unknown) => void = () => {};
          const entry: TableEntry = {
            name,
            rows: 0,
            made: new Promise<void>((resolve, reject) => {
              done = resolve;
              failed = reject;
            }),
            holders: 0,
            // Made during a write: for this query alone.
            retired: g === undefined,
          };
          entry.made.catch(() => {});
          live.add(entry);
          hold(entry);
          /** Retires `key`'s table: no new reader, dropped once none holds it. */
          const retire = (k: string) => {
            const o = tables.get(k);
            if (!o) return;
            tables.delete(k);
            o.retired = true;
            passedTables = true;
          };
          if (g !== undefined) tables.set(key, entry);
          try {
            // In memory, beside the file; attached once per instance (a rewrite opens a new one).
            await conn.run("ATTACH IF NOT EXISTS ':memory:' AS read_memo");
            const count = await conn.runAndReadAll(`CREATE TABLE ${name} AS ${select}`, values);
            entry.rows = Number(count.getRows()[0]?.[0] ?? 0);
            done();
          } catch (err) {
            if (tables.get(key) === entry) retire(key);
            entry.retired = true;
            failed(err);
            throw err;
          }
          if (tables.get(key) === entry) {
            // Too large to keep: this query's alone. Otherwise the least recently used go past the bounds.
            if (entry.rows > maxTableRows) retire(key);
            const rowsKept = () => [...tables.values()].reduce((n, t) => n + t.rows, 0);
            for (const k of tables.keys()) {
              if (tables.size <= maxTables && rowsKept() <= maxTableRows) break;
              if (k !== key) retire(k);
            }
          }
          return name;
        },
      };
    },
    idle: () => dropping ?? Promise.resolve(),
    async release(conn) {
      for (const t of held.get(conn) ?? []) {
        t.holders -= 1;
        if (t.retired && t.holders === 0) passedTables = true;
      }
      held.delete(conn);
      current();
      await drop(conn);
    },
  };
}

const directTables = new WeakMap<DuckDBConnection, number>();

/** A query's reads without a memo (a store that tells no generation): its tables are temporary ones of `conn`. */
export function directReads(conn: DuckDBConnection): QueryReads {
  return {
    conn,
    rows: async (sql, values) => (await conn.runAndReadAll(sql, values)).getRows(),
    async table(select, values) {
      const n = directTables.get(conn) ?? 0;
      directTables.set(conn, n + 1);
      const name = `r_shares_${n}`;
      await conn.run(`CREATE TEMP TABLE ${name} AS ${select}`, values);
      return name;
    },
  };
}
