/**
 * SiteOverview over a 90-day period on SQLite (`npm run bench:overview`,
 * issue 25): a site of EVENTS events (default 10,000,000, the size;
 * one visitor per ten events, each with a first touch) and PAYMENTS
 * succeeded payments (default 100,000), spread evenly over 90 days, loaded
 * through the store's commit paths (commitEvents keeps the daily rollups as
 * in production), then ReportsService's SiteOverview for the dashboard's
 * 90-day period (whole UTC days: rollups only) timed five times, and each
 * store read behind it once (the raw traffic reads too, for comparison:
 * the domain reads them only for partial days). docs/dashboard.md,
 * Performance. Deterministic data at a fixed date.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createReports } from "../src/domain/reports.ts";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { loadOverviewSite, OVERVIEW_SITE } from "./lib/overview-site.mjs";

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 2, 11, 12);
const EVENTS = Number(process.env.EVENTS ?? 10_000_000);
const PAYMENTS = Number(process.env.PAYMENTS ?? 100_000);
const SITE = OVERVIEW_SITE;

const dir = mkdtempSync(join(tmpdir(), "bench-overview-"));
const store = createSqliteStore(join(dir, "bench.sqlite"));
try {
  const loadSeconds = await loadOverviewSite({
    store,
    now: NOW,
    events: EVENTS,
    payments: PAYMENTS,
  });

  const reports = createReports({ store, clock: { now: () => NOW } });
  // The dashboard's "90d": the last 90 UTC days including today, [day 00:00Z, tomorrow 00:00Z).
  const to = Math.floor(NOW / DAY) * DAY + DAY;
  const from = to - 90 * DAY;
  const day = (t) => new Date(t).toISOString().slice(0, 10);
  const input = {
    siteId: SITE,
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
  };
  const runs = [];
  for (let k = 0; k < 5; k++) {
    const s = performance.now();
    await reports.siteOverview(input);
    runs.push(Math.round(performance.now() - s));
  }
  const reads = {};
  for (const [name, read] of Object.entries({
    trafficRollup: () => store.trafficRollup(SITE, day(from), day(to)),
    newVisitorRollup: () => store.newVisitorRollup(SITE, day(from), day(to)),
    revenueBreakdown: () => store.revenueBreakdown(SITE, from, to),
    revenueByChannel: () => store.revenueByChannel(SITE, from, to),
    recentPayments: () => store.recentPayments(SITE, from, to, 20),
    // Not behind a whole-day period: what the rollups replace, for comparison.
    rawTrafficByDay: () => store.trafficByDay(SITE, from, to),
    rawNewVisitorCounts: () => store.newVisitorCounts(SITE, from, to),
  })) {
    const s = performance.now();
    await read();
    reads[name] = +(performance.now() - s).toFixed(1);
  }
  console.log(
    JSON.stringify({
      store: "sqlite",
      events: EVENTS,
      payments: PAYMENTS,
      loadSeconds,
      siteOverview90dMs: runs,
      readsMs: reads,
    }),
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
