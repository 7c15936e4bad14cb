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

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 2, 11, 12);
const EVENTS = Number(process.env.EVENTS ?? 10_000_000);
const PAYMENTS = Number(process.env.PAYMENTS ?? 100_000);
const VISITORS = Math.max(1, Math.floor(EVENTS / 10));
const BATCH = 5000;
const CHANNELS = ["Organic Search", "Paid Search", "Email", "Direct", "Referral"];
const SITE = "site_bench";

const dir = mkdtempSync(join(tmpdir(), "bench-overview-"));
const store = createSqliteStore(join(dir, "bench.sqlite"));
try {
  await store.createAccount({ id: "acct_bench", name: "bench", plan: "scale", createdAt: NOW });
  await store.createSite({ id: SITE, accountId: "acct_bench", hostnames: [], createdAt: NOW });
  const t0 = performance.now();
  for (let i = 0; i < EVENTS; i += BATCH) {
    const events = [];
    const touches = [];
    for (let j = i; j < Math.min(EVENTS, i + BATCH); j++) {
      const ts = NOW - Math.floor((j / EVENTS) * 90 * DAY);
      const visitorId = `v${j % VISITORS}`;
      events.push({
        siteId: SITE,
        name: j % 3 ? "pageview" : "signup",
        url: "https://example.com/p",
        ts,
        receivedAt: ts,
        visitorId,
      });
      if (j < VISITORS) {
        touches.push({
          siteId: SITE,
          visitorId,
          ts,
          internal: false,
          channel: CHANNELS[j % CHANNELS.length],
          source: `source${j % 20}`,
          campaign: `campaign${j % 7}`,
          landingPage: `https://example.com/l${j % 30}`,
        });
      }
    }
    await store.commitEvents([
      {
        accountId: "acct_bench",
        month: "2026-03",
        ceiling: 1e15,
        countable: 0,
        events,
        links: [],
        touches,
      },
    ]);
  }
  const t1 = performance.now();
  for (let i = 0; i < PAYMENTS; i += BATCH) {
    const writes = [];
    for (let j = i; j < Math.min(PAYMENTS, i + BATCH); j++) {
      const paidAt = NOW - Math.floor((j / PAYMENTS) * 90 * DAY);
      const payment = {
        siteId: SITE,
        paymentId: `pay${j}`,
        customerId: `cus${j % 20_000}`,
        currency: j % 4 ? "USD" : "EUR",
        amountMinor: 1000 + (j % 500),
        kind: "charge",
        status: "succeeded",
        paidAt,
        metadata: {},
        createdAt: paidAt,
        updatedAt: paidAt,
      };
      writes.push({
        payment,
        customer: { siteId: SITE, customerId: payment.customerId, at: paidAt },
      });
    }
    await store.commitPayments(writes);
  }
  const t2 = performance.now();

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
      loadSeconds: {
        events: +((t1 - t0) / 1000).toFixed(1),
        payments: +((t2 - t1) / 1000).toFixed(1),
      },
      siteOverview90dMs: runs,
      readsMs: reads,
    }),
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
