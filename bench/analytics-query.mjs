/**
 * The analytics engine on the issue-25 site (`npm run bench:analytics`,
 * issue 30): EVENTS events (default 1,000,000; 10,000,000 is the issue's
 * size) from EVENTS/10 visitors and PAYMENTS payments over 90 days, loaded
 * into SQLite through the store's commit paths (bench/lib/overview-site.mjs),
 * then the DuckDB analytics store built from it by the feed (the rebuild a
 * new file gets), its bytes per event, and the p50 and p99 of RUNS runs of
 * the bench's queries over the 90 days (`directQueries` in
 * bench/lib/analytics-site.mjs, the one list of them). Deterministic data at
 * a fixed date. docs/performance.md, "Analytics store".
 *
 * Knobs (issue 30's site at scale): VISITORS (default EVENTS/10), PAYMENTS,
 * EVENTS; RUNS per query (default 5; p50 and p99 of them). LOAD=direct writes
 * the events straight into the DuckDB file and the rest through SQLite and the
 * feed (bench/lib/analytics-site.mjs: realistic visits, channels and pages;
 * minutes at 10M instead of an hour); DATA_DIR keeps (or reuses) that data
 * directory instead of a temporary one. ENGINE=<checkout> times another
 * build's engine (its src/store/duckdb/analytics-engine.ts) on the same data,
 * for before/after runs interleaved on one file.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createAnalyticsFeed } from "../src/store/duckdb/analytics-feed.ts";
import { openAnalyticsStore } from "../src/store/duckdb/analytics-store.ts";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { directQueries, loadAnalyticsSite, SITE_ID } from "./lib/analytics-site.mjs";
import { newGeneration } from "./lib/new-generation.mjs";
import { loadOverviewSite, OVERVIEW_SITE } from "./lib/overview-site.mjs";

const { createDuckDbAnalytics } = await import(
  `${process.env.ENGINE ? `${process.env.ENGINE}/` : "../"}src/store/duckdb/analytics-engine.ts`
);

/** SQLite's largest tables and indexes after the move, in bytes. */
let sqliteTables = {};

/** The bytes of a SQLite file's free pages (freelist), after a checkpoint. */
function sqliteFreeBytes(path) {
  const db = new Database(path);
  try {
    db.pragma("wal_checkpoint(TRUNCATE)");
    const pageSize = db.pragma("page_size", { simple: true });
    // Where SQLite's used bytes are, by table and index (the largest).
    sqliteTables = Object.fromEntries(
      db
        .prepare(
          "SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC LIMIT 10",
        )
        .all()
        .map((r) => [r.name, r.bytes]),
    );
    return db.pragma("freelist_count", { simple: true }) * pageSize;
  } finally {
    db.close();
  }
}
const NOW = Number(process.env.NOW ?? Date.UTC(2026, 2, 11, 12));
const EVENTS = Number(process.env.EVENTS ?? 1_000_000);
const VISITORS = Number(process.env.VISITORS ?? Math.max(1, Math.floor(EVENTS / 10)));
const PAYMENTS = Number(process.env.PAYMENTS ?? 100_000);
const THREADS = Number(process.env.ANALYTICS_THREADS ?? 2);
const RUNS = Number(process.env.RUNS ?? 5);
const DIRECT = process.env.LOAD === "direct";

if (DIRECT) await runDirect();
else await runThroughFeed();

/** Peak RSS of this process while `work` runs (sampled every 50 ms), in MiB. */
async function withRssPeak(work) {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 50);
  try {
    const out = await work();
    return { out, rssPeakMiB: Math.round(Math.max(peak, process.memoryUsage().rss) / 2 ** 20) };
  } finally {
    clearInterval(timer);
  }
}

/** p50 and p99 of a list of ms. */
function percentiles(runs) {
  const s = [...runs].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { p50Ms: at(0.5), p99Ms: at(0.99), runsMs: runs };
}

/**
 * Times each query and funnel RUNS times, interleaved round by round, each
 * alone: a new write generation before each (bench/lib/new-generation.mjs).
 */
async function timeAll(engine, queries, funnels, analytics) {
  const runs = Object.fromEntries(
    [...Object.keys(queries), ...Object.keys(funnels)].map((k) => [k, []]),
  );
  for (let k = 0; k < RUNS; k++) {
    for (const [name, p] of Object.entries(queries)) {
      await newGeneration(analytics);
      const s = performance.now();
      await engine.query(p);
      runs[name].push(Math.round(performance.now() - s));
      // Progress on stderr: a run at 10M on a loaded machine takes long.
      process.stderr.write(`${name}: ${runs[name].at(-1)} ms\n`);
    }
    for (const [name, p] of Object.entries(funnels)) {
      await newGeneration(analytics);
      const s = performance.now();
      await engine.funnel(p);
      runs[name].push(Math.round(performance.now() - s));
      process.stderr.write(`${name}: ${runs[name].at(-1)} ms\n`);
    }
  }
  return Object.fromEntries(Object.entries(runs).map(([k, r]) => [k, percentiles(r)]));
}

/** The issue's site written straight into DuckDB (bench/lib/analytics-site.mjs), then the queries. */
async function runDirect() {
  const dir = process.env.DATA_DIR ?? mkdtempSync(join(tmpdir(), "bench-analytics-"));
  let load = "reused";
  if (!existsSync(join(dir, "analytics.duckdb"))) {
    load = await loadAnalyticsSite({
      dir,
      now: NOW,
      events: EVENTS,
      visitors: VISITORS,
      payments: PAYMENTS,
      threads: THREADS,
      memoryLimit: process.env.ANALYTICS_MEMORY_LIMIT ?? "512MB",
    });
  }
  const analytics = await openAnalyticsStore({
    path: join(dir, "analytics.duckdb"),
    threads: THREADS,
    memoryLimit: process.env.ANALYTICS_MEMORY_LIMIT ?? "512MB",
  });
  try {
    const counts = (
      await analytics.writer.runAndReadAll(
        "SELECT (SELECT count(*) FROM events), (SELECT count(DISTINCT vid) FROM events), (SELECT count(*) FROM visits), (SELECT count(*) FROM payments), (SELECT count(*) FROM links)",
      )
    )
      .getRows()[0]
      .map(Number);
    const files = readdirSync(dir);
    const size = (name) => statSync(join(dir, name)).size;
    const duckBytes = files
      .filter((f) => f.startsWith("analytics"))
      .reduce((a, f) => a + size(f), 0);
    const engine = createDuckDbAnalytics({ analytics, timeoutMs: 120_000, perSite: 4 });
    const { queries, funnels } = directQueries(SITE_ID, NOW);
    const { out: results, rssPeakMiB } = await withRssPeak(() =>
      timeAll(engine, queries, funnels, analytics),
    );
    console.log(
      JSON.stringify(
        {
          load: "direct",
          engine: process.env.ENGINE ?? "this checkout",
          events: counts[0],
          visitors: counts[1],
          visits: counts[2],
          payments: counts[3],
          links: counts[4],
          threads: THREADS,
          memoryLimit: process.env.ANALYTICS_MEMORY_LIMIT ?? "512MB",
          loadSeconds: load,
          duckdbBytesPerEvent: Math.round((duckBytes / counts[0]) * 10) / 10,
          rssPeakMiB,
          loadavg: readFileSync("/proc/loadavg", "utf8").trim(),
          queries: results,
        },
        null,
        2,
      ),
    );
  } finally {
    analytics.close();
    if (!process.env.DATA_DIR) rmSync(dir, { recursive: true, force: true });
  }
}

/** The issue-25 site loaded into SQLite, moved by the feed (the rebuild a new file gets). */
async function runThroughFeed() {
  const dir = mkdtempSync(join(tmpdir(), "bench-analytics-"));
  const sqlitePath = join(dir, "ingest.sqlite");
  const store = createSqliteStore(sqlitePath);
  try {
    const load = await loadOverviewSite({ store, now: NOW, events: EVENTS, payments: PAYMENTS });
    const analytics = await openAnalyticsStore({
      path: join(dir, "analytics.duckdb"),
      threads: THREADS,
      memoryLimit: process.env.ANALYTICS_MEMORY_LIMIT ?? "512MB",
    });
    // The mover's deletes of the outbox (migration 19): the time between two slices of
    // 1,000 (the delete, then one turn of the event loop) is what each slice holds SQLite's
    // write lock at most.
    const slices = [];
    let sliceAt = performance.now();
    const feed = createAnalyticsFeed({
      sqlitePath,
      analytics,
      intervalMs: 1000,
      faults: {
        duringDelete() {
          const now = performance.now();
          slices.push(now - sliceAt);
          sliceAt = now;
        },
      },
    });
    const s = performance.now();
    sliceAt = s;
    await feed.runOnce();
    const rebuildSeconds = (performance.now() - s) / 1000;
    slices.shift(); // the first interval is the rebuild itself
    slices.sort((a, b) => a - b);
    await analytics.writer.run("CHECKPOINT");
    // SQLite after the move: the outbox is empty, its pages free in the file; SQLite reuses
    // them for the next events (the file does not grow while the feed keeps up). The
    // steady-state size is the file without its free pages (what a VACUUM would leave).
    const sqliteFree = sqliteFreeBytes(sqlitePath);
    const size = (name) => statSync(join(dir, name)).size;
    const files = readdirSync(dir);
    const duckBytes = files
      .filter((f) => f.startsWith("analytics"))
      .reduce((a, f) => a + size(f), 0);
    const allBytes = files.reduce((a, f) => a + size(f), 0);

    const engine = createDuckDbAnalytics({ analytics, timeoutMs: 60_000, perSite: 4 });
    // The one list of the bench's queries (bench/lib/analytics-site.mjs), on this site.
    const { queries, funnels } = directQueries(OVERVIEW_SITE, NOW);
    const results = await timeAll(engine, queries, funnels, analytics);
    await feed.stop();
    analytics.close();
    console.log(
      JSON.stringify(
        {
          events: EVENTS,
          payments: PAYMENTS,
          threads: THREADS,
          loadSeconds: load,
          rebuildSeconds: Math.round(rebuildSeconds * 10) / 10,
          duckdbBytesPerEvent: Math.round((duckBytes / EVENTS) * 10) / 10,
          dataDirectoryBytesPerEvent: Math.round((allBytes / EVENTS) * 10) / 10,
          dataDirectoryBytesPerEventWithoutSqliteFreePages:
            Math.round(((allBytes - sqliteFree) / EVENTS) * 10) / 10,
          files: Object.fromEntries(files.map((f) => [f, size(f)])),
          sqliteFreeBytes: sqliteFree,
          sqliteTables,
          outboxDeleteSliceMs: {
            slices: slices.length,
            p50: Math.round((slices[Math.floor(slices.length / 2)] ?? 0) * 100) / 100,
            p99: Math.round((slices[Math.floor(slices.length * 0.99)] ?? 0) * 100) / 100,
            usPerEvent:
              Math.round((slices.reduce((a, b) => a + b, 0) / (slices.length * 1000)) * 1000 * 10) /
              10,
          },
          rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
          queries: results,
        },
        null,
        2,
      ),
    );
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
