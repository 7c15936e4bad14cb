/**
 * The running rewrite of the analytics file (`npm run bench:rewrite`, issue
 * 30): EVENTS events (default 1,000,000) and PAYMENTS payments of the
 * issue-25 site loaded into SQLite (bench/lib/overview-site.mjs), a listening
 * server whose feed moves them into DuckDB, one visitor's events erased (the
 * log entry erasure writes), then the owner's rewrite (feed.compact(): copy,
 * swap, reopen, SQLite WAL truncated) while GET /healthz and POST
 * /api/v1/payments run at a steady rate and one Query is asked in the middle.
 * Prints the rewrite's seconds (whole and swap), the file's bytes before and
 * after, and p50/p99/max of both probes for requests started during the
 * rewrite, and of the same probes for BEFORE_MS (10 s) before it, in the
 * same run. docs/performance.md, "The running rewrite".
 */

import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { createAdmin } from "../src/domain/admin.ts";
import { systemClock } from "../src/domain/clock.ts";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { paymentBody } from "./lib/bodies.mjs";
import { percentile } from "./lib/load.mjs";
import { loadOverviewSite, OVERVIEW_SITE } from "./lib/overview-site.mjs";

const NOW = Date.UTC(2026, 2, 11, 12);
const EVENTS = Number(process.env.EVENTS ?? 1_000_000);
const PAYMENTS = Number(process.env.PAYMENTS ?? 10_000);
/** Probes per second of each kind. */
const RATE = Number(process.env.RATE ?? 50);
const ADMIN = "bench-admin-token-0123456789abcdef";

const dir = mkdtempSync(join(tmpdir(), "bench-rewrite-"));
const sqlitePath = join(dir, "ingest.sqlite");
let app;
try {
  const store = createSqliteStore(sqlitePath);
  const t0 = performance.now();
  await loadOverviewSite({ store, now: NOW, events: EVENTS, payments: PAYMENTS });
  const loadSeconds = (performance.now() - t0) / 1000;
  // A second tenant with a key for the payments probe.
  const admin = createAdmin({ store, clock: systemClock });
  const { accountId, ownerUserId } = await admin.createAccount({
    name: "probe",
    plan: "scale",
    ownerEmail: "probe@example.com",
  });
  const { siteId } = await admin.createSite({ accountId, hostnames: ["example.com"] });
  const { key } = await admin.createKey({
    siteId,
    name: "probe",
    scopes: ["events", "payments"],
    actorUserId: ownerUserId,
  });
  const config = loadConfig({
    PORT: "0",
    STORE_URL: `sqlite:${sqlitePath}`,
    LOG_LEVEL: "silent",
    ADMIN_TOKEN: ADMIN,
    // The bench triggers the rewrite itself.
    ANALYTICS_COMPACT_INTERVAL_MS: "86400000",
    ...process.env,
  });
  app = await createApp({ config, store, clock: systemClock });
  const port = await app.listen();
  const t1 = performance.now();
  await app.analytics.feed.catchUp();
  const moveSeconds = (performance.now() - t1) / 1000;
  // What an erasure of visitor v1 logs (kind 5): the file keeps its rows' bytes until rewritten.
  const db = new Database(sqlitePath);
  db.prepare("INSERT INTO analytics_feed (kind, site_id, key) VALUES (5, ?, 'v1')").run(
    OVERVIEW_SITE,
  );
  db.close();
  await app.analytics.feed.catchUp();
  if (app.analytics.feed.dirtySince() === undefined) throw new Error("the erasure removed nothing");

  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const call = (method, path, body, headers = {}) =>
    new Promise((resolve) => {
      const started = performance.now();
      const req = http.request(
        {
          agent,
          host: "127.0.0.1",
          port,
          method,
          path,
          headers: { "content-type": "application/json", ...headers },
        },
        (res) => {
          res.resume();
          res.on("end", () =>
            resolve({ status: res.statusCode, started, ms: performance.now() - started }),
          );
        },
      );
      req.on("error", () => resolve({ status: 0, started, ms: performance.now() - started }));
      req.end(body);
    });
  const samples = { healthz: [], payment: [] };
  let probing = true;
  let n = 0;
  const probe = async (kind) => {
    const interval = 1000 / RATE;
    let next = performance.now();
    const inflight = [];
    while (probing) {
      const i = n++;
      inflight.push(
        (kind === "healthz"
          ? call("GET", "/healthz")
          : call("POST", "/api/v1/payments", paymentBody(`pay_probe_${i}`, `cus_probe_${i % 50}`), {
              authorization: `Bearer ${key}`,
            })
        ).then((r) => samples[kind].push(r)),
      );
      next += interval;
      await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
    }
    await Promise.all(inflight);
  };
  const probes = [probe("healthz"), probe("payment")];
  // The same probes for BEFORE_MS without a rewrite: the baseline of this run.
  await new Promise((r) => setTimeout(r, Number(process.env.BEFORE_MS ?? 10_000)));
  const rewriteStart = performance.now();
  const rewriting = app.analytics.feed.compact();
  // A Query asked while the copy runs (it waits at most for the swap, or for the feed).
  const query = call(
    "POST",
    `/api/v1/sites/${OVERVIEW_SITE}/query`,
    JSON.stringify({
      metrics: ["visitors", "pageviews"],
      period: { from_day: "2025-12-11", to_day: "2026-03-11" },
    }),
    { authorization: `Bearer ${ADMIN}` },
  );
  const report = await rewriting;
  const rewriteEnd = performance.now();
  const q = await query;
  await new Promise((r) => setTimeout(r, 1000));
  probing = false;
  await Promise.all(probes);
  const during = (list) => list.filter((s) => s.started >= rewriteStart && s.started <= rewriteEnd);
  const stats = (list) => {
    const ms = list.map((s) => s.ms).sort((a, b) => a - b);
    return {
      n: ms.length,
      non2xx: list.filter((s) => s.status < 200 || s.status > 299).length,
      p50: +(percentile(ms, 50) ?? 0).toFixed(1),
      p99: +(percentile(ms, 99) ?? 0).toFixed(1),
      max: +(ms.at(-1) ?? 0).toFixed(1),
    };
  };
  console.log(
    JSON.stringify(
      {
        events: EVENTS,
        payments: PAYMENTS,
        loadSeconds: +loadSeconds.toFixed(1),
        moveSeconds: +moveSeconds.toFixed(1),
        rewrite: {
          seconds: +report.seconds.toFixed(2),
          swapSeconds: +report.swapSeconds.toFixed(3),
          bytesBefore: report.bytesBefore,
          bytesAfter: report.bytesAfter,
          sqliteWalTruncated: report.sqliteWalTruncated,
        },
        queryDuringRewrite: { status: q.status, ms: +q.ms.toFixed(1) },
        duringRewrite: {
          healthz: stats(during(samples.healthz)),
          payment: stats(during(samples.payment)),
        },
        beforeRewrite: {
          healthz: stats(samples.healthz.filter((x) => x.started < rewriteStart)),
          payment: stats(samples.payment.filter((x) => x.started < rewriteStart)),
        },
        loadavg: (await import("node:os")).loadavg().map((x) => +x.toFixed(2)),
      },
      null,
      2,
    ),
  );
} finally {
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
}
