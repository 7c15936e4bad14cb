/**
 * Ingestion where every event is a new visitor, on a store that already
 * holds STORED events, through HTTP; and a mixed load of batches, payments
 * and collect. Builds compared side by side in the same run, their phases
 * interleaved (issue 30: the daily rollups maintained on every write were
 * the cost; docs/performance.md, "New visitors with 1,000,000 events stored").
 *
 *   node bench/new-visitors.mjs [rounds=2] <dist> [<dist> ...]
 *
 * Each dist/ sits beside a node_modules (e.g. a symlink to this one's) and a
 * package.json. Per build: a fresh data directory (made by that build, so its
 * schema is its own) is filled with STORED events through HTTP (batches of 50
 * pageviews, every event a new visitor: its own address), then, build after
 * build and round after round, one server on it at a time:
 *
 *   n  batches of 50 new visitors for DURATION seconds: stored events/s
 *   m  (after the rounds) MIXED seconds of batches of new visitors, new
 *      payments and collect pageviews at once (32, 16 and 16 connections):
 *      requests/s of each door, payments p99
 *
 * Settings (environment): STORED (default 1,000,000), DURATION (20), MIXED
 * (180; 0 skips the mixed load), MIXED_ONLY (the builds the mixed load runs
 * on, by their position in the list from 1, e.g. "1,4"; default all),
 * CONNECTIONS (64), BENCH_CPU_PROF_DIR (profile the servers of row n with
 * `node --cpu-prof`; bench/cpuprofile-summary.mjs summarises).
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { collectBodies, HEADER_UA, ipOf, paymentBody } from "./lib/bodies.mjs";
import { cannon } from "./lib/load.mjs";
import { freshTenant, headersFor, measureStored, startServer, storedRows } from "./lib/server.mjs";

const rounds = Number(process.argv[2] ?? 2);
const dists = process.argv.slice(3).map((d) => resolve(d));
if (dists.length === 0) throw new Error("usage: node bench/new-visitors.mjs [rounds] <dist> ...");
const STORED = Number(process.env.STORED ?? 1_000_000);
const DURATION = Number(process.env.DURATION ?? 20);
const MIXED = Number(process.env.MIXED ?? 180);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 64);
const MIXED_ONLY = process.env.MIXED_ONLY?.split(",").map((n) => Number(n) - 1);
const PROF_DIR = process.env.BENCH_CPU_PROF_DIR;

const tmpRoot = mkdtempSync(join(os.tmpdir(), "new-visitors-"));
process.on("exit", () => rmSync(tmpRoot, { recursive: true, force: true }));
const log = (msg) => process.stderr.write(`${msg}\n`);

/** The server of tenant `t` (every collect request comes from 127.0.0.1: its limit out of reach, as row f). */
const serverOf = (t, profile = false) =>
  startServer({
    dist: t.dist,
    dbPath: t.dbPath,
    env: { COLLECT_RATE_LIMIT: "100000000" },
    profDir: profile ? PROF_DIR : undefined,
  });

/** Batch bodies of 50 pageviews, each event a visitor never seen (the tenant's next address). */
function newVisitorBatches(t) {
  return () => {
    const base = t.sent;
    t.sent += 50;
    const b = Array.from({ length: 50 }, (_, k) => ({
      e: "pageview",
      u: k % 2 ? "https://example.com/pricing" : "https://example.com/",
      ip: ipOf(base + k),
      ua: "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    }));
    return JSON.stringify({ s: t.siteId, b });
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const tenants = [];
for (const [i, dist] of dists.entries()) {
  const t = { ...(await freshTenant(dist, join(tmpRoot, `build${i}`))), sent: 0, payments: 0 };
  const server = await serverOf(t);
  try {
    const started = Date.now();
    const body = newVisitorBatches(t);
    while (storedRows(t.dbPath, "events") < STORED) {
      await cannon({
        url: server.url,
        path: "/api/v1/events",
        headers: headersFor(t.key),
        bodyOf: () => body(),
        connections: CONNECTIONS,
        durationSec: 10,
      });
    }
    log(
      `${dist}: ${storedRows(t.dbPath, "events")} events stored in ${Math.round((Date.now() - started) / 1000)} s`,
    );
  } finally {
    await server.stop();
  }
  tenants.push(t);
}

const rates = new Map(dists.map((d) => [d, []]));
for (let r = 0; r < rounds; r++) {
  for (const t of tenants) {
    const server = await serverOf(t, true);
    try {
      const body = newVisitorBatches(t);
      const { run, stored, before } = await measureStored({
        load: {
          url: server.url,
          path: "/api/v1/events",
          headers: headersFor(t.key),
          bodyOf: () => body(),
          connections: CONNECTIONS,
        },
        dbPath: t.dbPath,
        table: "events",
        warmupSec: 2,
        durationSec: DURATION,
      });
      const rate = stored / run.durationSec;
      rates.get(t.dist)?.push(rate);
      log(
        `round ${r + 1} ${t.dist}: ${Math.round(rate)} events/s stored (${before} before), p99 ${run.latencyMs.p99} ms, non-2xx ${run.non2xx}`,
      );
    } finally {
      // A profiled server writes its profile at exit, after the feed moved the
      // backlog the load left: under load that takes longer than the default wait.
      await server.stop(PROF_DIR ? 120_000 : undefined);
    }
  }
}
for (const [dist, xs] of rates) {
  console.log(
    `n) new visitors, batches of 50 (HTTP), ${STORED} stored: ${dist}: median ${Math.round(median(xs))} events/s of ${xs.map(Math.round).join(", ")}`,
  );
}

if (MIXED > 0) {
  for (const [i, t] of tenants.entries()) {
    if (MIXED_ONLY && !MIXED_ONLY.includes(i)) continue;
    const server = await serverOf(t);
    try {
      const body = newVisitorBatches(t);
      const collect = collectBodies(t.siteId, 4096);
      const prefix = `m${Date.now()}`;
      const [batches, payments, pageviews] = await Promise.all([
        cannon({
          url: server.url,
          path: "/api/v1/events",
          headers: headersFor(t.key),
          bodyOf: () => body(),
          connections: CONNECTIONS / 2,
          durationSec: MIXED,
        }),
        cannon({
          url: server.url,
          path: "/api/v1/payments",
          headers: headersFor(t.key),
          bodyOf: () => {
            const n = t.payments++;
            return paymentBody(`pay_${prefix}_${n}`, `cus_${prefix}_${n}`);
          },
          connections: CONNECTIONS / 4,
          durationSec: MIXED,
        }),
        cannon({
          url: server.url,
          path: "/api/v1/collect",
          headers: {
            "content-type": "text/plain;charset=UTF-8",
            "user-agent": HEADER_UA,
            origin: "https://example.com",
          },
          bodyOf: (i) => collect[i % collect.length],
          connections: CONNECTIONS / 4,
          durationSec: MIXED,
        }),
      ]);
      const all = batches.okPerSec + payments.okPerSec + pageviews.okPerSec;
      console.log(
        `m) mixed ${MIXED} s (batches of new visitors, new payments, collect): ${t.dist}: ${Math.round(all)} requests/s (batches ${Math.round(batches.okPerSec)}, payments ${Math.round(payments.okPerSec)}, collect ${Math.round(pageviews.okPerSec)}); payments p99 ${payments.latencyMs.p99} ms; non-2xx ${batches.non2xx + payments.non2xx + pageviews.non2xx}`,
      );
      // Which answers were not 2xx, per stream (status: count).
      for (const [name, r] of Object.entries({ batches, payments, collect: pageviews })) {
        const other = Object.entries(r.statusCodes ?? {}).filter(([code]) => !code.startsWith("2"));
        if (other.length > 0)
          console.log(`   ${name}: ${JSON.stringify(Object.fromEntries(other))}`);
      }
    } finally {
      await server.stop();
    }
  }
}
