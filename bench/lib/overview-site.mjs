/**
 * The issue-25 site at scale, written straight into a store through its
 * commit paths (commitEvents, commitPayments, setAttribution, as in
 * production): EVENTS events from `visitors` visitors (EVENTS/10 unless
 * said), each with a first touch, and PAYMENTS succeeded payments from
 * `customers` customers (20,000 unless said; at most PAYMENTS), four in five
 * of them credited to a first touch, spread evenly over the 90 days before
 * `now`. Deterministic. Used by row o of `npm run bench` (the RPCs behind
 * the dashboard, through a listening server) and the analytics benches
 * (`npm run bench:analytics`, `bench:bytes`, `bench:rewrite`).
 */

import { createHash } from "node:crypto";

const DAY = 86_400_000;
const BATCH = 5000;
const CHANNELS = ["Organic Search", "Paid Search", "Email", "Direct", "Referral"];

/** The site's account and site ids. */
export const OVERVIEW_ACCOUNT = "acct_bench";
export const OVERVIEW_SITE = "site_bench";
/** A customer with payments, for CustomerJourney. */
export const OVERVIEW_CUSTOMER = "cus1";

/** The first touch of visitor number `v` (the one its first event made). */
function touchOf(v) {
  return {
    channel: CHANNELS[v % CHANNELS.length],
    source: `source${v % 20}`,
    campaign: `campaign${v % 7}`,
    landingPage: `https://example.com/l${v % 30}`,
  };
}

/**
 * Writes `count` succeeded payments of `siteId` through the store's commit
 * path (commitPayments, in batches): payment `pay<j>` of customer
 * `cus<j % customers>` paid at `at(j)`, 10.00 to 14.99, a quarter in EUR,
 * one in 25 a refund. The payments of both bench sites (this one and
 * bench/lib/analytics-site.mjs).
 * @param {any} store
 * @param {{ siteId: string, count: number, customers: number, at: (j: number) => number }} o
 */
export async function writePayments(store, { siteId, count, customers, at }) {
  for (let i = 0; i < count; i += BATCH) {
    const writes = [];
    for (let j = i; j < Math.min(count, i + BATCH); j++) {
      const paidAt = at(j);
      const payment = {
        siteId,
        paymentId: `pay${j}`,
        customerId: `cus${j % customers}`,
        currency: j % 4 ? "USD" : "EUR",
        amountMinor: 1000 + (j % 500),
        kind: j % 25 === 0 ? "refund" : "charge",
        status: "succeeded",
        paidAt,
        metadata: {},
        createdAt: paidAt,
        updatedAt: paidAt,
      };
      writes.push({ payment, customer: { siteId, customerId: payment.customerId, at: paidAt } });
    }
    await store.commitPayments(writes);
  }
}

/**
 * Loads the site into `store` (a store of the port, empty); returns the
 * seconds each part took.
 * `afterEvents`, when given, is awaited after each batch of events committed.
 * `hexIds`: visitor ids of 32 hex characters, as the service makes them
 * (src/domain/events/visitor-id.ts), instead of the short `v<n>`.
 * `oldestFirst`: rows written in time order, as a live site's arrive (the
 * default writes the newest first).
 * @param {{ store: any, now: number, events: number, payments: number, visitors?: number, customers?: number, afterEvents?: () => Promise<unknown>, hexIds?: boolean, oldestFirst?: boolean }} o
 */
export async function loadOverviewSite({
  store,
  now,
  events: EVENTS,
  payments: PAYMENTS,
  visitors: VISITORS,
  customers: CUSTOMERS,
  afterEvents,
  hexIds = false,
  oldestFirst = false,
}) {
  const idOf = (n) =>
    hexIds ? createHash("sha256").update(`v${n}`).digest("hex").slice(0, 32) : `v${n}`;
  const visitors = Math.max(1, Math.min(EVENTS, VISITORS ?? Math.floor(EVENTS / 10)));
  const customers = Math.max(1, CUSTOMERS ?? 20_000);
  // The j-th of n rows, newest first (j = 0 at `now`), or oldest first as a live
  // site's rows arrive (each visitor's first event, its first touch, is then its earliest).
  const at = (j, n) =>
    oldestFirst
      ? now - 90 * DAY + Math.ceil(((j + 1) / n) * 90 * DAY)
      : now - Math.floor((j / n) * 90 * DAY);
  await store.createAccount({ id: OVERVIEW_ACCOUNT, name: "bench", plan: "scale", createdAt: now });
  await store.createSite({
    id: OVERVIEW_SITE,
    accountId: OVERVIEW_ACCOUNT,
    hostnames: ["example.com"],
    createdAt: now,
  });
  const month = new Date(now).toISOString().slice(0, 7);
  const t0 = performance.now();
  for (let i = 0; i < EVENTS; i += BATCH) {
    const events = [];
    const touches = [];
    for (let j = i; j < Math.min(EVENTS, i + BATCH); j++) {
      const ts = at(j, EVENTS);
      const visitorId = idOf(j % visitors);
      events.push({
        siteId: OVERVIEW_SITE,
        name: j % 3 ? "pageview" : "signup",
        url: "https://example.com/p",
        ts,
        receivedAt: ts,
        visitorId,
      });
      if (j < visitors) {
        const touch = touchOf(j);
        touches.push({ siteId: OVERVIEW_SITE, visitorId, ts, internal: false, ...touch });
      }
    }
    await store.commitEvents([
      {
        accountId: OVERVIEW_ACCOUNT,
        month,
        ceiling: 1e15,
        countable: 0,
        events,
        links: [],
        touches,
      },
    ]);
    await afterEvents?.();
  }
  const t1 = performance.now();
  await writePayments(store, {
    siteId: OVERVIEW_SITE,
    count: PAYMENTS,
    customers,
    at: (j) => at(j, PAYMENTS),
  });
  // Four customers in five credited to visitor c's first touch (its first event's time),
  // as the attributor does after a payment (setAttribution writes the customer's payments).
  for (let c = 0; c < Math.min(customers, PAYMENTS); c++) {
    if (c % 5 === 0) continue;
    const t = touchOf(c);
    await store.setAttribution(OVERVIEW_SITE, `cus${c}`, {
      channel: t.channel,
      source: t.source,
      campaign: t.campaign,
      landingPage: t.landingPage,
      visitorId: idOf(c),
      via: "customer",
      touchedAt: at(c, EVENTS),
    });
  }
  const t2 = performance.now();
  return {
    events: +((t1 - t0) / 1000).toFixed(1),
    payments: +((t2 - t1) / 1000).toFixed(1),
  };
}
