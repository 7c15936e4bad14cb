/**
 * The dashboard's first view at scale (`npm run bench:first-view`, issues 30
 * and 33): the built server (dist/, as `npm start` runs it) started on DATA_DIR (a data directory written by
 * `LOAD=direct DATA_DIR=… NOW=… npm run bench:analytics`, its 90 days ending
 * at NOW, which must be this hour so that the page's default period has
 * data), then Chromium opens `/dashboard?site=site_bench` signed in with the
 * admin token, RUNS times each for the default period (30 days) and 90 days.
 * Before each first view one pageview is collected (POST /api/v1/collect, as
 * the tracking script sends it): the page's first call then waits for the
 * feed to apply it, as on a live site, and no answer of a previous view is
 * reused (queries of one write generation share what they compute:
 * src/store/duckdb/read-memo.ts).
 * The first view is every Query and Funnel call the page makes on load, as it
 * makes them (its own queue, two at a time): the time from the navigation to
 * the last of those answers. Then each call the page made, replayed alone
 * (each time after a write the feed applied first)
 * through HTTP (Connect JSON, as the page sends it) RUNS times: its p50 and
 * p99 (a call that did not answer 200 is listed by its status). Then
 * SiteOverview (the API's call behind the old dashboard) over the last 90
 * whole UTC days, RUNS times. The server's peak RSS (VmHWM) at the end. The
 * server takes the environment (e.g. ANALYTICS_QUERY_TIMEOUT_MS to time
 * calls past the default 10 s).
 * TRICKLE=<n> sends n pageviews a second through the collect endpoint during
 * each first view (a live site: the feed commits while the page loads, each
 * commit a new write generation); REPLAYS=0 leaves out the calls alone and
 * SiteOverview.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { launchChromium } from "../test/helpers/chromium.ts";
import { writePageview } from "./lib/new-generation.mjs";

const DATA_DIR = process.env.DATA_DIR;
if (!DATA_DIR) throw new Error("DATA_DIR: a data directory written by LOAD=direct bench:analytics");
const RUNS = Number(process.env.RUNS ?? 5);
const TRICKLE = Number(process.env.TRICKLE ?? 0);
const REPLAYS = process.env.REPLAYS !== "0";
const SITE = "site_bench";
const TOKEN = "bench-first-view-token-0123456789";

/** A free TCP port on 127.0.0.1. */
const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
// The built server, as `npm start` runs it (the script builds first).
const server = spawn(process.execPath, ["dist/src/main.js"], {
  env: {
    ...process.env,
    PORT: String(port),
    HOST: "127.0.0.1",
    STORE_URL: `sqlite:${join(DATA_DIR, "ingest.sqlite")}`,
    ADMIN_TOKEN: TOKEN,
    LOG_LEVEL: "warn",
  },
  stdio: ["ignore", "inherit", "inherit"],
});
const exited = new Promise((resolve) => server.once("exit", resolve));

/** The server's peak and current RSS (MiB), from /proc. */
function serverRss() {
  const status = readFileSync(`/proc/${server.pid}/status`, "utf8");
  const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { peakMiB: Math.round(kb("VmHWM") / 1024), nowMiB: Math.round(kb("VmRSS") / 1024) };
}

const ms = (x) => Math.round(x);
function percentiles(runs) {
  const s = runs.filter((x) => typeof x === "number").sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { p50Ms: at(0.5), p99Ms: at(0.99), runsMs: runs };
}

let browser;
try {
  // Ready: the store takes writes and the analytics engine answers.
  for (let i = 0; ; i++) {
    const ok = await fetch(`${base}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (server.exitCode !== null || i > 1200) throw new Error("the server did not become ready");
    await new Promise((r) => setTimeout(r, 100));
  }
  browser = await launchChromium();

  /** Pageviews at TRICKLE a second until `stop()`, which resolves to how many were sent. */
  const trickle = () => {
    let on = TRICKLE > 0;
    let sent = 0;
    const loop = (async () => {
      while (on) {
        const next = performance.now() + 1000 / TRICKLE;
        await writePageview(base, TOKEN, SITE, { settle: false });
        sent++;
        const wait = next - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
    })();
    return async () => {
      on = false;
      await loop;
      return sent;
    };
  };

  /** One first view: every data call of the page's load, its requests and the time to the last answer. */
  const firstView = async (query) => {
    // A pageview first, not awaited through a Query: the page's first call waits for the feed.
    await writePageview(base, TOKEN, SITE, { settle: false });
    const stopTrickle = trickle();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addInitScript(
      ([t]) => sessionStorage.setItem("ingest.dashboard.token", t),
      [TOKEN],
    );
    const page = await context.newPage();
    const calls = new Map();
    page.on("request", (r) => {
      const m = /\/ingest\.v1\.ReportsService\/(Query|Funnel)$/.exec(r.url());
      if (m) calls.set(r, { method: m[1], body: r.postData(), start: performance.now() });
    });
    const done = (r, failed) => {
      const c = calls.get(r);
      if (c) Object.assign(c, { end: performance.now(), failed });
    };
    page.on("requestfinished", (r) => done(r, false));
    page.on("requestfailed", (r) => done(r, true));
    const t0 = performance.now();
    await page.goto(`${base}/dashboard?site=${SITE}${query}`);
    // Settled: at least one call, every call answered, none sent for a second.
    for (;;) {
      await page.waitForTimeout(200);
      const list = [...calls.values()];
      const last = Math.max(0, ...list.map((c) => c.end ?? Number.POSITIVE_INFINITY));
      if (list.length > 0 && last !== Number.POSITIVE_INFINITY && performance.now() - last > 1000) {
        break;
      }
    }
    const trickled = await stopTrickle();
    const list = [...calls.values()];
    const statuses = await Promise.all(
      [...calls.keys()].map(async (r) => (await r.response())?.status() ?? 0),
    );
    await context.close();
    return {
      ms: ms(Math.max(...list.map((c) => c.end)) - t0),
      firstCallMs: ms(Math.min(...list.map((c) => c.start)) - t0),
      calls: list.length,
      trickled,
      failed: list.filter((c) => c.failed).length + statuses.filter((s) => s !== 200).length,
      requests: list.map((c) => ({
        method: c.method,
        body: c.body,
        ms: ms(c.end - c.start),
      })),
    };
  };

  const views = {};
  const replays = {};
  for (const [name, query] of [
    ["default (30 days)", ""],
    ["90 days", "&period=90d"],
  ]) {
    const runs = [];
    const firstCalls = [];
    const failedCalls = [];
    const trickled = [];
    let sample;
    for (let k = 0; k < RUNS; k++) {
      const v = await firstView(query);
      runs.push(v.ms);
      firstCalls.push(v.firstCallMs);
      sample ??= v;
      failedCalls.push(v.failed);
      trickled.push(v.trickled);
    }
    views[name] = {
      ...percentiles(runs),
      calls: sample.calls,
      // Pageviews sent during each run (TRICKLE a second).
      ...(TRICKLE > 0 ? { trickled } : {}),
      // Calls that did not answer 200 (a query past ANALYTICS_QUERY_TIMEOUT_MS answers 503), per run.
      failedCalls,
      // From the navigation to the page's first Query or Funnel request, per run.
      firstCallMs: firstCalls,
      callsOfFirstRunMs: sample.requests.map((r) => `${r.method} ${r.ms}`),
    };
    // Each call alone through HTTP, as the page sent it.
    if (process.env.BODIES_FILE) {
      // The page's request bodies, to replay or explain one call at a time.
      writeFileSync(
        `${process.env.BODIES_FILE}.${name.split(" ")[0]}.json`,
        JSON.stringify(sample.requests, null, 2),
      );
    }
    const byCall = [];
    for (const r of REPLAYS ? sample.requests : []) {
      const times = [];
      for (let k = 0; k < RUNS; k++) {
        await writePageview(base, TOKEN, SITE);
        const s = performance.now();
        const res = await fetch(`${base}/ingest.v1.ReportsService/${r.method}`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
          body: r.body,
        });
        await res.arrayBuffer();
        times.push(res.status === 200 ? ms(performance.now() - s) : `${res.status}`);
      }
      const req = JSON.parse(r.body);
      const what =
        r.method === "Funnel"
          ? `Funnel ${req.steps?.map((s) => `${s.kind}:${s.value}`).join(" > ")}`
          : `Query ${(req.metrics ?? []).join(",")} by ${(req.dimensions ?? []).join(",") || "-"}${req.filters ? ` where ${JSON.stringify(req.filters)}` : ""}${req.compare ? ` compare ${req.compare}` : ""}${req.period?.from ? " (instants)" : ""}`;
      byCall.push({ call: what, ...percentiles(times) });
    }
    replays[name] = byCall;
  }
  // SiteOverview (the API's call behind the old dashboard, row o's), the last 90 whole UTC days.
  const today = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  const overview = [];
  for (let k = 0; k < (REPLAYS ? RUNS : 0); k++) {
    await writePageview(base, TOKEN, SITE);
    const s = performance.now();
    const res = await fetch(`${base}/ingest.v1.ReportsService/SiteOverview`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({
        siteId: SITE,
        from: new Date(today - 90 * 86_400_000).toISOString(),
        to: new Date(today).toISOString(),
      }),
    });
    await res.arrayBuffer();
    overview.push(res.status === 200 ? ms(performance.now() - s) : `${res.status}`);
  }
  console.log(
    JSON.stringify(
      {
        dataDir: DATA_DIR,
        runs: RUNS,
        firstView: views,
        eachCallAloneThroughHttp: replays,
        siteOverview90Days: percentiles(overview),
        serverRss: serverRss(),
        loadavg: readFileSync("/proc/loadavg", "utf8").trim(),
      },
      null,
      2,
    ),
  );
} finally {
  await browser?.close();
  server.kill("SIGTERM");
  await exited;
}
