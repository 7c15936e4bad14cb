/**
 * Bytes on disk per stored event on the issue-25 site (`npm run bench:bytes`;
 * bench/analytics-query.mjs is `npm run bench:analytics`, the query figures),
 * issue 30:EVENTS events (default 1,000,000; 10,000,000 is the issue's
 * size) from VISITORS visitors (default EVENTS/10) and PAYMENTS payments
 * (default EVENTS/10; the site has EVENTS/100) from CUSTOMERS
 * customers (default 20,000) over 90 days, loaded into SQLite through the
 * store's commit paths (bench/lib/overview-site.mjs), then the DuckDB
 * analytics store built from it by the feed (the rebuild a new file gets),
 * the bytes on disk per event of every file of the data directory, where
 * they are (SQLite's tables and indexes from `dbstat`, DuckDB's tables from
 * `pragma_storage_info`); bytes only (the queries' times are `npm run
 * bench:analytics`, bench/analytics-query.mjs). LIVE=1 runs the feed after
 * each batch of events the load commits, as a running server's feed moves
 * them, instead of once after the whole load. KEEP=1 keeps the data directory.
 * VISITOR_IDS=hex gives visitors ids of 32 hex characters, as the service
 * makes them, instead of the short `v<n>`. The rows are written oldest first,
 * as a live site's arrive (ORDER=newest: newest first, as before issue 30's
 * bytes step; B-tree indexes on time fill their pages half when written
 * backwards). Deterministic data at a
 * fixed date. docs/performance.md, "Analytics store" and "Bytes on disk".
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createAnalyticsFeed } from "../src/store/duckdb/analytics-feed.ts";
import { openAnalyticsStore } from "../src/store/duckdb/analytics-store.ts";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { loadOverviewSite } from "./lib/overview-site.mjs";

/** Rounded to one decimal. */
const r1 = (x) => Math.round(x * 10) / 10;

/**
 * Where SQLite's bytes are: every table and index (`dbstat`, its pages), the
 * free pages, the page size and the auto-vacuum mode. Read-only: the file is
 * measured as the service left it.
 */
function sqliteBreakdown(path, events) {
  const db = new Database(path, { readonly: true });
  try {
    const pageSize = db.pragma("page_size", { simple: true });
    const tables = Object.fromEntries(
      db
        .prepare("SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC")
        .all()
        .filter((r) => r.bytes > pageSize)
        .map((r) => [r.name, { bytes: r.bytes, perEvent: r1(r.bytes / events) }]),
    );
    return {
      pageSize,
      autoVacuum: db.pragma("auto_vacuum", { simple: true }),
      pages: db.pragma("page_count", { simple: true }),
      freeBytes: db.pragma("freelist_count", { simple: true }) * pageSize,
      tables,
    };
  } finally {
    db.close();
  }
}

/**
 * Where DuckDB's bytes are, estimated from `pragma_storage_info`: a segment
 * takes its block from its offset to the next segment's (or the block's
 * end), plus its additional blocks; summed per table and per column.
 */
async function duckdbBreakdown(connection, events) {
  const rows = (sql) => connection.runAndReadAll(sql).then((r) => r.getRowObjectsJson());
  const size = (await rows("SELECT * FROM pragma_database_size()"))[0];
  const blockSize = Number(size.block_size);
  const tables = (await rows("SELECT table_name FROM duckdb_tables()")).map((t) => t.table_name);
  const segments = [];
  for (const table of tables) {
    const info = await rows(
      `SELECT column_name, block_id, block_offset, additional_block_ids::VARCHAR AS extra
       FROM pragma_storage_info('${table}') WHERE persistent AND block_id >= 0`,
    );
    for (const s of info) {
      const extra = String(s.extra ?? "[]").replace(/[[\]\s]/g, "");
      segments.push({
        table,
        column: s.column_name,
        block: Number(s.block_id),
        offset: Number(s.block_offset),
        extra: extra === "" ? 0 : extra.split(",").length,
      });
    }
  }
  const byBlock = new Map();
  for (const s of segments) byBlock.set(s.block, [...(byBlock.get(s.block) ?? []), s]);
  const perTable = {};
  const perColumn = {};
  for (const list of byBlock.values()) {
    list.sort((a, b) => a.offset - b.offset);
    list.forEach((s, i) => {
      const end = i + 1 < list.length ? list[i + 1].offset : blockSize;
      const bytes = end - s.offset + s.extra * blockSize;
      perTable[s.table] = (perTable[s.table] ?? 0) + bytes;
      const key = `${s.table}.${s.column}`;
      perColumn[key] = (perColumn[key] ?? 0) + bytes;
    });
  }
  const perEvent = (o, limit) =>
    Object.fromEntries(
      Object.entries(o)
        .sort((a, b) => b[1] - a[1])
        .slice(0, limit)
        .map(([k, v]) => [k, { bytes: v, perEvent: r1(v / events) }]),
    );
  return {
    blockSize,
    totalBlocks: Number(size.total_blocks),
    usedBlocks: Number(size.used_blocks),
    freeBlocks: Number(size.free_blocks),
    tables: perEvent(perTable, 100),
    columns: perEvent(perColumn, 15),
  };
}

/** p50, p99 and max of a list of durations, in ms. */
function spread(list) {
  const sorted = [...list].sort((a, b) => a - b);
  const at = (q) => Math.round((sorted[Math.floor(sorted.length * q)] ?? 0) * 100) / 100;
  return { count: sorted.length, p50: at(0.5), p99: at(0.99), max: at(1 - 1e-9) };
}

const NOW = Date.UTC(2026, 2, 11, 12);
const EVENTS = Number(process.env.EVENTS ?? 1_000_000);
const PAYMENTS = Number(process.env.PAYMENTS ?? Math.floor(EVENTS / 10));
const VISITORS = Number(process.env.VISITORS ?? Math.floor(EVENTS / 10));
const CUSTOMERS = Number(process.env.CUSTOMERS ?? 20_000);
const LIVE = process.env.LIVE === "1";
const HEX_IDS = process.env.VISITOR_IDS === "hex";
const OLDEST_FIRST = process.env.ORDER !== "newest";
const THREADS = Number(process.env.ANALYTICS_THREADS ?? 2);

const dir = mkdtempSync(join(tmpdir(), "bench-analytics-"));
const sqlitePath = join(dir, "ingest.sqlite");
const store = createSqliteStore(sqlitePath);
try {
  const analytics = await openAnalyticsStore({
    path: join(dir, "analytics.duckdb"),
    threads: THREADS,
    memoryLimit: process.env.ANALYTICS_MEMORY_LIMIT ?? "512MB",
  });
  // The mover's deletes of the outbox (migration 19), a slice of 1,000 per transaction,
  // then its incremental_vacuum steps giving the freed pages back: each holds SQLite's
  // write lock for its duration.
  const lockSteps = { delete: [], reclaim: [] };
  const feed = createAnalyticsFeed({
    sqlitePath,
    analytics,
    intervalMs: 1000,
    onLockStep: (kind, ms) => lockSteps[kind].push(ms),
  });
  const load = await loadOverviewSite({
    store,
    now: NOW,
    events: EVENTS,
    payments: PAYMENTS,
    visitors: VISITORS,
    customers: CUSTOMERS,
    // LIVE=1: the feed moves each committed batch of events as a server's does (then its
    // outbox pages are reused or given back as it goes); else it moves them all at the end.
    afterEvents: LIVE ? () => feed.runOnce() : undefined,
    hexIds: HEX_IDS,
    oldestFirst: OLDEST_FIRST,
  });
  let s = performance.now();
  await feed.runOnce();
  const rebuildSeconds = (performance.now() - s) / 1000;
  // The next poll finds nothing to apply (the feed is idle): it checkpoints a grown WAL.
  s = performance.now();
  await feed.runOnce();
  const idlePollMs = performance.now() - s;
  const size = (name) => statSync(join(dir, name)).size;
  // As the feed left them: DuckDB's WAL is checkpointed when it passes 16 MB and at close.
  const beforeCheckpoint = readdirSync(dir).reduce((a, f) => a + size(f), 0);
  await analytics.writer.run("CHECKPOINT");
  // Every file of the data directory (WAL files included).
  // Sized now: DuckDB's temporary directory (analytics.duckdb.tmp) goes at close.
  const sized = Object.fromEntries(readdirSync(dir).map((f) => [f, size(f)]));
  const files = Object.keys(sized);
  const duckBytes = files
    .filter((f) => f.startsWith("analytics"))
    .reduce((a, f) => a + sized[f], 0);
  const allBytes = files.reduce((a, f) => a + sized[f], 0);
  const sqlite = sqliteBreakdown(sqlitePath, EVENTS);
  const duckdb = await duckdbBreakdown(analytics.writer, EVENTS);

  await feed.stop();
  analytics.close();
  console.log(
    JSON.stringify(
      {
        events: EVENTS,
        live: LIVE,
        hexVisitorIds: HEX_IDS,
        order: OLDEST_FIRST ? "oldest first" : "newest first",
        visitors: VISITORS,
        payments: PAYMENTS,
        customers: CUSTOMERS,
        threads: THREADS,
        loadSeconds: load,
        // Without LIVE: the rebuild of a new analytics file from the loaded outbox.
        lastMoveSeconds: r1(rebuildSeconds),
        dataDirectoryBytesPerEvent: r1(allBytes / EVENTS),
        beforeDuckdbCheckpointBytesPerEvent: r1(beforeCheckpoint / EVENTS),
        duckdbBytesPerEvent: r1(duckBytes / EVENTS),
        sqliteBytesPerEvent: r1((allBytes - duckBytes) / EVENTS),
        files: Object.fromEntries(
          files.map((f) => [f, { bytes: sized[f], perEvent: r1(sized[f] / EVENTS) }]),
        ),
        sqlite,
        duckdb,
        outboxDeleteSliceMs: {
          ...spread(lockSteps.delete),
          usPerEvent: r1((lockSteps.delete.reduce((a, b) => a + b, 0) / EVENTS) * 1000),
        },
        reclaimStepMs: spread(lockSteps.reclaim),
        idlePollMs: r1(idlePollMs),
        rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
      },
      null,
      2,
    ),
  );
} finally {
  await store.close();
  // KEEP=1 leaves the data directory for a look inside (its path is printed on stderr).
  if (process.env.KEEP === "1") console.error(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
