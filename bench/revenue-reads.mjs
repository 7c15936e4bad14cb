/**
 * The payment reads of the store behind the dashboard on SQLite
 * (`npm run bench:revenue`, issue 25): recentPayments (SiteOverview's list)
 * and mrrTotals (the MRR report) on a site of PAYMENTS payments (default
 * 100,000) from CUSTOMERS customers (default 20,000) spread evenly over 90
 * days, in two currencies, with refunds, chargebacks and failed payments, 80%
 * of the customers attributed (5 channels, 20 sources, 7 campaigns, 30
 * landing pages) and one customer in four subscribed. Each read is timed
 * RUNS times (default 7) after one warm-up; the median and the slowest are
 * printed, with both together, for the dashboard's 90 whole UTC days and
 * for 90 days from noon to noon (partial days at both ends). No events.
 * The revenue cuts (per day, per dimension, per channel) are query plans of
 * the analytics engine since migration 20, timed by `npm run
 * bench:analytics` in process and by row o of `npm run bench` through the
 * server. Deterministic data at a fixed date.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.ts";

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 2, 11, 12);
const PAYMENTS = Number(process.env.PAYMENTS ?? 100_000);
const CUSTOMERS = Number(process.env.CUSTOMERS ?? 20_000);
const RUNS = Number(process.env.RUNS ?? 7);
const BATCH = 5000;
const CHANNELS = ["Organic Search", "Paid Search", "Email", "Direct", "Referral"];
const SITE = "site_bench";

const dir = mkdtempSync(join(tmpdir(), "bench-revenue-"));
const store = createSqliteStore(join(dir, "bench.sqlite"));
try {
  await store.createAccount({ id: "acct_bench", name: "bench", plan: "scale", createdAt: NOW });
  await store.createSite({ id: SITE, accountId: "acct_bench", hostnames: [], createdAt: NOW });
  const t0 = performance.now();
  for (let i = 0; i < PAYMENTS; i += BATCH) {
    const writes = [];
    for (let j = i; j < Math.min(PAYMENTS, i + BATCH); j++) {
      const paidAt = NOW - Math.floor((j / PAYMENTS) * 90 * DAY);
      const c = j % CUSTOMERS;
      const customerId = `cus${c}`;
      const payment = {
        siteId: SITE,
        paymentId: `pay${j}`,
        customerId,
        currency: c % 4 ? "USD" : "EUR",
        amountMinor: 1000 + (j % 500),
        kind: j % 100 < 95 ? "charge" : j % 100 < 99 ? "refund" : "chargeback",
        status: j % 50 === 7 ? "failed" : "succeeded",
        paidAt,
        metadata: {},
        createdAt: paidAt,
        updatedAt: paidAt,
      };
      const write = { payment, customer: { siteId: SITE, customerId, at: paidAt } };
      if (c % 4 === 1) {
        write.subscription = {
          siteId: SITE,
          subscriptionId: `sub${c}`,
          customerId,
          currency: payment.currency,
          interval: c % 3 ? "month" : "year",
          amountMinor: 1000 + (c % 500),
          defaults: { status: "active", startedAt: paidAt },
          at: paidAt,
        };
      }
      writes.push(write);
    }
    await store.commitPayments(writes);
  }
  const t1 = performance.now();
  for (let c = 0; c < CUSTOMERS; c++) {
    if (c % 5 === 4) continue;
    await store.setAttribution(SITE, `cus${c}`, {
      channel: CHANNELS[c % CHANNELS.length],
      source: `source${c % 20}`,
      campaign: c % 2 ? `campaign${c % 7}` : undefined,
      landingPage: `https://example.com/l${c % 30}`,
      visitorId: `v${c}`,
      via: "customer_visitor_id",
      touchedAt: NOW - 100 * DAY,
    });
  }
  const t2 = performance.now();

  /** Each read of [from, to) timed RUNS times after a warm-up: median and slowest, and both together. */
  async function time(from, to) {
    const reads = {
      recentPayments: () => store.recentPayments(SITE, from, to, 20),
      mrrTotals: () => store.mrrTotals(SITE, to),
    };
    const times = { together: [] };
    for (const name of Object.keys(reads)) times[name] = [];
    for (let k = 0; k <= RUNS; k++) {
      let all = 0;
      for (const [name, read] of Object.entries(reads)) {
        const s = performance.now();
        await read();
        const ms = performance.now() - s;
        all += ms;
        if (k > 0) times[name].push(ms);
      }
      if (k > 0) times.together.push(all);
    }
    const summary = {};
    for (const [name, ms] of Object.entries(times)) {
      const sorted = ms.sort((a, b) => a - b);
      summary[name] = {
        medianMs: +sorted[Math.floor(sorted.length / 2)].toFixed(1),
        maxMs: +sorted.at(-1).toFixed(1),
      };
    }
    return summary;
  }
  // The dashboard's 90-day view: whole UTC days, today included.
  const end = Math.floor(NOW / DAY) * DAY + DAY;
  const wholeDays = await time(end - 90 * DAY, end);
  // Any other caller's period: 90 days from noon to noon (partial days at both ends).
  const noonToNoon = await time(NOW - 90 * DAY, NOW);
  console.log(
    JSON.stringify({
      store: "sqlite",
      payments: PAYMENTS,
      customers: CUSTOMERS,
      loadSeconds: {
        payments: +((t1 - t0) / 1000).toFixed(1),
        attribution: +((t2 - t1) / 1000).toFixed(1),
      },
      reads90WholeDays: wholeDays,
      reads90NoonToNoon: noonToNoon,
    }),
  );
} finally {
  await store.close();
  // KEEP=1 leaves the database for EXPLAIN QUERY PLAN and experiments.
  if (process.env.KEEP) console.error(join(dir, "bench.sqlite"));
  else rmSync(dir, { recursive: true, force: true });
}
