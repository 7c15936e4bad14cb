/**
 * The dashboard's first view as engine calls (`DATA_DIR=… npm run
 * bench:first-view-calls`, on a data directory that `LOAD=direct DATA_DIR=…
 * NOW=… npm run bench:analytics` wrote, its 90 days ending at NOW): the
 * fourteen Query and Funnel plans the page sends on load for the last DAYS
 * days (30 by default) ending at NOW's day, run one after another in one
 * process, as one page view, and RUNS such views, each in a new write
 * generation (bench/lib/new-generation.mjs: nothing one view computed serves
 * the next; with LIVE=1 the write is a live site's pageview at NOW, which
 * leaves the answers over earlier times, the comparison period's, to the
 * next view). AT_ONCE=n sends n calls at a time, as the page's queue does
 * (dashboard/src/calls.ts: 2), and reports the view's wall time instead of
 * the calls' sum. With ENGINE=<checkout> the views alternate between that build's
 * engine and this one. Per view: each call's time, the sum, and the time
 * spent outside DuckDB's statements; the median sum per build at the end.
 * DETAIL=1 lists each view's statements by total time, identical ones (same
 * SQL, same parameters) counted together; FULL=<call> prints that call's
 * statements whole, with their parameters.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TOP_METRICS } from "../dashboard/src/query.ts";
import { openAnalyticsStore } from "../src/store/duckdb/analytics-store.ts";
import { SITE_ID } from "./lib/analytics-site.mjs";
import { newGeneration } from "./lib/new-generation.mjs";
import { recordingStore } from "./lib/recording-store.mjs";

const dir = process.env.DATA_DIR;
if (!dir) throw new Error("DATA_DIR: a data directory written by LOAD=direct bench:analytics");
const NOW = Number(process.env.NOW ?? Date.now());
const DAYS = Number(process.env.DAYS ?? 30);
const RUNS = Number(process.env.RUNS ?? 4);
const AT_ONCE = Number(process.env.AT_ONCE ?? 1);
const LIVE = process.env.LIVE === "1";
const engines = {
  this: (await import("../src/store/duckdb/analytics-engine.ts")).createDuckDbAnalytics,
};
if (process.env.ENGINE) {
  engines.other = (
    await import(`${process.env.ENGINE}/src/store/duckdb/analytics-engine.ts`)
  ).createDuckDbAnalytics;
}

const analytics = await openAnalyticsStore({
  path: join(dir, "analytics.duckdb"),
  threads: Number(process.env.ANALYTICS_THREADS ?? 2),
  memoryLimit: process.env.ANALYTICS_MEMORY_LIMIT ?? "384MB",
});
/** Every statement of the view, with its call and time. */
const statements = [];
let call = "";
// The store as the engine sees it, each statement timed on its way to DuckDB.
const timed = recordingStore(analytics, (st) =>
  statements.push({ call, sql: st.sql.replace(/\s+/g, " "), values: st.values, ms: st.ms }),
);

const DAY = 86_400_000;
const to = Math.floor(NOW / DAY) * DAY + DAY;
const period = { from: to - DAYS * DAY, to };
const comparison = { from: period.from - DAYS * DAY, to: period.from };
/** A plan as the page asks it: the site in UTC, first touch, USD. */
const plan = (x) => ({
  siteId: SITE_ID,
  timeZone: "UTC",
  dimensions: [],
  filters: [],
  period,
  model: "first_touch",
  currency: "USD",
  limit: 10,
  offset: 0,
  orderBy: [{ field: x.metrics[0], desc: true }],
  ...x,
});
const panel = ["visitors", "net_revenue", "revenue_per_visitor"];
const queries = {
  currencies: plan({
    metrics: ["net_revenue"],
    dimensions: ["currency"],
    currency: undefined,
    limit: 100,
  }),
  realtime: plan({
    metrics: ["visitors"],
    period: { from: NOW - 300_000, to: NOW },
    currency: undefined,
  }),
  // The page's own top row (dashboard/src/query.ts).
  summary: plan({ metrics: TOP_METRICS.map((m) => m.name), comparison }),
  "visitors by day": plan({
    metrics: ["visitors"],
    dimensions: ["time:day"],
    comparison,
    limit: 1000,
    orderBy: [{ field: "time:day", desc: false }],
  }),
  channel: plan({ metrics: panel, dimensions: ["channel"] }),
  page: plan({ metrics: panel, dimensions: ["page"] }),
  country: plan({ metrics: panel, dimensions: ["country"] }),
  device: plan({ metrics: panel, dimensions: ["device"] }),
  goals: plan({
    metrics: ["visitors", "conversions", "conversion_rate"],
    dimensions: ["event"],
    filters: [{ dimension: "event", op: "is_not", values: ["pageview"] }],
  }),
  "time to convert": plan({
    metrics: ["paying_customers"],
    dimensions: ["days_to_first_payment"],
    limit: 100,
  }),
  medians: plan({
    metrics: ["median_days_to_first_payment", "median_visits_to_first_payment"],
    dimensions: ["channel"],
  }),
  customers: plan({ metrics: ["net_revenue", "payments"], dimensions: ["customer"] }),
};
const funnels = Object.fromEntries(
  ["signup", "checkout"].map((goal) => [
    `funnel ${goal}`,
    {
      siteId: SITE_ID,
      timeZone: "UTC",
      filters: [],
      period,
      windowMs: DAYS * DAY,
      model: "first_touch",
      currency: "USD",
      steps: [
        { kind: "page_prefix", value: "/", filters: [], label: "any page" },
        { kind: "event", value: goal, filters: [], label: goal },
      ],
    },
  ]),
);

const sums = Object.fromEntries(Object.keys(engines).map((k) => [k, []]));
const builds = Object.keys(engines);
const made = Object.fromEntries(
  builds.map((b) => [b, engines[b]({ analytics: timed, timeoutMs: 600_000, perSite: 4 })]),
);
for (let r = 0; r < RUNS * builds.length; r++) {
  const build = builds[r % builds.length];
  const engine = made[build];
  await newGeneration(analytics, LIVE ? { siteId: SITE_ID, at: NOW } : undefined);
  statements.length = 0;
  const calls = {};
  const todo = [...Object.entries(queries), ...Object.entries(funnels)];
  const began = performance.now();
  // AT_ONCE calls in flight, as the page's queue sends them (dashboard/src/calls.ts).
  const worker = async () => {
    for (let next = todo.shift(); next; next = todo.shift()) {
      const [name, p] = next;
      call = name;
      const s = performance.now();
      if (name in funnels) await engine.funnel(p);
      else await engine.query(p);
      calls[name] = Math.round(performance.now() - s);
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, worker));
  const wall = Math.round(performance.now() - began);
  const sum = AT_ONCE === 1 ? Object.values(calls).reduce((a, x) => a + x, 0) : wall;
  sums[build].push(sum);
  const inSql = {};
  for (const st of statements) inSql[st.call] = (inSql[st.call] ?? 0) + st.ms;
  const outside = Object.entries(calls).reduce((a, [k, v]) => a + v - (inSql[k] ?? 0), 0);
  console.log(
    `${build}: sum ${sum} ms (outside statements ${Math.round(outside)} ms) ${JSON.stringify(calls)}`,
  );
  if (process.env.FULL) {
    for (const st of statements.filter((x) => x.call === process.env.FULL)) {
      const values = JSON.stringify(st.values, (_k, v) => (typeof v === "bigint" ? String(v) : v));
      console.log(`-- ${Math.round(st.ms)} ms ${values}\n${st.sql}\n`);
    }
  }
  if (!process.env.DETAIL) continue;
  const same = new Map();
  for (const st of statements) {
    const key = `${st.sql}${JSON.stringify(st.values, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`;
    const e = same.get(key) ?? { n: 0, ms: 0, calls: [], sql: st.sql };
    e.n += 1;
    e.ms += st.ms;
    e.calls.push(st.call);
    same.set(key, e);
  }
  for (const e of [...same.values()].sort((a, b) => b.ms - a.ms)) {
    console.log(
      `  ${String(Math.round(e.ms)).padStart(5)} ms ×${e.n} [${e.calls.join(", ")}] ${e.sql.slice(0, 140)}`,
    );
  }
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log(
  JSON.stringify({ sums, medianMs: Object.fromEntries(builds.map((b) => [b, median(sums[b])])) }),
);
analytics.close();
console.log(`load average ${readFileSync("/proc/loadavg", "utf8").trim()}`);
