/**
 * Freshness of the analytics store (`npm run bench:freshness`, issue 30):
 * the built server (BENCH_DIST, default dist/ of this checkout; started by
 * bench/lib/server.mjs as bench/run.mjs does) on a fresh SQLite file with
 * its feed at the default interval (ANALYTICS_* settings of the environment
 * pass on to it), LOADERS clients sending batches of 50 new-visitor
 * pageviews as fast as they are acknowledged, and PROBES probe events, each
 * sent alone: the time from its 204 to the first Query (REST, with the admin
 * token) that counts it (asked again 10 ms after each answer). Prints p50,
 * p99 and max in ms, and the events/s of the load.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ADMIN_TOKEN, freshTenant, headersFor, startServer } from "./lib/server.mjs";

const PROBES = Number(process.env.PROBES ?? 100);
const LOADERS = Number(process.env.LOADERS ?? 4);
const UA =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36";
const DIST = resolve(process.env.BENCH_DIST ?? "dist");

const dir = mkdtempSync(join(tmpdir(), "bench-freshness-"));
const { dbPath, siteId, key } = await freshTenant(DIST, dir);
const server = await startServer({
  dist: DIST,
  dbPath,
  // A CPU profile of the server (bench/cpuprofile-summary.mjs reads it).
  profDir: process.env.BENCH_CPU_PROF_DIR,
  env: Object.fromEntries(
    Object.entries(process.env).filter(([name]) => name.startsWith("ANALYTICS_")),
  ),
});
const post = (body) =>
  fetch(`${server.url}/api/v1/events`, {
    method: "POST",
    headers: headersFor(key),
    body: JSON.stringify(body),
  });
/** Events of the last hour whose property k is `value`, by Query over REST. */
async function probeCount(value) {
  const res = await fetch(`${server.url}/api/v1/sites/${siteId}/query`, {
    method: "POST",
    headers: headersFor(ADMIN_TOKEN),
    body: JSON.stringify({
      metrics: ["events"],
      filters: [{ dimension: "prop:k", op: "is", values: [value] }],
      period: {
        from: new Date(Date.now() - 3_600_000).toISOString(),
        to: new Date(Date.now() + 60_000).toISOString(),
      },
    }),
  });
  if (res.status !== 200) throw new Error(`Query answered ${res.status}: ${await res.text()}`);
  return Number((await res.json()).totals[0]?.count ?? 0);
}

let stop = false;
let loaded = 0;
let n = 0;
const loader = async () => {
  while (!stop) {
    const b = Array.from({ length: 50 }, () => {
      n += 1;
      return {
        e: "pageview",
        u: `https://example.com/p${n % 100}`,
        ip: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
        ua: UA,
      };
    });
    const res = await post({ s: siteId, b });
    if (res.status === 204) loaded += 50;
  }
};
const started = performance.now();
const loaders = Array.from({ length: LOADERS }, loader);
const lags = [];
for (let i = 0; i < PROBES; i++) {
  const res = await post({
    s: siteId,
    e: "probe",
    u: "https://example.com/",
    p: { k: String(i) },
    ua: UA,
  });
  if (res.status !== 204) throw new Error(`probe ${i}: ${res.status}`);
  const acked = performance.now();
  while ((await probeCount(String(i))) !== 1) await new Promise((r) => setTimeout(r, 10));
  lags.push(performance.now() - acked);
}
stop = true;
await Promise.all(loaders);
const seconds = (performance.now() - started) / 1000;
await server.stop();
rmSync(dir, { recursive: true, force: true });
lags.sort((a, b) => a - b);
const at = (q) => Math.round(lags[Math.min(lags.length - 1, Math.floor(q * lags.length))]);
console.log(
  JSON.stringify({
    probes: PROBES,
    loaders: LOADERS,
    loadEventsPerSecond: Math.round(loaded / seconds),
    freshnessMs: { p50: at(0.5), p99: at(0.99), max: Math.round(lags.at(-1)) },
  }),
);
