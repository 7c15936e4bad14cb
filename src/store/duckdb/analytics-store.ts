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
import { mkdirSync, renameSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import { ensureVisitsTable } from "./visits-maintenance.js";

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
  readonly instance: DuckDBInstance;
  /** The feed's connection (its transactions append and apply changes). */
  readonly writer: DuckDBConnection;
  /** A new connection for one query (each can be interrupted on its own). */
  connect(): Promise<DuckDBConnection>;
  close(): void;
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
  click_ids VARCHAR
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

/** Opens (creating when needed) the analytics store and its schema. */
export async function openAnalyticsStore(options: AnalyticsStoreOptions): Promise<AnalyticsStore> {
  if (options.path !== ":memory:") mkdirSync(dirname(options.path), { recursive: true });
  const instance = await DuckDBInstance.create(options.path, {
    threads: String(options.threads),
    memory_limit: options.memoryLimit,
  });
  const writer = await instance.connect();
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
  await ensureVisitsTable(writer);
  let closed = false;
  return {
    path: options.path,
    instance,
    writer,
    connect: () => instance.connect(),
    close() {
      if (closed) return;
      closed = true;
      writer.closeSync();
      instance.closeSync();
    },
  };
}

/**
 * Closes the store after rewriting its file: every table is copied into a
 * new file (`COPY FROM DATABASE`), which then replaces the old one. DuckDB
 * marks deleted rows and leaves their bytes in blocks it reuses later; the
 * copy holds only the rows that are live, so an erased or pruned row's
 * strings leave the disk too (docs/privacy.md). A store in memory just closes.
 */
export async function closeCompacted(store: AnalyticsStore): Promise<void> {
  if (store.path === ":memory:") return store.close();
  const next = `${store.path}.compact`;
  rmSync(next, { force: true });
  rmSync(`${next}.wal`, { force: true });
  const name = (await store.writer.runAndReadAll("SELECT current_database()")).getRows()[0]?.[0];
  await store.writer.run(`ATTACH '${next.replaceAll("'", "''")}' AS compacted`);
  await store.writer.run(`COPY FROM DATABASE "${String(name).replaceAll('"', '""')}" TO compacted`);
  await store.writer.run("DETACH compacted");
  store.close();
  renameSync(next, store.path);
  rmSync(`${store.path}.wal`, { force: true });
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
