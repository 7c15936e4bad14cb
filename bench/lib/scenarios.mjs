/**
 * The scenarios of `npm run bench`, as data: what each row sends where, and
 * which rows a run measures in which order (`planScenarios`). Running them is
 * bench/run.mjs's job; nothing here starts a process or reads the clock.
 */
import {
  batchBodies,
  collectBodies,
  HEADER_UA,
  paymentBody,
  singleEventBodies,
} from "./bodies.mjs";

export const EVENTS_PATH = "/api/v1/events";
export const PAYMENTS_PATH = "/api/v1/payments";
export const COLLECT_PATH = "/api/v1/collect";

const withWorkers = (label, workers) => `${label}${workers ? ` (WORKERS=${workers})` : ""}`;

/**
 * The bare-Fastify baseline. It runs first and, when other rows ran, again
 * last: ratios are to the mean of the two (report.mjs, `baselineRate`), so a
 * change of the machine's speed during the run (up to 2× within minutes on the
 * shared VM) moves both ends of the ratio rather than only one.
 */
export const baseline = (again = false) => ({
  kind: "baseline",
  id: again ? "baseline2" : "baseline",
  label: again
    ? "baseline again, at the end (ratios use the mean)"
    : "baseline: bare Fastify, parse JSON, 204",
  path: EVENTS_PATH,
  makeBodies: () => singleEventBodies("site_baseline", 4096),
});

/** a) One pageview per request; the single-process row also measures latency at 70% of max. */
export const scenarioA = (workers) => ({
  kind: "http",
  id: workers ? `a${workers}` : "a",
  label: withWorkers("a) single pageview events", workers),
  path: EVENTS_PATH,
  table: "events",
  eventsPerRequest: 1,
  makeBodies: (t) => singleEventBodies(t.siteId, 4096),
  at70: !workers,
  workers,
});

/** b) Batches of 50 events per request. */
export const scenarioB = (workers) => ({
  kind: "http",
  id: workers ? `b${workers}` : "b",
  label: withWorkers("b) batches of 50 events", workers),
  path: EVENTS_PATH,
  table: "events",
  eventsPerRequest: 50,
  makeBodies: (t) => batchBodies(t.siteId, 256),
  workers,
});

/** c) A new payment id and customer in every request (phases get their own prefix). */
export const scenarioC = (workers) => ({
  kind: "http",
  id: workers ? `c${workers}` : "c",
  label: withWorkers("c) new payments (distinct ids)", workers),
  path: PAYMENTS_PATH,
  table: "payments",
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

/** d) The same 100 payments over and over: upserts. */
export const scenarioD = () => ({
  kind: "http",
  id: "d",
  label: "d) re-sent payments (upserts of 100 ids)",
  path: PAYMENTS_PATH,
  table: "payments",
  makeBodies: () => Array.from({ length: 100 }, (_, i) => paymentBody(`pay_${i}`, `cus_${i % 20}`)),
});

/** e) gRPC RecordEvents with batches of 50, over one HTTP/2 connection. */
export const scenarioE = () => ({
  kind: "grpc",
  id: "e",
  label: "e) gRPC RecordEvents, batches of 50",
});

/**
 * f) The public collect endpoint: the same pageviews as a) without ip/ua (the
 * connection's are used), sent as a browser does (text/plain, Origin, no key).
 * Every request comes from 127.0.0.1, so the limit is set out of reach: the
 * row measures the cost of checking it, not of refusing. `f<N>x` (only when
 * named) is the WORKERS=N row with the limit off, to isolate the cost of
 * asking the cluster primary.
 */
export const scenarioF = (workers, limit = "100000000") => ({
  kind: "http",
  id: `f${workers ? workers : ""}${limit === "0" ? "x" : ""}`,
  label: `${withWorkers("f) collect pageviews (browser, no key)", workers)}${limit === "0" ? ", COLLECT_RATE_LIMIT=0" : ""}`,
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

/** o) The RPCs behind the dashboard's 90-day view, on a site of issue 25's size (runOverview). */
export const scenarioO = (store = "sqlite") => ({
  kind: "overview",
  id: store === "sqlite" ? "o" : "om",
  label: `o) dashboard calls for a 90-day view (issue 25's site), ${store === "sqlite" ? "SQLite" : "MongoDB"}`,
  store,
  calls: 10,
});

/**
 * r) Single pageviews (a)'s bodies) at a fixed moderate rate while the
 * retention pruner removes a million old events of the same site, against
 * the same without pruning (retention off), phases interleaved on two copies
 * of one prepared store (bench/run.mjs, runRetention). Target: the p99 with
 * the prune within 2× of the p99 without.
 */
export const scenarioR = () => ({
  kind: "retention",
  id: "r",
  label: "r) single pageviews during a prune of 1,000,000 old events",
  path: EVENTS_PATH,
  oldEvents: 1_000_000,
  rate: 300,
  phases: 3,
  makeBodies: (t) => singleEventBodies(t.siteId, 4096),
  // A short interval so the pass starts as soon as the server is up.
  serverEnv: { RETENTION_INTERVAL_MS: "200" },
});

/**
 * The rows of a run, in the order they are measured. `only` (BENCH_ONLY) keeps
 * the named ids; c<N> and f<N>x run only when named. `workersOk`: N > 0 and
 * the built server has a WORKERS setting.
 */
export function planScenarios({ only, workers, workersOk }) {
  const want = (id) => !only || only.has(id);
  const named = (id) => only?.has(id) ?? false;
  const plan = [
    baseline(),
    scenarioA(),
    scenarioB(),
    scenarioC(),
    scenarioD(),
    scenarioE(),
    scenarioF(),
    scenarioR(),
  ].filter((s) => want(s.id));
  if (workersOk) {
    plan.push(
      ...[scenarioA(workers), scenarioB(workers), scenarioF(workers)].filter((s) => want(s.id)),
    );
    if (named(`f${workers}x`)) plan.push(scenarioF(workers, "0"));
    // Not in the default run (time budget): BENCH_ONLY=c2 adds it.
    if (named(`c${workers}`)) plan.push(scenarioC(workers));
  }
  // Last but the baseline: it loads a large site first (about two minutes).
  // The MongoDB half runs when MONGODB_URI is set (its row says so when not).
  plan.push(...[scenarioO(), scenarioO("mongodb")].filter((s) => want(s.id)));
  if (want("baseline") && plan.some((s) => s.id !== "baseline")) plan.push(baseline(true));
  return plan;
}
