/**
 * Tables kept in the memo's in-memory database (`read_memo`) across a live
 * site's batches of events, each counted from a snapshot of the events up to
 * its highest `seq` and grown by the events appended past it
 * (grown-breakdowns.ts, first-step-places.ts).
 *
 * They stand while only scoped writes were applied (write-generation.ts
 * `scoped`: the feed's batches of events, with payments, links or stitches at
 * most): those append events, each with a `seq` past every stored one, and
 * change no stored event. Any other write (an erasure, a retention, a
 * deletion, a rebuild, a rewrite's swap) may change anything: every kept
 * table goes at once, dropped on a connection of its own (an erasure's
 * visitors do not stay in memory), and the next read counts again.
 *
 * Within a budget of bytes, least recently used out. A table a query still
 * reads when it is let go is dropped once that read ends.
 */
import type { DuckDBConnection } from "@duckdb/node-api";
import { type GenerationSource, onOwnConnection, type ReadScope } from "./read-memo.js";

/** What a kept table's entry carries. */
export interface KeptTable {
  /** Its name, in `read_memo`. */
  table: string;
  /** The highest `seq` of its snapshot: the events past it are new. */
  seq: bigint;
  /** The write generation when it was last found current. */
  generation: number;
  /** Its share of the budget. */
  bytes: number;
}

export interface KeptTables<K extends KeptTable> {
  /** `key`'s kept entry (now the most recently used), if any. */
  get(key: string): K | undefined;
  /**
   * `key`'s kept entry when only batches of events were applied since it was
   * current (its table grows by the events past its `seq`), and whether it
   * stands as is: none of them reached what `scope` reads (or no write at all).
   */
  find(key: string, scope: ReadScope): { entry: K; stands: boolean } | undefined;
  /**
   * Keeps `entry` under `key`, in place of the one before. Not kept (its
   * table dropped, false) when a write that may change anything ended since
   * `since` or runs now, or past the budget alone; those least recently used
   * go past it.
   */
  keep(conn: DuckDBConnection, key: string, entry: K, since: number): Promise<boolean>;
  /** Lets `key`'s entry go. */
  forget(key: string): void;
  /** A name for a new table. */
  name(): string;
  /**
   * Runs `work` (a table's making, `seq` its snapshot's highest) in one
   * transaction, so the table holds exactly the events up to `seq`. A failure
   * drops `table`.
   */
  snapshot<T>(
    conn: DuckDBConnection,
    table: string,
    work: (seq: bigint) => Promise<T>,
  ): Promise<{ seq: bigint; made: T }>;
  /** Runs `work` once the previous work on `key` ended: one at a time per key. */
  serial<T>(key: string, work: () => Promise<T>): Promise<T>;
  /**
   * Holds `entry`'s table for a read until the returned release is called:
   * let go meanwhile, the table is dropped after.
   */
  hold(entry: K): () => void;
  /** Drops the tables let go, on `conn`. */
  drop(conn: DuckDBConnection): Promise<void>;
  /** Resolves once the tables let go on a write are dropped. */
  idle(): Promise<void>;
}

/** Tables of all kept sets, named apart from another copy's (a bench loading two builds). */
let made = 0;

/** Creates a set of kept tables named `read_memo.<tag>…` over `source`'s write generations. */
export function createKeptTables<K extends KeptTable>(
  source: GenerationSource,
  tag: string,
  maxBytes: number,
): KeptTables<K> {
  const prefix = `read_memo.${tag}${Math.random().toString(36).slice(2, 8)}_`;
  /** By key, in use order. */
  const kept = new Map<string, K>();
  let bytes = 0;
  /** Tables to drop (let go), on the next connection that comes. */
  const passed: string[] = [];
  /** Each table's reads in progress. */
  const readers = new Map<string, number>();
  /** Tables let go while read: dropped when the last read ends. */
  const lingering = new Set<string>();
  /** Each key's work in progress. */
  const busy = new Map<string, Promise<unknown>>();
  const letGo = (table: string) => {
    if (readers.has(table)) lingering.add(table);
    else passed.push(table);
  };
  const forget = (key: string) => {
    const k = kept.get(key);
    if (!k) return;
    kept.delete(key);
    bytes -= k.bytes;
    letGo(k.table);
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
    // Not again on its end: a closed store fails every drop, which would spin.
    dropping = onOwnConnection(connect, drop).finally(() => {
      dropping = undefined;
    });
  };
  const get = (key: string) => {
    const k = kept.get(key);
    if (k) {
      kept.delete(key);
      kept.set(key, k);
    }
    return k;
  };
  source.onGeneration?.((scope) => {
    if (scope !== undefined) return;
    for (const key of [...kept.keys()]) forget(key);
    dropPassed();
  });

  return {
    get,
    find(key, scope) {
      const entry = get(key);
      const changed = entry ? source.changedSince?.(entry.generation) : undefined;
      if (!entry || !changed) return undefined;
      const stands = (changed.get(scope.siteId) ?? Number.POSITIVE_INFINITY) >= scope.before;
      if (stands) entry.generation = source.generation;
      return { entry, stands };
    },
    async keep(conn, key, entry, since) {
      forget(key);
      const alive = source.changedSince?.(since) !== undefined && !source.writing;
      if (!alive || entry.bytes > maxBytes) {
        letGo(entry.table);
        await drop(conn);
        return false;
      }
      kept.set(key, entry);
      bytes += entry.bytes;
      for (const k of kept.keys()) {
        if (bytes <= maxBytes) break;
        forget(k);
      }
      await drop(conn);
      return true;
    },
    forget,
    name: () => `${prefix}${++made}`,
    async snapshot(conn, table, work) {
      // In memory, beside the file, as the memo's tables (a rewrite opens a new instance).
      await conn.run("ATTACH IF NOT EXISTS ':memory:' AS read_memo");
      await conn.run("BEGIN TRANSACTION");
      try {
        const [top] = (await conn.runAndReadAll("SELECT max(seq) FROM events")).getRows()[0] ?? [];
        const seq = typeof top === "bigint" ? top : BigInt(Number(top ?? 0));
        const result = await work(seq);
        await conn.run("COMMIT");
        return { seq, made: result };
      } catch (err) {
        await conn.run("ROLLBACK").catch(() => {});
        await conn.run(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
        throw err;
      }
    },
    serial(key, work) {
      const prior = busy.get(key) ?? Promise.resolve();
      const run = prior.catch(() => {}).then(work);
      const settled = run.catch(() => {});
      busy.set(key, settled);
      void settled.then(() => {
        if (busy.get(key) === settled) busy.delete(key);
      });
      return run;
    },
    hold(entry) {
      readers.set(entry.table, (readers.get(entry.table) ?? 0) + 1);
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        const left = (readers.get(entry.table) ?? 1) - 1;
        if (left > 0) {
          readers.set(entry.table, left);
          return;
        }
        readers.delete(entry.table);
        if (lingering.delete(entry.table)) {
          passed.push(entry.table);
          dropPassed();
        }
      };
    },
    drop,
    async idle() {
      while (dropping) await dropping;
    },
  };
}
