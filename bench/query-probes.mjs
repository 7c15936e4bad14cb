/**
 * Ingestion and the probes while reports keys ask heavy questions
 * (`npm run bench:query-probes`, issue 30: "probe /healthz and a payment
 * during a heavy query: both under 100 ms p99").
 *
 * The built server (dist/, as `npm start` runs it) is started on DATA_DIR, a
 * data directory written by `LOAD=direct DATA_DIR=… NOW=… npm run
 * bench:analytics` (its site `site_bench`, 90 days of events ending at NOW).
 * Before it starts, a second tenant is added to the directory's store (an
 * account, a site and a payments key): the payments the probes send are that
 * site's, so each is a write the feed moves beside the queries.
 *
 * First 30 probes on the idle server (what this machine gives at the moment),
 * then CONCURRENCY loops (default 4, twice the default
 * ANALYTICS_QUERIES_PER_SITE, so some calls meet the site's limit and answer
 * 429) ask site_bench's heaviest dashboard questions over 90 days through
 * REST for DURATION seconds (default 30): top pages, sources with net revenue,
 * visitors by day and a three-step funnel, each period moved back by a few
 * minutes so that no call is answered from another's kept answer. Meanwhile a
 * probe loop sends `GET /healthz`, then one payment (`POST /api/v1/payments`),
 * then rests 20 ms. Prints the probes' p50/p99/max before and during, the
 * calls by status, and `probeTargetMet` (both p99 under 100 ms; the exit code
 * is 1 when it is missed).
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { freePort, startProcess } from "./lib/procs.mjs";

const DATA_DIR = process.env.DATA_DIR;
if (!DATA_DIR) throw new Error("DATA_DIR: a data directory written by LOAD=direct bench:analytics");
const NOW = Number(process.env.NOW);
if (!Number.isFinite(NOW)) throw new Error("NOW: the hour (ms) the directory's 90 days end at");
const DURATION_MS = Number(process.env.DURATION ?? 30) * 1000;
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 4);
const PROBE_TARGET_MS = 100;
const SITE = "site_bench";
const TOKEN = "bench-query-probes-token-0123456789";
const DAY = 86_400_000;
const dist = resolve("dist");

/** A tenant of the probes' payments in the directory's store: its site and payments key. */
async function probeTenant() {
  const { createSqliteStore } = await import(join(dist, "src/store/sqlite/sqlite-store.js"));
  const { createAdmin } = await import(join(dist, "src/domain/admin.js"));
  const store = createSqliteStore(join(DATA_DIR, "ingest.sqlite"));
  try {
    const admin = createAdmin({ store, clock: { now: () => Date.now() } });
    const { accountId, ownerUserId } = await admin.createAccount({
      name: "Probes",
      plan: "scale",
      ownerEmail: `probes-${Date.now()}@example.com`,
    });
    const { siteId } = await admin.createSite({ accountId, hostnames: ["probes.example.com"] });
    const { key } = await admin.createKey({
      siteId,
      name: "probes",
      scopes: ["payments"],
      actorUserId: ownerUserId,
    });
    return key;
  } finally {
    await store.close();
  }
}

/** The heavy calls, by their REST path and body; `back` moves the period back (minutes). */
const CALLS = [
  ["query", () => ({ metrics: ["visitors"], dimensions: ["page"] })],
  [
    "query",
    () => ({ metrics: ["visitors", "net_revenue"], dimensions: ["source"], currency: "USD" }),
  ],
  ["query", () => ({ metrics: ["visitors"], dimensions: ["time:day"], limit: 100 })],
  [
    "funnel",
    () => ({
      steps: [
        { kind: "page_prefix", value: "/l" },
        { kind: "page", value: "/pricing" },
        { kind: "event", value: "signup" },
      ],
    }),
  ],
];

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const r = (x) => Math.round(x * 10) / 10;
  return { n: s.length, p50: r(pct(s, 0.5)), p99: r(pct(s, 0.99)), max: r(s.at(-1) ?? 0) };
};

const key = await probeTenant();
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
// The built server, as `npm start` runs it; ready once the analytics engine answers.
const server = await startProcess({
  args: ["dist/src/main.js"],
  env: {
    PORT: String(port),
    HOST: "127.0.0.1",
    STORE_URL: `sqlite:${join(DATA_DIR, "ingest.sqlite")}`,
    ADMIN_TOKEN: TOKEN,
    LOG_LEVEL: "warn",
  },
  port,
  readyPath: "/readyz",
  name: "server",
  readyMs: 120_000,
});

let paymentId = 0;
const stamp = Date.now().toString(36);
/** One /healthz then one payment, timed into `into`; then 20 ms of rest. */
async function probeOnce(into) {
  let t = performance.now();
  const h = await fetch(`${base}/healthz`);
  await h.arrayBuffer();
  if (h.status !== 200) throw new Error(`/healthz answered ${h.status}`);
  into.health.push(performance.now() - t);
  t = performance.now();
  const p = await fetch(`${base}/api/v1/payments`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      payment_id: `pay_probe_${stamp}_${paymentId++}`,
      customer: { id: "cus_probe" },
      amount: 19.99,
      currency: "USD",
      kind: "charge",
      paid_at: new Date().toISOString(),
    }),
  });
  await p.arrayBuffer();
  if (p.status !== 200) throw new Error(`payment probe answered ${p.status}`);
  into.payment.push(performance.now() - t);
  await new Promise((ok) => setTimeout(ok, 20));
}

try {
  const idle = { health: [], payment: [] };
  for (let i = 0; i < 30; i++) await probeOnce(idle);

  const until = performance.now() + DURATION_MS;
  const byStatus = {};
  const answeredMs = [];
  let next = 0;
  let back = 0;
  const asker = async () => {
    while (performance.now() < until) {
      const [door, body] = CALLS[next++ % CALLS.length];
      const to = NOW - ++back * 60_000;
      const period = {
        from: new Date(to - 90 * DAY).toISOString(),
        to: new Date(to).toISOString(),
      };
      const s = performance.now();
      const res = await fetch(`${base}/api/v1/sites/${SITE}/${door}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ ...body(), period }),
      });
      await res.arrayBuffer();
      byStatus[res.status] = (byStatus[res.status] ?? 0) + 1;
      if (res.status === 200) answeredMs.push(performance.now() - s);
      // Refused by the site's limit: ask again a moment later, as a dashboard would.
      else await new Promise((ok) => setTimeout(ok, 100));
    }
  };
  const during = { health: [], payment: [] };
  const probing = (async () => {
    while (performance.now() < until) await probeOnce(during);
  })();
  await Promise.all([probing, ...Array.from({ length: CONCURRENCY }, asker)]);
  const h = stats(during.health);
  const p = stats(during.payment);
  const status = readFileSync(`/proc/${server.pid}/status`, "utf8");
  console.log(
    JSON.stringify(
      {
        dataDir: DATA_DIR,
        durationSeconds: DURATION_MS / 1000,
        concurrency: CONCURRENCY,
        idleHealthzMs: stats(idle.health),
        idlePaymentMs: stats(idle.payment),
        heavyCallsByStatus: byStatus,
        heavyCallsAnsweredMs: stats(answeredMs),
        healthzMs: h,
        paymentMs: p,
        probeTargetMs: PROBE_TARGET_MS,
        probeTargetMet: h.p99 < PROBE_TARGET_MS && p.p99 < PROBE_TARGET_MS,
        serverPeakRssMiB: Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024),
        loadavg: readFileSync("/proc/loadavg", "utf8").trim(),
      },
      null,
      2,
    ),
  );
  if (!(h.p99 < PROBE_TARGET_MS && p.p99 < PROBE_TARGET_MS)) process.exitCode = 1;
} finally {
  await server.stop();
}
