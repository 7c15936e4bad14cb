/**
 * Issue 11 item 2: one user id linked from many visitors must not slow anyone.
 *
 * Starts the built server (`node dist/src/main.js`) on a fresh SQLite file
 * with two tenants, links user id `u_flood` of tenant A from FLOOD_VISITORS
 * distinct addresses with `$identify`, then for BENCH_DURATION seconds runs
 * three clients streaming payments of that user (closed loops) beside one
 * client sending single events of tenant B (a closed loop with a pause),
 * and prints the latency percentiles as JSON.
 *
 *   npm run --silent build && BENCH_DURATION=10 node bench/identify-flood.mjs
 *
 * Settings: BENCH_DURATION (s, default 10), FLOOD_VISITORS (default 20000),
 * EVENT_GAP_MS (pause between tenant B's events, default 5).
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { HEADER_UA } from "./lib/bodies.mjs";
import { percentile } from "./lib/load.mjs";
import { freePort, killAll, startProcess } from "./lib/procs.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
/** The build under test (BENCH_DIST: another checkout's dist/, for before/after comparisons). */
const DIST = process.env.BENCH_DIST ?? join(ROOT, "dist");
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const VISITORS = Number(process.env.FLOOD_VISITORS ?? 20_000);
const EVENT_GAP_MS = Number(process.env.EVENT_GAP_MS ?? 5);
const log = (m) => process.stderr.write(`${m}\n`);

async function seed(dbPath) {
  const { createSqliteStore } = await import(join(DIST, "src/store/sqlite/sqlite-store.js"));
  const { createAdmin } = await import(join(DIST, "src/domain/admin.js"));
  const store = createSqliteStore(dbPath);
  try {
    const admin = createAdmin({ store, clock: { now: () => Date.now() } });
    const tenant = async (name) => {
      const { accountId, ownerUserId } = await admin.createAccount({
        name,
        plan: "scale",
        ownerEmail: `${name}@example.com`,
      });
      const { siteId } = await admin.createSite({ accountId, hostnames: ["example.com"] });
      const { key } = await admin.createKey({
        siteId,
        name,
        scopes: ["events", "payments"],
        actorUserId: ownerUserId,
      });
      return { siteId, key };
    };
    return { a: await tenant("flooded"), b: await tenant("bystander") };
  } finally {
    await store.close();
  }
}

async function post(url, key, body) {
  const started = performance.now();
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - started };
}

const ipOf = (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

async function main() {
  const dir = mkdtempSync(join(os.tmpdir(), "identify-flood-"));
  const dbPath = join(dir, "ingest.sqlite");
  const { a, b } = await seed(dbPath);
  const port = await freePort();
  const server = await startProcess({
    name: "server",
    args: [join(DIST, "src/main.js")],
    env: {
      PORT: String(port),
      HOST: "127.0.0.1",
      STORE_URL: `sqlite:${dbPath}`,
      LOG_LEVEL: "silent",
    },
    port,
  });
  const events = `${server.url}/api/v1/events`;
  const payments = `${server.url}/api/v1/payments`;
  try {
    // The customer exists before the flood, so every identify re-attributes it.
    await post(payments, a.key, payment("pay_flood_0"));
    log(`linking u_flood from ${VISITORS} addresses…`);
    const t0 = performance.now();
    let next = 0;
    const linkers = Array.from({ length: 8 }, async () => {
      for (;;) {
        const start = next;
        next += 30;
        if (start >= VISITORS) return;
        const batch = [];
        for (let i = start; i < Math.min(start + 30, VISITORS); i++) {
          batch.push({
            e: "$identify",
            u: "https://example.com/app",
            uid: "u_flood",
            ip: ipOf(i),
            ua: HEADER_UA,
          });
        }
        const r = await post(events, a.key, { s: a.siteId, b: batch });
        if (r.status !== 204) throw new Error(`identify answered ${r.status}`);
      }
    });
    await Promise.all(linkers);
    log(`linked in ${((performance.now() - t0) / 1000).toFixed(1)} s; measuring ${DURATION} s…`);

    const until = performance.now() + DURATION * 1000;
    const payLat = [];
    const eventLat = [];
    const statuses = {};
    const count = (s) => {
      statuses[s] = (statuses[s] ?? 0) + 1;
    };
    let n = 0;
    const payers = Array.from({ length: 3 }, async () => {
      while (performance.now() < until) {
        const r = await post(payments, a.key, payment(`pay_flood_${++n}`));
        count(`payment ${r.status}`);
        payLat.push(r.ms);
      }
    });
    let m = 0;
    const bystander = (async () => {
      while (performance.now() < until) {
        const r = await post(events, b.key, {
          s: b.siteId,
          e: "pageview",
          u: "https://example.com/",
          ip: ipOf(++m),
          ua: HEADER_UA,
        });
        count(`event ${r.status}`);
        eventLat.push(r.ms);
        await new Promise((res) => setTimeout(res, EVENT_GAP_MS));
      }
    })();
    await Promise.all([...payers, bystander]);
    const pct = (v, p) => Number(percentile(v, p).toFixed(1));
    const result = {
      visitors: VISITORS,
      durationSec: DURATION,
      otherTenantEvents: { n: eventLat.length, p50Ms: pct(eventLat, 50), p99Ms: pct(eventLat, 99) },
      floodedUserPayments: { n: payLat.length, p50Ms: pct(payLat, 50), p99Ms: pct(payLat, 99) },
      statuses,
    };
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await server.stop();
    killAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

function payment(id) {
  return {
    payment_id: id,
    customer: { id: "cus_flood", user_id: "u_flood" },
    amount: 10,
    currency: "USD",
    kind: "charge",
    paid_at: "2024-01-15T10:30:00Z",
  };
}

await main();
