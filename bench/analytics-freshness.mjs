/**
 * Freshness of the analytics store (`npm run bench:freshness`, issue 30):
 * a listening server on a fresh SQLite file with its feed at the default
 * interval, LOADERS clients sending batches of 50 new-visitor pageviews as
 * fast as they are acknowledged, and PROBES probe events, each sent alone:
 * the time from its 204 to the first Query that counts it (polled every
 * 10 ms). Prints p50, p99 and max in ms, and the events/s of the load.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { createAdmin } from "../src/domain/admin.ts";
import { systemClock } from "../src/domain/clock.ts";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.ts";

const PROBES = Number(process.env.PROBES ?? 100);
const LOADERS = Number(process.env.LOADERS ?? 4);
const UA =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36";

const dir = mkdtempSync(join(tmpdir(), "bench-freshness-"));
const config = loadConfig({
  PORT: "0",
  STORE_URL: `sqlite:${join(dir, "ingest.sqlite")}`,
  LOG_LEVEL: "silent",
  ...process.env,
});
const store = createSqliteStore(join(dir, "ingest.sqlite"));
const admin = createAdmin({ store, clock: systemClock });
const { accountId, ownerUserId } = await admin.createAccount({
  name: "bench",
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
const app = await createApp({ config, store, clock: systemClock });
const port = await app.listen();
const url = `http://127.0.0.1:${port}/api/v1/events`;
const post = (body) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });

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
  for (;;) {
    const r = await app.analytics.engine.query({
      siteId,
      timeZone: "UTC",
      metrics: ["events"],
      dimensions: [],
      filters: [{ dimension: "prop:k", op: "is", values: [String(i)] }],
      period: { from: Date.now() - 3_600_000, to: Date.now() + 60_000 },
      model: "first_touch",
      orderBy: [{ field: "events", desc: true }],
      limit: 1,
      offset: 0,
    });
    if (r.totals[0]?.value === 1) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  lags.push(performance.now() - acked);
}
stop = true;
await Promise.all(loaders);
const seconds = (performance.now() - started) / 1000;
await app.close();
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
