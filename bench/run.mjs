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
 * Settings (environment):
 *   BENCH_DURATION      seconds per measured phase (default 10)
 *   BENCH_WARMUP        seconds of unmeasured load before each scenario (default 2)
 *   BENCH_CONNECTIONS   autocannon connections (default 64)
 *   BENCH_GRPC_CONCURRENCY  gRPC calls in flight (default 64)
 *   BENCH_GRPC_CLIENT   raw (default: pre-encoded frames over node:http2) or connect (connect-node)
 *   BENCH_ONLY          comma-separated scenario ids to run: baseline,a,b,c,d,e,f and the
 *                       WORKERS rows a2,b2,f2 (default: all of these), c2 and f2x (only when named)
 *   BENCH_WORKERS       N for the extra WORKERS=N rows (default 2; 0 = none;
 *                       skipped when the built server has no WORKERS setting)
 *   BENCH_CPU_PROF_DIR  run the server under `node --cpu-prof` writing profiles there
 *   BENCH_SERVER_ENV    extra server env, e.g. "INGEST_FLUSH_MS=1,INGEST_BATCH_MAX=1024"
 *   BENCH_NO_RATE=1     skip the runs at 70% of the maximum rate
 *   BENCH_DIST          the build to measure (default dist/ of this checkout)
 *   BENCH_IDLE_WAIT     seconds to wait for a quiet machine before each scenario (default 20)
 *   BENCH_NO_SAVE=1     do not write a result file
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { create, toBinary } from "@bufbuild/protobuf";
import Database from "better-sqlite3";
import {
  batchBodies,
  batchMessages,
  collectBodies,
  HEADER_UA,
  paymentBody,
  singleEventBodies,
} from "./lib/bodies.mjs";
import { cannon, grpcConnectLoad, grpcFrame, grpcRawLoad, paced } from "./lib/load.mjs";
import {
  cpuMeter,
  freePort,
  killAll,
  rssSampler,
  startProcess,
  waitForQuiet,
} from "./lib/procs.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
/** The build under test (BENCH_DIST: another checkout's dist/, for A/B comparisons). */
const DIST = process.env.BENCH_DIST ?? join(ROOT, "dist");

const env = process.env;
const DURATION = Number(env.BENCH_DURATION ?? 10);
const WARMUP = Number(env.BENCH_WARMUP ?? 2);
const CONNECTIONS = Number(env.BENCH_CONNECTIONS ?? 64);
const GRPC_CONCURRENCY = Number(env.BENCH_GRPC_CONCURRENCY ?? 64);
const GRPC_CONNECTIONS = Number(env.BENCH_GRPC_CONNECTIONS ?? 1);
const GRPC_CLIENT = env.BENCH_GRPC_CLIENT ?? "raw";
const ONLY = env.BENCH_ONLY ? new Set(env.BENCH_ONLY.split(",").map((s) => s.trim())) : undefined;
const WORKERS = Number(env.BENCH_WORKERS ?? 2);
const PROF_DIR = env.BENCH_CPU_PROF_DIR;
const IDLE_WAIT = Number(env.BENCH_IDLE_WAIT ?? 20);
const EXTRA_ENV = Object.fromEntries(
  (env.BENCH_SERVER_ENV ?? "")
    .split(",")
    .filter(Boolean)
    .map((kv) => kv.split("=")),
);
const ADMIN_TOKEN = "bench-admin-token-0123456789";
/** Server settings of every run (the defaults, spelled out so the result file records them). */
const SERVER_ENV = {
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  ADMIN_TOKEN,
  INGEST_QUEUE_CAPACITY: "10000",
  INGEST_BATCH_MAX: "512",
  INGEST_FLUSH_MS: "2",
  INGEST_BATCHES_IN_FLIGHT: "4",
  ...EXTRA_ENV,
};
const EVENTS_PATH = "/api/v1/events";
const PAYMENTS_PATH = "/api/v1/payments";
const COLLECT_PATH = "/api/v1/collect";

const tmpRoot = mkdtempSync(join(os.tmpdir(), "ingest-bench-"));
process.on("exit", () => rmSync(tmpRoot, { recursive: true, force: true }));

const want = (id) => !ONLY || ONLY.has(id);
const log = (msg) => process.stderr.write(`${msg}\n`);
const round = (x, d = 0) => (x == null ? null : Number(x.toFixed(d)));

// ---------------------------------------------------------------- tenant

/** A fresh data directory with one Scale account, site example.com and an events+payments key. */
async function freshTenant(name) {
  const { createSqliteStore } = await import(join(DIST, "src/store/sqlite/sqlite-store.js"));
  const { createAdmin } = await import(join(DIST, "src/domain/admin.js"));
  const dir = join(tmpRoot, name);
  mkdirSync(dir, { recursive: true });
  const dbPath = join(dir, "ingest.sqlite");
  const store = createSqliteStore(dbPath);
  try {
    const admin = createAdmin({ store, clock: { now: () => Date.now() } });
    const { accountId, ownerUserId } = await admin.createAccount({
      name: "Bench",
      plan: "scale",
      ownerEmail: "bench@example.com",
    });
    const { siteId } = await admin.createSite({ accountId, hostnames: ["example.com"] });
    const { key } = await admin.createKey({
      siteId,
      name: "bench",
      scopes: ["events", "payments"],
      actorUserId: ownerUserId,
    });
    return { dbPath, siteId, key };
  } finally {
    await store.close();
  }
}

/** Rows in a table, read from the file (WAL: readers do not block the server). */
function countRows(dbPath, table) {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(`SELECT count(*) AS n FROM ${table}`).get().n;
  } finally {
    db.close();
  }
}

function serverSupportsWorkers() {
  try {
    return /WORKERS/.test(
      readFileSync(join(DIST, "src/config.js"), "utf8") +
        readFileSync(join(DIST, "src/main.js"), "utf8"),
    );
  } catch {
    return false;
  }
}

async function startServer(tenant, { workers, profile, serverEnv } = {}) {
  const port = await freePort();
  const args = [];
  if (profile && PROF_DIR) args.push("--cpu-prof", `--cpu-prof-dir=${PROF_DIR}`);
  args.push(join(DIST, "src/main.js"));
  return startProcess({
    name: "server",
    args,
    port,
    readyPath: "/readyz",
    env: {
      ...SERVER_ENV,
      PORT: String(port),
      STORE_URL: `sqlite:${tenant.dbPath}`,
      ...(workers ? { WORKERS: String(workers) } : {}),
      ...serverEnv,
    },
  });
}

// ---------------------------------------------------------------- scenarios

/** Other jobs on the machine skew the numbers: wait for a quiet moment first. */
async function quiet() {
  if (IDLE_WAIT <= 0) return undefined;
  const busy = await waitForQuiet({ maxWaitMs: IDLE_WAIT * 1000 });
  if (busy > 0.15) log(`  (machine still busy: ${busy} cores in use by others)`);
  return busy;
}

const results = [];
let baselineRps;

function headersFor(key) {
  return {
    "content-type": "application/json",
    "user-agent": HEADER_UA,
    ...(key ? { authorization: `Bearer ${key}` } : {}),
  };
}

/**
 * One HTTP scenario on a fresh server: warm-up, measured max-throughput run,
 * stored-row count, optional 70%-of-max latency runs.
 */
async function httpScenario({
  id,
  label,
  path,
  table,
  eventsPerRequest,
  makeBodies,
  at70 = false,
  workers,
  headers: extraHeaders,
  serverEnv,
}) {
  const quietBefore = await quiet();
  const tenant = await freshTenant(id);
  const server = await startServer(tenant, { workers, profile: true, serverEnv });
  const rss = rssSampler(server.pid);
  try {
    // makeBodies gives a pool of bodies, or a function of the request's index.
    const made = makeBodies(tenant);
    const bodyOf = typeof made === "function" ? made : (i) => made[i % made.length];
    const headers = extraHeaders ?? headersFor(tenant.key);
    const common = { url: server.url, path, headers, bodyOf };
    if (WARMUP > 0) await cannon({ ...common, connections: CONNECTIONS, durationSec: WARMUP });
    const before = countRows(tenant.dbPath, table);
    rss.reset();
    const cpu = cpuMeter(server.pid);
    const max = await cannon({ ...common, connections: CONNECTIONS, durationSec: DURATION });
    const cpuUse = cpu.stop();
    await new Promise((r) => setTimeout(r, 300)); // answers in flight when autocannon stopped
    const stored = countRows(tenant.dbPath, table) - before;
    const row = {
      id,
      label,
      workers: workers ?? 1,
      requestsPerSec: max.okPerSec,
      eventsPerSec: eventsPerRequest ? stored / max.durationSec : undefined,
      ackedEventsPerSec: eventsPerRequest
        ? (max.ok * eventsPerRequest) / max.durationSec
        : undefined,
      storedRows: stored,
      p50Ms: max.latencyMs.p50,
      p99Ms: max.latencyMs.p99,
      non2xx: max.non2xx,
      rateLimited503: max.statusCodes["503"] ?? 0,
      errors: max.errors + max.timeouts,
      peakRssMb: rss.peak(),
      cpu: { ...cpuUse, serverUsPerRequest: (cpuUse.serverCores * 1e6) / max.okPerSec },
      quietBefore,
      max,
    };
    if (at70 && env.BENCH_NO_RATE !== "1") {
      const rate = 0.7 * max.okPerSec;
      const pacedRun = await paced({
        url: server.url,
        path,
        headers,
        bodyOf: typeof made === "function" ? (i) => made(i, "paced") : bodyOf,
        rate,
        durationSec: DURATION,
        maxSockets: CONNECTIONS,
        warmupSec: 2,
      });
      const cannon70 = await cannon({
        ...common,
        connections: CONNECTIONS,
        durationSec: DURATION,
        overallRate: rate,
      });
      row.at70 = { rate, paced: pacedRun, autocannon: cannon70 };
      row.peakRssMb = rss.peak();
    }
    results.push(row);
    log(
      `  ${label}: ${Math.round(row.requestsPerSec)} req/s, p99 ${row.p99Ms} ms, server ${Math.round(row.cpu.serverUsPerRequest)} µs CPU/request, others ${cpuUse.foreignCores} cores`,
    );
    return row;
  } finally {
    rss.stop();
    await server.stop();
  }
}

/**
 * The bare-Fastify baseline. It runs first and, when other rows ran, again
 * last: ratios are to the mean of the two, so a change of the machine's
 * speed during the run (up to 2× within minutes on the shared VM) moves
 * both ends of the ratio rather than only one.
 */
async function baseline({ again = false } = {}) {
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
    const bodies = singleEventBodies("site_baseline", 4096);
    const common = {
      url: server.url,
      path: EVENTS_PATH,
      headers: headersFor(),
      bodyOf: (i) => bodies[i % bodies.length],
    };
    if (WARMUP > 0) await cannon({ ...common, connections: CONNECTIONS, durationSec: WARMUP });
    rss.reset();
    const cpu = cpuMeter(server.pid);
    const max = await cannon({ ...common, connections: CONNECTIONS, durationSec: DURATION });
    const cpuUse = cpu.stop();
    const first = results.find((r) => r.id === "baseline");
    baselineRps = again && first ? (first.requestsPerSec + max.okPerSec) / 2 : max.okPerSec;
    const row = {
      id: again ? "baseline2" : "baseline",
      label: again
        ? "baseline again, at the end (ratios use the mean)"
        : "baseline: bare Fastify, parse JSON, 204",
      workers: 1,
      requestsPerSec: max.okPerSec,
      p50Ms: max.latencyMs.p50,
      p99Ms: max.latencyMs.p99,
      non2xx: max.non2xx,
      rateLimited503: 0,
      errors: max.errors + max.timeouts,
      peakRssMb: rss.peak(),
      cpu: { ...cpuUse, serverUsPerRequest: (cpuUse.serverCores * 1e6) / max.okPerSec },
      quietBefore,
      max,
    };
    results.push(row);
    log(
      `  ${row.id}: ${Math.round(row.requestsPerSec)} req/s, server ${Math.round(row.cpu.serverUsPerRequest)} µs CPU/request, others ${cpuUse.foreignCores} cores`,
    );
  } finally {
    rss.stop();
    await server.stop();
  }
}

async function grpcScenario({ id, label, workers }) {
  const quietBefore = await quiet();
  const tenant = await freshTenant(id);
  const server = await startServer(tenant, { workers, profile: true });
  const rss = rssSampler(server.pid);
  try {
    const { EventsService, RecordEventsRequestSchema } = await import(
      join(DIST, "gen/ingest/v1/events_pb.js")
    );
    const common = {
      url: server.url,
      service: EventsService,
      method: "recordEvents",
      schema: RecordEventsRequestSchema,
      messages: batchMessages(tenant.siteId, 256),
      apiKey: tenant.key,
      concurrency: GRPC_CONCURRENCY,
      connections: GRPC_CONNECTIONS,
    };
    // The raw client sends pre-encoded frames, as autocannon sends pre-built bodies: the
    // connect-node client spends ~0.5 core encoding and was the bottleneck (docs/performance.md).
    const grpcLoad = GRPC_CLIENT === "connect" ? grpcConnectLoad : grpcRawLoad;
    if (GRPC_CLIENT !== "connect") {
      common.path = `/${EventsService.typeName}/${EventsService.method.recordEvents.name}`;
      common.frames = common.messages.map((m) =>
        grpcFrame(toBinary(RecordEventsRequestSchema, create(RecordEventsRequestSchema, m))),
      );
      common.eventsPerCall = 50;
    }
    if (WARMUP > 0) await grpcLoad({ ...common, durationSec: WARMUP });
    const before = countRows(tenant.dbPath, "events");
    rss.reset();
    const cpu = cpuMeter(server.pid);
    const run = await grpcLoad({ ...common, durationSec: DURATION });
    const cpuUse = cpu.stop();
    await new Promise((r) => setTimeout(r, 300));
    const stored = countRows(tenant.dbPath, "events") - before;
    const row = {
      id,
      label,
      workers: workers ?? 1,
      requestsPerSec: run.okPerSec,
      eventsPerSec: stored / run.durationSec,
      ackedEventsPerSec: run.acceptedEvents / run.durationSec,
      storedRows: stored,
      p50Ms: run.latencyMs.p50,
      p99Ms: run.latencyMs.p99,
      non2xx: run.non2xx,
      rateLimited503: run.errorCodes[14] ?? 0, // Code.Unavailable
      errors: 0,
      peakRssMb: rss.peak(),
      cpu: { ...cpuUse, serverUsPerRequest: (cpuUse.serverCores * 1e6) / run.okPerSec },
      quietBefore,
      max: run,
    };
    results.push(row);
    log(
      `  ${label}: ${Math.round(row.requestsPerSec)} calls/s, ${Math.round(row.eventsPerSec)} events/s`,
    );
  } finally {
    rss.stop();
    await server.stop();
  }
}

const scenarioA = (workers) => ({
  id: workers ? `a${workers}` : "a",
  label: `a) single pageview events${workers ? ` (WORKERS=${workers})` : ""}`,
  path: EVENTS_PATH,
  table: "events",
  eventsPerRequest: 1,
  makeBodies: (t) => singleEventBodies(t.siteId, 4096),
  at70: !workers,
  workers,
});
const scenarioB = (workers) => ({
  id: workers ? `b${workers}` : "b",
  label: `b) batches of 50 events${workers ? ` (WORKERS=${workers})` : ""}`,
  path: EVENTS_PATH,
  table: "events",
  eventsPerRequest: 50,
  makeBodies: (t) => batchBodies(t.siteId, 256),
  workers,
});
const scenarioC = (workers) => ({
  id: workers ? `c${workers}` : "c",
  label: `c) new payments (distinct ids)${workers ? ` (WORKERS=${workers})` : ""}`,
  path: PAYMENTS_PATH,
  table: "payments",
  // A new payment id and customer in every request (phases get their own prefix).
  makeBodies: () => {
    const phases = new Map();
    return (_i, phase = "max") => {
      let p = phases.get(phase);
      if (!p) {
        p = { prefix: `${phase}${phases.size}`, n: 0 };
        phases.set(phase, p);
      }
      const n = p.n++;
      return paymentBody(`pay_${p.prefix}_${n}`, `cus_${p.prefix}_${n}`);
    };
  },
  at70: !workers,
  workers,
});

/**
 * f) The public collect endpoint: the same pageviews as a) without ip/ua (the
 * connection's are used), sent as a browser does (text/plain, Origin, no key).
 * Every request comes from 127.0.0.1, so the limit is set out of reach: the
 * row measures the cost of checking it, not of refusing. `f<N>x` (only when
 * named) is the WORKERS=N row with the limit off, to isolate the cost of
 * asking the cluster primary.
 */
const scenarioF = (workers, limit = "100000000") => ({
  id: `f${workers ? workers : ""}${limit === "0" ? "x" : ""}`,
  label: `f) collect pageviews (browser, no key)${workers ? ` (WORKERS=${workers})` : ""}${limit === "0" ? ", COLLECT_RATE_LIMIT=0" : ""}`,
  path: COLLECT_PATH,
  table: "events",
  eventsPerRequest: 1,
  makeBodies: (t) => collectBodies(t.siteId, 4096),
  headers: {
    "content-type": "text/plain;charset=UTF-8",
    "user-agent": HEADER_UA,
    origin: "https://example.com",
  },
  serverEnv: { COLLECT_RATE_LIMIT: limit },
  workers,
});

async function main() {
  const workersOk = WORKERS > 0 && serverSupportsWorkers();
  log(
    `bench: ${DURATION}s per phase, ${CONNECTIONS} connections, ${os.cpus().length} cores, node ${process.version}`,
  );
  if (want("baseline")) await baseline();
  if (want("a")) await httpScenario(scenarioA());
  if (want("b")) await httpScenario(scenarioB());
  if (want("c")) await httpScenario(scenarioC());
  if (want("d")) {
    await httpScenario({
      id: "d",
      label: "d) re-sent payments (upserts of 100 ids)",
      path: PAYMENTS_PATH,
      table: "payments",
      makeBodies: () =>
        Array.from({ length: 100 }, (_, i) => paymentBody(`pay_${i}`, `cus_${i % 20}`)),
    });
  }
  if (want("e")) await grpcScenario({ id: "e", label: "e) gRPC RecordEvents, batches of 50" });
  if (want("f")) await httpScenario(scenarioF());
  if (workersOk) {
    if (want(`a${WORKERS}`)) await httpScenario(scenarioA(WORKERS));
    if (want(`b${WORKERS}`)) await httpScenario(scenarioB(WORKERS));
    if (want(`f${WORKERS}`)) await httpScenario(scenarioF(WORKERS));
    if (ONLY?.has(`f${WORKERS}x`)) await httpScenario(scenarioF(WORKERS, "0"));
    // Not in the default run (time budget): BENCH_ONLY=c2 adds it.
    if (ONLY?.has(`c${WORKERS}`)) await httpScenario(scenarioC(WORKERS));
  } else if (WORKERS > 0) {
    log(`  (no WORKERS rows: the built server has no WORKERS setting)`);
  }
  if (want("baseline") && results.some((r) => r.id !== "baseline")) await baseline({ again: true });
  report(workersOk);
}

// ---------------------------------------------------------------- report

function fmt(x, d = 0) {
  if (x == null || Number.isNaN(x)) return "–";
  return Number(x.toFixed(d)).toLocaleString("en-US");
}

/** Issue 13's targets, as ratios to the same run's baseline where they are ratios. */
function targets() {
  const by = Object.fromEntries(results.map((r) => [r.id, r]));
  const out = [];
  const base = by.baseline;
  if (by.a && baselineRps) {
    const ratio = by.a.requestsPerSec / baselineRps;
    out.push({
      target: "a) single events ≥ 0.35× baseline requests/s (stretch 0.5×)",
      value: `${fmt(ratio, 2)}×`,
      met: ratio >= 0.35,
    });
  }
  if (by.a) {
    // Rows are counted a moment after the load stops: in-flight requests land after the 2xx count.
    const ratio = by.a.eventsPerSec / by.a.ackedEventsPerSec;
    out.push({
      target: "a) stored events/s = 2xx answers/s",
      value: `${fmt(by.a.eventsPerSec)} stored, ${fmt(by.a.ackedEventsPerSec)} acknowledged`,
      met: ratio >= 0.99,
    });
  }
  if (by.f && by.a) {
    const ratio = by.f.requestsPerSec / by.a.requestsPerSec;
    out.push({
      target: "collect ≈ events endpoint (same application function)",
      value: `${fmt(ratio, 2)}× a)`,
      met: ratio >= 0.8,
    });
  }
  if (by.b) {
    out.push({
      target: "b) batches of 50 ≥ 150,000 stored events/s",
      value: fmt(by.b.eventsPerSec),
      met: by.b.eventsPerSec >= 150_000,
    });
  }
  for (const id of ["c", "d"]) {
    if (!by[id] || !baselineRps) continue;
    const ratio = by[id].requestsPerSec / baselineRps;
    out.push({
      target: `${id}) payments ≥ 0.35× baseline requests/s`,
      value: `${fmt(ratio, 2)}×`,
      met: ratio >= 0.35,
    });
  }
  for (const r of results.filter((x) => x.at70)) {
    const p99 = r.at70.paced.latencyMs.p99;
    out.push({
      target: `${r.id}) p99 < 25 ms at 70% of max (${fmt(r.at70.rate)}/s, paced)`,
      value: `${fmt(p99, 1)} ms`,
      met: p99 != null && p99 < 25,
    });
  }
  if (by.e && by.b) {
    const ratio = by.e.eventsPerSec / by.b.eventsPerSec;
    out.push({
      target: "e) gRPC batches within 10% of REST batches (stored events/s)",
      value: `${fmt(ratio, 2)}× b)`,
      met: ratio >= 0.9,
    });
  }
  // Not a target: server CPU per request against a bare request's, which moves less with the machine.
  for (const id of ["a", "c"]) {
    if (!by[id]?.cpu || !base?.cpu) continue;
    out.push({
      target: `(info) ${id}) server CPU per request ÷ baseline's`,
      value: `${fmt(by[id].cpu.serverUsPerRequest / base.cpu.serverUsPerRequest, 2)}× (${fmt(by[id].cpu.serverUsPerRequest)} µs)`,
      met: undefined,
    });
  }
  return out;
}

function report(workersRan) {
  const lines = [];
  lines.push(
    "| Scenario | requests/s | × baseline | stored events/s | p50 ms | p99 ms | non-2xx (503) | peak RSS MB | CPU cores server/client/other |",
  );
  lines.push("|---|--:|--:|--:|--:|--:|--:|--:|--:|");
  for (const r of results) {
    const ratio = baselineRps ? `${fmt(r.requestsPerSec / baselineRps, 2)}×` : "";
    lines.push(
      `| ${r.label} | ${fmt(r.requestsPerSec)} | ${ratio} | ${fmt(r.eventsPerSec)} | ${fmt(r.p50Ms, 1)} | ${fmt(r.p99Ms, 1)} | ${fmt(r.non2xx)} (${fmt(r.rateLimited503)}) | ${fmt(r.peakRssMb)} | ${r.cpu ? `${fmt(r.cpu.serverCores, 2)}/${fmt(r.cpu.benchCores, 2)}/${fmt(r.cpu.foreignCores, 2)}` : ""} |`,
    );
  }
  const rateRows = results.filter((r) => r.at70);
  if (rateRows.length > 0) {
    lines.push("");
    lines.push(
      "| At 70% of max | rate/s | paced p50 ms | paced p99 ms | autocannon overallRate p50 ms | p99 ms | non-2xx |",
    );
    lines.push("|---|--:|--:|--:|--:|--:|--:|");
    for (const r of rateRows) {
      const p = r.at70.paced;
      const a = r.at70.autocannon;
      lines.push(
        `| ${r.label} | ${fmt(r.at70.rate)} | ${fmt(p.latencyMs.p50, 1)} | ${fmt(p.latencyMs.p99, 1)} | ${fmt(a.latencyMs.p50, 1)} | ${fmt(a.latencyMs.p99, 1)} | ${fmt(p.non2xx + a.non2xx)} |`,
      );
    }
  }
  const t = targets();
  if (t.length > 0) {
    lines.push("");
    lines.push("| Target | measured | met |");
    lines.push("|---|--:|:-:|");
    for (const x of t) {
      lines.push(
        `| ${x.target} | ${x.value} | ${x.met === undefined ? "–" : x.met ? "yes" : "**no**"} |`,
      );
    }
  }
  const cpus = os.cpus();
  const machine = {
    cpuModel: cpus[0]?.model,
    cores: cpus.length,
    totalMemoryGb: round(os.totalmem() / 2 ** 30, 1),
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
  };
  lines.push("");
  lines.push(
    `${machine.cpuModel}, ${machine.cores} cores, ${machine.totalMemoryGb} GB, Node ${machine.node}; ` +
      `${DURATION} s per phase after ${WARMUP} s warm-up, ${CONNECTIONS} connections (gRPC: ${GRPC_CONCURRENCY} calls in flight); ` +
      `INGEST_QUEUE_CAPACITY=${SERVER_ENV.INGEST_QUEUE_CAPACITY}, INGEST_BATCH_MAX=${SERVER_ENV.INGEST_BATCH_MAX}, INGEST_FLUSH_MS=${SERVER_ENV.INGEST_FLUSH_MS}, INGEST_BATCHES_IN_FLIGHT=${SERVER_ENV.INGEST_BATCHES_IN_FLIGHT}` +
      (workersRan ? "" : "; no WORKERS rows (the built server has no WORKERS setting)"),
  );
  const table = lines.join("\n");
  process.stdout.write(`\n${table}\n`);
  if (env.BENCH_NO_SAVE !== "1") {
    const stamp = new Date()
      .toISOString()
      .replace(/:/g, "-")
      .replace(/\.\d+Z$/, "Z");
    const dir = join(ROOT, "bench/results");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${stamp}.json`);
    writeFileSync(
      file,
      `${JSON.stringify(
        {
          startedAt: startedAt.toISOString(),
          machine,
          settings: {
            durationSec: DURATION,
            warmupSec: WARMUP,
            connections: CONNECTIONS,
            grpcConcurrency: GRPC_CONCURRENCY,
            server: { ...SERVER_ENV, ADMIN_TOKEN: undefined },
            cpuProfile: Boolean(PROF_DIR),
          },
          baselineRequestsPerSec: baselineRps,
          targets: t,
          results,
          table,
        },
        null,
        2,
      )}\n`,
    );
    log(`\nresults: ${file}`);
  }
}

const startedAt = new Date();
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
