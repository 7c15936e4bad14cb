/**
 * The analytics store: one DuckDB file beside the SQLite file
 * (`<data>/analytics.duckdb`), derived from SQLite by the feed
 * (src/store/duckdb/analytics-feed.ts) and read by the engine
 * (src/store/duckdb/analytics-engine.ts). Since migration 19 SQLite is only the events' outbox: an event lives here
 * once the feed moved it, so this file is backed up with the SQLite file
 * (src/store/sqlite/backup.ts). Payments, links and stitches stay in SQLite
 * and are rebuilt from it when the file is new.
 *
 * Schema choices (docs/architecture.md, "Stores"):
 * - events are appended in the order SQLite acknowledged them, which is time
 *   order up to the clients' small skew, so DuckDB's per-row-group min/max
 *   (zonemaps) on `ts` skip what a period does not cover;
 * - visitor ids are 64-bit integers (`vid`, the first 8 bytes of SHA-256 of
 *   the stored id): 8 bytes instead of 32 characters, and joins on integers;
 *   each also has a dense number per site (`dv`, visitor-numbers.ts) that
 *   distinct counts use;
 * - each event and visit carries its site's number in the file (`sn`,
 *   site-numbers.ts): the blocks' min/max of an integer prove a block holds
 *   one site, which a string's cannot, so a site's scans skip its filter;
 * - low-cardinality strings (site, name, channel, source, country, device,
 *   browser, os…) are plain VARCHAR: DuckDB's dictionary and FSST
 *   compression store each distinct value once per row group, which an ENUM
 *   would only save again while forcing a schema change for every new value;
 * - payments keep their stored first-touch attribution (the default model),
 *   links and stitches are small tables joined at query time;
 * - visits (start, end, counts, touch) are a table the feed keeps with the
 *   events (visits-maintenance.ts), not recomputed by every query.
 */
import { createHash } from "node:crypto";
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { dirname } from "node:path";
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import { ensureSiteNumbers } from "./site-numbers.js";
import { ensureVisitorNumbers } from "./visitor-numbers.js";
import { ensureVisitsTable } from "./visits-maintenance.js";
import { createWriteGeneration, type WriteScope } from "./write-generation.js";

/** What the analytics store is opened with (src/config.ts). */
export interface AnalyticsStoreOptions {
  /** The DuckDB file; `:memory:` for tests that need no file. */
  path: string;
  /** DuckDB's worker threads (ANALYTICS_THREADS). */
  threads: number;
  /** DuckDB's memory limit, e.g. `512MB` (ANALYTICS_MEMORY_LIMIT). */
  memoryLimit: string;
}

/** An open analytics store: one instance, one connection for the feed's writes. */
export interface AnalyticsStore {
  /** The DuckDB file, or `:memory:`. */
  readonly path: string;
  /** The open instance (a new one after each `rewrite`). */
  readonly instance: DuckDBInstance;
  /** The feed's connection (its transactions append and apply changes); a new one after each `rewrite`. */
  readonly writer: DuckDBConnection;
  /**
   * Moves whenever the data may change: each call on `writer` (at its start
   * and its end) and each `rewrite`'s swap (write-generation.ts).
   */
  readonly generation: number;
  /** Whether a call on `writer` is in progress. */
  readonly writing: boolean;
  /**
   * Calls `listener` each time the generation moves (synchronously, inside
   * the write's call), with what the write said it changes (undefined: anything).
   */
  onGeneration(listener: (scope: WriteScope | undefined) => void): void;
  /**
   * Runs one write on `writer` that changes only what `scope` names (filled
   * in by the write before it ends): queries over what it left alone keep
   * their answers (read-memo.ts). The feed's batches of events.
   */
  scopedWrite<T>(scope: WriteScope, write: () => Promise<T>): Promise<T>;
  /** What the writes since generation `since` changed (write-generation.ts `changedSince`). */
  changedSince(since: number): Map<string, number> | undefined;
  /**
   * A new connection for one query (each can be interrupted on its own).
   * During the swap of a `rewrite` it waits until the new file is open.
   */
  connect(): Promise<DuckDBConnection>;
  /**
   * Rewrites the file while it is open (see `rewrite` below). The copy reads
   * a snapshot on a connection of its own, so the feed may go on writing
   * meanwhile; the swap runs inside `exclusive` (the feed: between two
   * batches), and `onSwapped` brings what the feed wrote during the copy onto
   * the new file before queries resume.
   */
  rewrite(options?: RewriteOptions): Promise<RewriteReport>;
  close(): void;
}

/** What a rewrite runs on the copy before it replaces the file. */
export interface RewriteOptions {
  /** Statements run on the copy, attached as `compacted`, after the tables are copied (in the copy's transaction). */
  onCopy?: string[];
  /**
   * Called once the copy is written and synced, before the swap: a test
   * holds the rewrite there (the feed keeps moving meanwhile) or stands for
   * a crash by throwing (the old file stays open, whole).
   */
  onCopied?: () => void | Promise<void>;
  /**
   * Runs the swap when none of the caller's writes runs (the feed: between
   * two of its batches). Default: at once.
   */
  exclusive?: <T>(swap: () => Promise<T>) => Promise<T>;
  /**
   * Called inside `exclusive` once the file is open again (the new one, or
   * the old one when the rename failed), before new queries may connect:
   * the feed replays onto it what it applied to the old file during the copy,
   * so no query sees the new file without it.
   */
  onSwapped?: () => Promise<void>;
}

/** What a rewrite did. */
export interface RewriteReport {
  bytesBefore: number;
  bytesAfter: number;
  /** The whole rewrite: the copy, then the swap. */
  seconds: number;
  /**
   * The swap alone, with `onSwapped` (the feed's replay onto the new file):
   * queries wait this long at most (plus the queries it waited for).
   */
  swapSeconds: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS feed_state (
  id INTEGER PRIMARY KEY,
  seq BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
  seq BIGINT NOT NULL,
  site_id VARCHAR NOT NULL,
  ts BIGINT NOT NULL,
  vid BIGINT NOT NULL,
  name VARCHAR NOT NULL,
  page VARCHAR NOT NULL,
  referrer VARCHAR,
  channel VARCHAR,
  source VARCHAR,
  medium VARCHAR,
  campaign VARCHAR,
  term VARCHAR,
  content VARCHAR,
  country VARCHAR,
  device VARCHAR,
  browser VARCHAR,
  os VARCHAR,
  props JSON,
  -- The stored event as ListEvents and the exports return it (EVENT_FIELD_TABLE,
  -- src/domain/store/event-fields.ts): SQLite keeps an event only until the feed
  -- moved it (migration 19), so this table is where it lives afterwards.
  url VARCHAR NOT NULL,
  referrer_url VARCHAR,
  title VARCHAR,
  width INTEGER,
  language VARCHAR,
  received_at BIGINT NOT NULL,
  visitor_id VARCHAR NOT NULL,
  user_id VARCHAR,
  referrer_host VARCHAR,
  utm_source VARCHAR,
  utm_medium VARCHAR,
  utm_campaign VARCHAR,
  utm_term VARCHAR,
  utm_content VARCHAR,
  click_ids VARCHAR,
  -- The visitor's dense number on its site (visitor-numbers.ts): the engine counts visitors by it.
  dv INTEGER NOT NULL,
  -- The site's number in the file (site-numbers.ts): the engine selects a site's rows by it.
  sn INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS payments (
  site_id VARCHAR NOT NULL,
  payment_id VARCHAR NOT NULL,
  customer_id VARCHAR NOT NULL,
  currency VARCHAR NOT NULL,
  amount_minor BIGINT NOT NULL,
  kind VARCHAR NOT NULL,
  status VARCHAR NOT NULL,
  paid_at BIGINT NOT NULL,
  channel VARCHAR NOT NULL,
  source VARCHAR,
  medium VARCHAR,
  campaign VARCHAR,
  landing_page VARCHAR,
  touch_vid BIGINT,
  touched_at BIGINT
);
CREATE TABLE IF NOT EXISTS links (
  site_id VARCHAR NOT NULL,
  customer_id VARCHAR NOT NULL,
  vid BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS stitches (
  site_id VARCHAR NOT NULL,
  vid BIGINT NOT NULL,
  pvid BIGINT NOT NULL
);
`;

/** A stored visitor id as the analytics store's 64-bit integer. */
export function visitorKey(visitorId: string): bigint {
  return createHash("sha256").update(visitorId).digest().readBigInt64BE(0);
}

/** The analytics file of a SQLite store URL's path: `analytics.duckdb` in the same directory. */
export function analyticsPathBeside(sqlitePath: string): string {
  return sqlitePath === ":memory:" ? ":memory:" : `${dirname(sqlitePath)}/analytics.duckdb`;
}

/** The rewrite's copy beside the file, removed at open when a crash left it half-written. */
const compactPathOf = (path: string) => `${path}.compact`;

/** Opens an instance of the file and its writer connection. */
async function openInstance(options: AnalyticsStoreOptions) {
  const instance = await DuckDBInstance.create(options.path, {
    threads: String(options.threads),
    memory_limit: options.memoryLimit,
  });
  try {
    return { instance, writer: await instance.connect() };
  } catch (err) {
    instance.closeSync();
    throw err;
  }
}

/** Opens (creating when needed) the analytics store and its schema. */
export async function openAnalyticsStore(options: AnalyticsStoreOptions): Promise<AnalyticsStore> {
  if (options.path !== ":memory:") mkdirSync(dirname(options.path), { recursive: true });
  const generation = createWriteGeneration();
  /** An instance and its writer, watched: every write moves the generation. */
  const watched = (opened: Awaited<ReturnType<typeof openInstance>>) => ({
    instance: opened.instance,
    writer: generation.watch(opened.writer),
  });
  let state = watched(await openInstance(options));
  if (options.path !== ":memory:") {
    // A rewrite that a crash interrupted before its rename: the file itself is
    // the old one, whole; the copy is dropped (we hold DuckDB's lock now, so
    // no other process is writing it).
    removeFiles([compactPathOf(options.path), `${compactPathOf(options.path)}.wal`]);
  }
  const writer = state.writer;
  // A file of the schema before the events' stored fields (url, visitor_id…): its
  // events table is dropped and the file rebuilt from SQLite, which still holds
  // every event then (the feed starts deleting them only with this schema).
  const stale = await writer.runAndReadAll(
    `SELECT count(*) FROM information_schema.tables t WHERE t.table_name = 'events'
       AND NOT EXISTS (SELECT 1 FROM information_schema.columns c
                       WHERE c.table_name = 'events' AND c.column_name = 'visitor_id')`,
  );
  if (Number(stale.getRows()[0]?.[0]) > 0) {
    await writer.run("DROP TABLE events; DROP TABLE IF EXISTS feed_state");
  }
  await writer.run(SCHEMA);
  // The site numbers first: a file before the visitor numbers gets its events
  // copied by name into the current schema, site numbers included.
  await ensureSiteNumbers(writer);
  await ensureVisitorNumbers(writer, SCHEMA);
  await ensureVisitsTable(writer);
  let closed = false;
  // The queries' connections, so that a rewrite swaps the file only once they ended.
  const open = new Set<DuckDBConnection>();
  let connecting = 0;
  let drained: (() => void) | undefined;
  const settle = () => {
    if (open.size === 0 && connecting === 0) drained?.();
  };
  // Set while a rewrite swaps the file: new connections wait for the new file.
  let swapping: Promise<void> | undefined;
  return {
    path: options.path,
    get instance() {
      return state.instance;
    },
    get writer() {
      return state.writer;
    },
    get generation() {
      return generation.value;
    },
    get writing() {
      return generation.writing;
    },
    onGeneration: (listener) => generation.onChange(listener),
    scopedWrite: (scope, write) => generation.scoped(scope, write),
    changedSince: (since) => generation.changedSince(since),
    async connect() {
      while (swapping) await swapping;
      connecting += 1;
      let conn: DuckDBConnection;
      try {
        conn = await state.instance.connect();
      } finally {
        connecting -= 1;
      }
      open.add(conn);
      const disconnect = conn.disconnectSync.bind(conn);
      // The engine closes each query's connection: then the rewrite may swap.
      conn.closeSync = conn.disconnectSync = () => {
        if (!open.delete(conn)) return;
        disconnect();
        settle();
      };
      settle();
      return conn;
    },
    /**
     * Rewrites the open file, as `closeCompacted` does at a stop, without
     * stopping: every table is copied into `<file>.compact` from one
     * snapshot while queries and the feed's writes go on, the copy is
     * synced; then (inside `exclusive`) new queries wait while the running
     * ones end, the old file closes (checkpointed, so its WAL is empty and
     * removed), the copy is renamed over it (atomic: a crash leaves either
     * the old file or the new one, both whole; a left-over copy is removed
     * at the next open), the new file opens and `onSwapped` brings it up to
     * date before queries resume.
     */
    async rewrite(rewriteOptions = {}) {
      const started = performance.now();
      if (options.path === ":memory:" || closed) {
        return { bytesBefore: 0, bytesAfter: 0, seconds: 0, swapSeconds: 0 };
      }
      const next = compactPathOf(options.path);
      const bytesBefore = fileBytes(options.path);
      // Its own connection, one transaction: a snapshot of every table (and of
      // the feed's watermark with them) while the feed's writer goes on committing.
      const copier = await state.instance.connect();
      try {
        await copyDatabase(copier, next, rewriteOptions.onCopy ?? []);
        syncFile(next);
        await rewriteOptions.onCopied?.();
      } catch (err) {
        // The old file stays, whole and open; the copy is of no use.
        removeFiles([next, `${next}.wal`]);
        throw err;
      } finally {
        copier.closeSync();
      }
      const exclusive = rewriteOptions.exclusive ?? (<T>(swap: () => Promise<T>) => swap());
      const swapSeconds = await exclusive(async () => {
        const swapStarted = performance.now();
        let release = () => {};
        swapping = new Promise<void>((r) => {
          release = r;
        });
        try {
          if (open.size > 0 || connecting > 0) {
            await new Promise<void>((r) => {
              drained = r;
            });
            drained = undefined;
          }
          await state.writer.run("CHECKPOINT");
          state.writer.closeSync();
          state.instance.closeSync();
          rmSync(`${options.path}.wal`, { force: true });
          try {
            renameSync(next, options.path);
            syncFile(dirname(options.path));
          } finally {
            // The new file, or the old one when the rename failed: the store stays open.
            state = watched(await reopen(options));
            // A new instance: what reads kept of the old one (its memo tables) is gone.
            generation.bump();
            await rewriteOptions.onSwapped?.();
          }
        } finally {
          swapping = undefined;
          release();
        }
        return (performance.now() - swapStarted) / 1000;
      });
      return {
        bytesBefore,
        bytesAfter: fileBytes(options.path),
        seconds: (performance.now() - started) / 1000,
        swapSeconds,
      };
    },
    close() {
      if (closed) return;
      closed = true;
      state.writer.closeSync();
      state.instance.closeSync();
    },
  };
}

/**
 * Opens the file again after a swap. A command that ignored the owner's
 * lease may have taken DuckDB's lock in the moment it was free: the owner
 * waits for it (a few seconds at most) rather than lose its file.
 */
async function reopen(options: AnalyticsStoreOptions) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await openInstance(options);
    } catch (err) {
      if (!isHeldByAnotherProcess(err) || attempt >= 100) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * Copies every table of the database of `conn` into a new file `dest`
 * (DuckDB's own copy), in one transaction: the copy is one consistent
 * snapshot however the other connections write meanwhile.
 */
async function copyDatabase(conn: DuckDBConnection, dest: string, onCopy: string[]): Promise<void> {
  removeFiles([dest, `${dest}.wal`]);
  const name = (await conn.runAndReadAll("SELECT current_database()")).getRows()[0]?.[0];
  await conn.run(`ATTACH '${dest.replaceAll("'", "''")}' AS compacted`);
  try {
    await conn.run("BEGIN TRANSACTION");
    try {
      await conn.run(`COPY FROM DATABASE "${String(name).replaceAll('"', '""')}" TO compacted`);
      for (const sql of onCopy) await conn.run(sql);
      await conn.run("COMMIT");
    } catch (err) {
      await conn.run("ROLLBACK").catch(() => {});
      throw err;
    }
    await conn.run("CHECKPOINT compacted");
  } finally {
    await conn.run("DETACH compacted");
  }
  rmSync(`${dest}.wal`, { force: true });
}

/** Flushes a file (or a directory's entries) to disk. */
function syncFile(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

const fileBytes = (path: string) => (existsSync(path) ? statSync(path).size : 0);

const removeFiles = (paths: string[]) => {
  for (const f of paths) rmSync(f, { force: true });
};

/**
 * Closes the store after rewriting its file: every table is copied into a
 * new file (`COPY FROM DATABASE`), which then replaces the old one. DuckDB
 * marks deleted rows and leaves their bytes in blocks it reuses later; the
 * copy holds only the rows that are live, so an erased or pruned row's
 * strings leave the disk too (docs/privacy.md). A store in memory just closes.
 */
export async function closeCompacted(
  store: AnalyticsStore,
  options: RewriteOptions = {},
): Promise<void> {
  if (store.path === ":memory:") return store.close();
  const next = compactPathOf(store.path);
  await copyDatabase(store.writer, next, options.onCopy ?? []);
  syncFile(next);
  store.close();
  rmSync(`${store.path}.wal`, { force: true });
  renameSync(next, store.path);
  syncFile(dirname(store.path));
}

/** Removes an analytics file and its companions (the WAL, a half-written rewrite). */
export function removeAnalyticsFile(path: string): void {
  if (path === ":memory:") return;
  for (const f of [path, `${path}.wal`, `${path}.compact`, `${path}.compact.wal`]) {
    rmSync(f, { force: true });
  }
}

/** Whether opening the file failed because another process holds DuckDB's lock on it. */
export function isHeldByAnotherProcess(err: unknown): boolean {
  return err instanceof Error && /Could not set lock on file/.test(err.message);
}
