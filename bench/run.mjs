/**
 * `npm run bench`: throughput and latency of the built server on the embedded
 * SQLite store, against a bare-Fastify baseline measured in the same run.
 *
 * Every scenario starts `node dist/src/main.js` as a separate process on a
 * fresh data directory with its own tenant, warms it up, measures it from
 * this process (autocannon for HTTP, pre-encoded gRPC frames over HTTP/2), counts what was
 * durably stored by reading the SQLite file, and stops it. Prints a markdown
 * table and writes bench/results/<timestamp>.json. See docs/performance.md.
 *
 * The scenarios are data (lib/scenarios.mjs); a runner here turns one into a
 * result row; the targets, the table and the result document are pure
 * functions of the rows (lib/report.mjs); `main` prints and `saveResult` writes.
 *
 * Settings (environment):
 *   BENCH_DURATION      seconds per measured phase (default 10)
 *   BENCH_WARMUP        seconds of unmeasured load before each scenario (default 2)
 *   BENCH_CONNECTIONS   autocannon connections (default 64)
 *   BENCH_GRPC_CONCURRENCY  gRPC calls in flight (default 64)
 *   BENCH_GRPC_CLIENT   raw (default: pre-encoded frames over node:http2) or connect (connect-node)
 *   BENCH_ONLY          comma-separated scenario ids to run: baseline,a,b,c,d,e,f,r and the
 *                       WORKERS rows a2,b2,f2 (default: all of these), c2 and f2x (only when named)
 *   BENCH_WORKERS       N for the extra WORKERS=N rows (default 2; 0 = none;
 *                       skipped when the built server has no WORKERS setting)
 *   BENCH_CPU_PROF_DIR  run the server under `node --cpu-prof` writing profiles there
 *   BENCH_SERVER_ENV    extra server env, e.g. "INGEST_FLUSH_MS=1,INGEST_BATCH_MAX=1024"
 *   BENCH_NO_RATE=1     skip the runs at 70% of the maximum rate
 *   BENCH_DIST          the build to measure (default dist/ of this checkout)
 *   BENCH_IDLE_WAIT     seconds to wait for a quiet machine before each scenario (default 20)
 *   BENCH_NO_SAVE=1     do not write a result file
 *   BENCH_OVERVIEW_EVENTS, BENCH_OVERVIEW_PAYMENTS  size of row o's site (default
 *                       10,000,000 events and 100,000 payments: issue 25's)
 */
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { create, toBinary } from "@bufbuild/protobuf";
import Database from "better-sqlite3";
import { batchMessages } from "./lib/bodies.mjs";
import { cannon, grpcConnectLoad, grpcFrame, grpcRawLoad, paced } from "./lib/load.mjs";
import { writePageview } from "./lib/new-generation.mjs";
import { writeOldPageviews } from "./lib/old-events.mjs";
import { loadOverviewSite, OVERVIEW_CUSTOMER, OVERVIEW_SITE } from "./lib/overview-site.mjs";
import {
  cpuMeter,
  freePort,
  killAll,
  rssSampler,
  startProcess,
  waitForQuiet,
} from "./lib/procs.mjs";
import { resultDocument, resultFileName, resultRow, round } from "./lib/report.mjs";
import { planScenarios } from "./lib/scenarios.mjs";
import {
  countRows,
  freshTenant as freshTenantOf,
  headersFor,
  measureStored,
  SERVER_ENV,
  startServer as startServerOf,
  storedRows,
} from "./lib/server.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The run's settings, read once from the environment (see the header). */
function readSettings(env) {
  const extraEnv = Object.fromEntries(
    (env.BENCH_SERVER_ENV ?? "")
      .split(",")
      .filter(Boolean)
      .map((kv) => kv.split("=")),
  );
  return {
    /** The build under test (BENCH_DIST: another checkout's dist/, for A/B comparisons). */
    dist: env.BENCH_DIST ?? join(ROOT, "dist"),
    duration: Number(env.BENCH_DURATION ?? 10),
    warmup: Number(env.BENCH_WARMUP ?? 2),
    connections: Number(env.BENCH_CONNECTIONS ?? 64),
    grpcConcurrency: Number(env.BENCH_GRPC_CONCURRENCY ?? 64),
    grpcConnections: Number(env.BENCH_GRPC_CONNECTIONS ?? 1),
    grpcClient: env.BENCH_GRPC_CLIENT ?? "raw",
    only: env.BENCH_ONLY ? new Set(env.BENCH_ONLY.split(",").map((s) => s.trim())) : undefined,
    workers: Number(env.BENCH_WORKERS ?? 2),
    profDir: env.BENCH_CPU_PROF_DIR,
    idleWait: Number(env.BENCH_IDLE_WAIT ?? 20),
    noRate: env.BENCH_NO_RATE === "1",
    noSave: env.BENCH_NO_SAVE === "1",
    overviewEvents: Number(env.BENCH_OVERVIEW_EVENTS ?? 10_000_000),
    overviewPayments: Number(env.BENCH_OVERVIEW_PAYMENTS ?? 100_000),
    /** Server settings of every run (the defaults, spelled out so the result file records them). */
    serverEnv: { ...SERVER_ENV, ...extraEnv },
  };
}

const settings = readSettings(process.env);
const tmpRoot = mkdtempSync(join(os.tmpdir(), "ingest-bench-"));
process.on("exit", () => rmSync(tmpRoot, { recursive: true, force: true }));

const log = (msg) => process.stderr.write(`${msg}\n`);

// ---------------------------------------------------------------- tenant and server

/** A fresh data directory with one Scale account, site example.com and an events+payments key. */
const freshTenant = (name) => freshTenantOf(settings.dist, join(tmpRoot, name));

function serverSupportsWorkers() {
  try {
    return /WORKERS/.test(
      readFileSync(join(settings.dist, "src/config.js"), "utf8") +
        readFileSync(join(settings.dist, "src/main.js"), "utf8"),
    );
  } catch {
    return false;
  }
}

function startServer(tenant, { workers, profile, serverEnv } = {}) {
  return startServerOf({
    dist: settings.dist,
    dbPath: tenant.dbPath,
    profDir: profile ? settings.profDir : undefined,
    env: {
      ...settings.serverEnv,
      ...(workers ? { WORKERS: String(workers) } : {}),
      ...serverEnv,
    },
  });
}

/** Other jobs on the machine skew the numbers: wait for a quiet moment first. */
async function quiet() {
  if (settings.idleWait <= 0) return undefined;
  const busy = await waitForQuiet({ maxWaitMs: settings.idleWait * 1000 });
  if (busy > 0.15) log(`  (machine still busy: ${busy} cores in use by others)`);
  return busy;
}

// ---------------------------------------------------------------- runners: a scenario in, a row out

/** The bare-Fastify baseline server (bench/baseline.mjs) under the scenario's bodies. */
async function runBaseline(scenario) {
  const quietBefore = await quiet();
  const port = await freePort();
  const server = await startProcess({
    name: "baseline",
    args: [join(ROOT, "bench/baseline.mjs")],
    port,
    env: { PORT: String(port) },
  });
  const rss = rssSampler(server.pid);
  try {
    const bodies = scenario.makeBodies();
    const load = {
      url: server.url,
      path: scenario.path,
      headers: headersFor(),
      bodyOf: (i) => bodies[i % bodies.length],
      connections: settings.connections,
    };
    if (settings.warmup > 0) await cannon({ ...load, durationSec: settings.warmup });
    rss.reset();
    const cpu = cpuMeter(server.pid);
    const max = await cannon({ ...load, durationSec: settings.duration });
    const cpuUse = cpu.stop();
    const row = resultRow(scenario, {
      run: max,
      rateLimited503: 0,
      errors: max.errors + max.timeouts,
      peakRssMb: rss.peak(),
      cpuUse,
      quietBefore,
    });
    log(
      `  ${row.id}: ${Math.round(row.requestsPerSec)} req/s, server ${Math.round(row.cpu.serverUsPerRequest)} µs CPU/request, others ${cpuUse.foreignCores} cores`,
    );
    return row;
  } finally {
    rss.stop();
    await server.stop();
  }
}

/**
 * One HTTP scenario on a fresh server: warm-up, measured max-throughput run,
 * stored-row count, optional 70%-of-max latency runs.
 */
async function runHttp(scenario) {
  const { id, label, path, table, eventsPerRequest, at70 = false, workers, serverEnv } = scenario;
  const quietBefore = await quiet();
  const tenant = await freshTenant(id);
  const server = await startServer(tenant, { workers, profile: true, serverEnv });
  const rss = rssSampler(server.pid);
  try {
    // makeBodies gives a pool of bodies, or a function of the request's index.
    const made = scenario.makeBodies(tenant);
    const bodyOf = typeof made === "function" ? made : (i) => made[i % made.length];
    const headers = scenario.headers ?? headersFor(tenant.key);
    const load = { url: server.url, path, headers, bodyOf, connections: settings.connections };
    const {
      run: max,
      stored,
      measured: cpuUse,
    } = await measureStored({
      load,
      dbPath: tenant.dbPath,
      table,
      warmupSec: settings.warmup,
      durationSec: settings.duration,
      between: () => {
        rss.reset();
        return cpuMeter(server.pid);
      },
    });
    const row = resultRow(scenario, {
      run: max,
      eventsPerSec: eventsPerRequest ? stored / max.durationSec : undefined,
      ackedEventsPerSec: eventsPerRequest
        ? (max.ok * eventsPerRequest) / max.durationSec
        : undefined,
      stored,
      rateLimited503: max.statusCodes["503"] ?? 0,
      errors: max.errors + max.timeouts,
      peakRssMb: rss.peak(),
      cpuUse,
      quietBefore,
    });
    if (at70 && !settings.noRate) {
      const rate = 0.7 * max.okPerSec;
      const pacedRun = await paced({
        url: server.url,
        path,
        headers,
        bodyOf: typeof made === "function" ? (i) => made(i, "paced") : bodyOf,
        rate,
        durationSec: settings.duration,
        maxSockets: settings.connections,
        warmupSec: 2,
      });
      const cannon70 = await cannon({ ...load, durationSec: settings.duration, overallRate: rate });
      row.at70 = { rate, paced: pacedRun, autocannon: cannon70 };
      row.peakRssMb = rss.peak();
    }
    log(
      `  ${label}: ${Math.round(row.requestsPerSec)} req/s, p99 ${row.p99Ms} ms, server ${Math.round(row.cpu.serverUsPerRequest)} µs CPU/request, others ${cpuUse.foreignCores} cores`,
    );
    return row;
  } finally {
    rss.stop();
    await server.stop();
  }
}

/** gRPC RecordEvents on a fresh server (pre-encoded frames, or connect-node with BENCH_GRPC_CLIENT=connect). */
async function runGrpc(scenario) {
  const { id, label, workers } = scenario;
  const quietBefore = await quiet();
  const tenant = await freshTenant(id);
  const server = await startServer(tenant, { workers, profile: true });
  const rss = rssSampler(server.pid);
  try {
    const { EventsService, RecordEventsRequestSchema } = await import(
      join(settings.dist, "gen/ingest/v1/events_pb.js")
    );
    const common = {
      url: server.url,
      service: EventsService,
      method: "recordEvents",
      schema: RecordEventsRequestSchema,
      messages: batchMessages(tenant.siteId, 256),
      apiKey: tenant.key,
      concurrency: settings.grpcConcurrency,
      connections: settings.grpcConnections,
    };
    // The raw client sends pre-encoded frames, as autocannon sends pre-built bodies: the
    // connect-node client spends ~0.5 core encoding and was the bottleneck (docs/performance.md).
    const grpcLoad = settings.grpcClient === "connect" ? grpcConnectLoad : grpcRawLoad;
    if (settings.grpcClient !== "connect") {
      common.path = `/${EventsService.typeName}/${EventsService.method.recordEvents.name}`;
      common.frames = common.messages.map((m) =>
        grpcFrame(toBinary(RecordEventsRequestSchema, create(RecordEventsRequestSchema, m))),
      );
      common.eventsPerCall = 50;
    }
    if (settings.warmup > 0) await grpcLoad({ ...common, durationSec: settings.warmup });
    const before = storedRows(tenant.dbPath, "events");
    rss.reset();
    const cpu = cpuMeter(server.pid);
    const run = await grpcLoad({ ...common, durationSec: settings.duration });
    const cpuUse = cpu.stop();
    await new Promise((r) => setTimeout(r, 300));
    const stored = storedRows(tenant.dbPath, "events") - before;
    const row = resultRow(scenario, {
      run,
      eventsPerSec: stored / run.durationSec,
      ackedEventsPerSec: run.acceptedEvents / run.durationSec,
      stored,
      rateLimited503: run.errorCodes[14] ?? 0, // Code.Unavailable
      errors: 0,
      peakRssMb: rss.peak(),
      cpuUse,
      quietBefore,
    });
    log(
      `  ${label}: ${Math.round(row.requestsPerSec)} calls/s, ${Math.round(row.eventsPerSec)} events/s`,
    );
    return row;
  } finally {
    rss.stop();
    await server.stop();
  }
}

/**
 * o) The dashboard's calls at scale: a store holding issue 25's site (10
 * million events, 100,000 payments over 90 days, loaded through the commit
 * paths as in production), the built server started on it (its feed moves
 * the site into the analytics store before the first SiteOverview answers),
 * and each ReportsService call behind a 90-day view (GetAccess, SiteOverview,
 * CustomerJourney) sent as the dashboard sends it (Connect JSON over HTTP,
 * ADMIN_TOKEN), one at a time: two unmeasured, then `scenario.calls`
 * measured, each after a pageview the feed applied (a new write generation:
 * no call is answered from what the one before computed). The target: every call under 200 ms. The one measure of
 * SiteOverview at scale (the in-process script went with the
 * rollups it timed).
 */
async function runOverview(scenario) {
  const { id, label, calls, store: kind } = scenario;
  const { overviewEvents: events, overviewPayments: payments } = settings;
  const mongoUri = process.env.MONGODB_URI;
  if (kind === "mongodb" && !mongoUri) {
    log(`  ${id}) skipped: MONGODB_URI not set`);
    return { id, label, events, payments, skipped: "MONGODB_URI not set" };
  }
  const { openStore } = await import(join(settings.dist, "src/store/open-store.js"));
  let storeUrl;
  let dropDatabase = async () => {};
  if (kind === "mongodb") {
    // A database of its own, dropped at the end.
    const url = new URL(mongoUri);
    const name = `ingest_bench_${Date.now()}`;
    url.pathname = `/${name}`;
    storeUrl = url.toString();
    dropDatabase = async () => {
      const { MongoClient } = await import("mongodb");
      const client = new MongoClient(storeUrl);
      try {
        await client.db(name).dropDatabase();
      } finally {
        await client.close();
      }
    };
  } else {
    const dir = join(tmpRoot, id);
    mkdirSync(dir, { recursive: true });
    storeUrl = `sqlite:${join(dir, "ingest.sqlite")}`;
  }
  // A fixed "now" at midnight UTC: the dashboard's 90d is [now - 90 days, now).
  const now = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  log(
    `  ${id}) loading ${events.toLocaleString("en-US")} events, ${payments.toLocaleString("en-US")} payments into ${kind}…`,
  );
  const store = await openStore(storeUrl, { migrate: () => {} });
  let loadSeconds;
  try {
    loadSeconds = await loadOverviewSite({ store, now: now - 1, events, payments });
  } finally {
    await store.close();
  }
  const quietBefore = await quiet();
  const server = await startServer({}, { serverEnv: { STORE_URL: storeUrl } }).catch(
    async (err) => {
      await dropDatabase();
      throw err;
    },
  );
  try {
    const period = {
      from: new Date(now - 90 * 86_400_000).toISOString(),
      to: new Date(now).toISOString(),
    };
    const requests = {
      GetAccess: {},
      SiteOverview: { siteId: OVERVIEW_SITE, ...period },
      CustomerJourney: { siteId: OVERVIEW_SITE, customerId: OVERVIEW_CUSTOMER },
    };
    const timings = {};
    for (const [method, body] of Object.entries(requests)) {
      const ms = [];
      for (let i = 0; i < calls + 2; i++) {
        await writePageview(server.url, settings.serverEnv.ADMIN_TOKEN, OVERVIEW_SITE);
        const started = performance.now();
        const res = await fetch(`${server.url}/ingest.v1.ReportsService/${method}`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${settings.serverEnv.ADMIN_TOKEN}`,
          },
          body: JSON.stringify(body),
        });
        const text = await res.text();
        const took = performance.now() - started;
        if (res.status !== 200) throw new Error(`${method}: ${res.status} ${text.slice(0, 200)}`);
        if (i >= 2) ms.push(took);
      }
      ms.sort((a, b) => a - b);
      timings[method] = {
        p50Ms: round(ms[Math.floor(ms.length / 2)], 1),
        maxMs: round(ms[ms.length - 1], 1),
      };
      log(`  ${id}) ${method}: p50 ${timings[method].p50Ms} ms, max ${timings[method].maxMs} ms`);
    }
    return { id, label, store: kind, events, payments, loadSeconds, calls: timings, quietBefore };
  } finally {
    await server.stop();
    await dropDatabase();
  }
}

/**
 * Fills a fresh tenant's store with `n` events of its site, all between 10
 * and 40 days old, written straight through the store in big groups
 * (bench/lib/old-events.mjs), and returns the file.
 */
async function oldEventsTenant(id, n) {
  const tenant = await freshTenant(id);
  const { createSqliteStore } = await import(
    join(settings.dist, "src/store/sqlite/sqlite-store.js")
  );
  const store = createSqliteStore(tenant.dbPath);
  try {
    const site = await store.getSite(tenant.siteId);
    const now = Date.now();
    await writeOldPageviews({
      store,
      siteId: tenant.siteId,
      accountId: site.accountId,
      n,
      // Oldest first, as they would have arrived.
      tsOf: (j) => now - 40 * DAY_MS + Math.floor((j / n) * 30 * DAY_MS),
      visitors: 100_000,
    });
  } finally {
    await store.close();
  }
  return tenant;
}

const DAY_MS = 86_400_000;

/** The pruned-events counter the server exposes on its metrics port. */
async function prunedTotal(metricsUrl) {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const m = /^ingest_events_pruned_total (\d+(?:\.\d+)?(?:e\+\d+)?)$/m.exec(text);
  return m ? Number(m[1]) : 0;
}

/**
 * r) Single-event latency at a fixed rate during a prune of a million old
 * events, against the same without pruning, interleaved. One store is
 * prepared, then copied: the "prune" copy has the site's retention at 3 days
 * (every prepared event is older), the "keep" copy has none. Phases alternate
 * keep, prune, then prune, keep, …: each starts a server on its copy (the prune
 * copy keeps what earlier prune phases removed, so each prune phase is a
 * part of one long prune), lets it warm up (the pruner starts within
 * RETENTION_INTERVAL_MS), measures `settings.duration` seconds of paced
 * single events and reads the server's ingest_events_pruned_total before and
 * after the measured window, so the row shows the prune really ran during it.
 */
async function runRetention(scenario) {
  const { id, label, path, oldEvents, rate, phases, serverEnv } = scenario;
  const quietBefore = await quiet();
  const t0 = performance.now();
  const keep = await oldEventsTenant(id, oldEvents);
  log(`  ${id}: ${oldEvents} old events written in ${Math.round(performance.now() - t0)} ms`);
  const pruneDir = join(tmpRoot, `${id}-prune`);
  mkdirSync(pruneDir, { recursive: true });
  const prune = { ...keep, dbPath: join(pruneDir, "ingest.sqlite") };
  {
    // A consistent copy (the store is closed: one file, no WAL), then the retention set.
    const db = new Database(keep.dbPath);
    await db.backup(prune.dbPath);
    db.close();
    const copy = new Database(prune.dbPath);
    copy.prepare("UPDATE sites SET events_retention_days = 3 WHERE id = ?").run(prune.siteId);
    copy.pragma("wal_checkpoint(TRUNCATE)");
    copy.close();
    // Both files on disk before measuring: the write-back of a freshly written
    // file otherwise lands in the first phases (a first run saw 120 ms p99s).
    for (const file of [keep.dbPath, prune.dbPath]) {
      const fd = openSync(file, "r+");
      fsyncSync(fd);
      closeSync(fd);
    }
  }
  await quiet();
  const bodies = scenario.makeBodies(keep);
  const bodyOf = (i) => bodies[i % bodies.length];
  const results = { keep: [], prune: [] };
  let prunedDuring = 0;
  for (let phase = 0; phase < phases; phase++) {
    // keep, prune; prune, keep; …: neither side always runs first.
    const order = phase % 2 === 0 ? ["keep", "prune"] : ["prune", "keep"];
    for (const which of order) {
      const tenant = which === "keep" ? keep : prune;
      const metricsPort = await freePort();
      const server = await startServer(tenant, {
        serverEnv: { ...serverEnv, METRICS_PORT: String(metricsPort) },
      });
      const metricsUrl = `http://127.0.0.1:${metricsPort}`;
      try {
        const load = {
          url: server.url,
          path,
          headers: headersFor(tenant.key),
          bodyOf,
          rate,
          maxSockets: settings.connections,
        };
        // The warm-up also lets the first pruning pass begin.
        await paced({ ...load, durationSec: Math.max(1, settings.warmup), warmupSec: 0 });
        const before = await prunedTotal(metricsUrl);
        const run = await paced({ ...load, durationSec: settings.duration, warmupSec: 0 });
        const pruned = (await prunedTotal(metricsUrl)) - before;
        if (which === "prune") prunedDuring += pruned;
        else if (pruned !== 0) throw new Error("the keep copy pruned events");
        results[which].push(run);
        log(
          `  ${id} ${which} ${phase + 1}/${phases}: p99 ${round(run.latencyMs.p99, 1)} ms, ${run.ok} ok, ${run.non2xx + run.errors} failed, ${pruned} events pruned meanwhile`,
        );
      } finally {
        await server.stop();
      }
    }
  }
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  // The median of the phases' p99s: one phase disturbed by another job on the
  // shared machine (a whole phase at 10× its neighbours was seen) does not decide.
  const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(s.length / 2);
    return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  };
  const keepP99s = results.keep.map((r) => r.latencyMs.p99);
  const pruneP99s = results.prune.map((r) => r.latencyMs.p99);
  const all = [...results.keep, ...results.prune];
  const okPerSec = mean(all.map((r) => r.okPerSec));
  const row = {
    id,
    label,
    workers: 1,
    requestsPerSec: okPerSec,
    p50Ms: mean(all.map((r) => r.latencyMs.p50)),
    p99Ms: median(pruneP99s),
    non2xx: all.reduce((n, r) => n + r.non2xx, 0),
    rateLimited503: all.reduce((n, r) => n + (r.statusCodes["503"] ?? 0), 0),
    errors: all.reduce((n, r) => n + r.errors, 0),
    peakRssMb: undefined,
    quietBefore,
    retention: {
      rate,
      phases,
      oldEvents,
      keepP99s,
      pruneP99s,
      keepP99Ms: median(keepP99s),
      pruneP99Ms: median(pruneP99s),
      ratio: median(pruneP99s) / median(keepP99s),
      prunedDuring,
      left: countRows(prune.dbPath, "events"),
    },
  };
  log(
    `  ${label}: p99 ${round(row.retention.pruneP99Ms, 1)} ms during the prune vs ${round(row.retention.keepP99Ms, 1)} ms without (${round(row.retention.ratio, 2)}×), ${prunedDuring} events pruned while measured`,
  );
  return row;
}

const RUNNERS = {
  baseline: runBaseline,
  http: runHttp,
  grpc: runGrpc,
  retention: runRetention,
  overview: runOverview,
};

// ---------------------------------------------------------------- run, report, write

function describeMachine() {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model,
    cores: cpus.length,
    totalMemoryGb: round(os.totalmem() / 2 ** 30, 1),
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
  };
}

/** The one writer: bench/results/<UTC time at the end of the run>.json. */
function saveResult(doc) {
  const dir = join(ROOT, "bench/results");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, resultFileName(new Date()));
  writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
  return file;
}

async function main() {
  const startedAt = new Date();
  const workersRan = settings.workers > 0 && serverSupportsWorkers();
  log(
    `bench: ${settings.duration}s per phase, ${settings.connections} connections, ${os.cpus().length} cores, node ${process.version}`,
  );
  const plan = planScenarios({
    only: settings.only,
    workers: settings.workers,
    workersOk: workersRan,
  });
  if (!workersRan && settings.workers > 0) {
    log(`  (no WORKERS rows: the built server has no WORKERS setting)`);
  }
  const rows = [];
  for (const scenario of plan) rows.push(await RUNNERS[scenario.kind](scenario));
  const doc = resultDocument({ startedAt, machine: describeMachine(), settings, rows, workersRan });
  process.stdout.write(`\n${doc.table}\n`);
  if (!settings.noSave) log(`\nresults: ${saveResult(doc)}`);
}

main().then(
  () => {
    killAll();
    process.exit(0);
  },
  (err) => {
    log(`bench failed: ${err?.stack ?? err}`);
    killAll();
    process.exit(1);
  },
);
