/**
 * The small hand-made journey the Query tests send through the HTTP API
 * (test/reports/query.test.ts, query-workers.test.ts, analytics-engine.test.ts):
 * visitor A lands from a newsletter (Email), views pricing and signs up, and
 * pays 29.99 USD less a 5 USD refund 20 minutes after landing; visitor B lands
 * from Google, views pricing 45 minutes later, and (with `eur`) pays 10 EUR.
 * With the Query and Funnel requests the tests ask of it and their exact answers.
 */
import { expect } from "vitest";
import { BROWSER_UA } from "./fixtures.js";
import { postJson, TEST_NOW } from "./test-server.js";

export const MIN = 60_000;
/** A's landing, 50 minutes before the test clock's now. */
export const T0 = TEST_NOW - 50 * MIN;
export const A = "visitor-aaaa-000001";
export const B = "visitor-bbbb-000002";

/** The journey's events as one batch of `siteId` (POST /api/v1/events). */
export function journeyEvents(siteId: string) {
  return {
    s: siteId,
    b: [
      {
        e: "pageview",
        u: "https://example.com/?utm_source=newsletter&utm_medium=email",
        vid: A,
        ts: T0,
      },
      {
        e: "pageview",
        u: "https://example.com/pricing",
        r: "https://example.com/",
        vid: A,
        ts: T0 + 5 * MIN,
      },
      {
        e: "signup",
        u: "https://example.com/pricing",
        vid: A,
        ts: T0 + 10 * MIN,
        p: { plan: "pro" },
      },
      {
        e: "pageview",
        u: "https://example.com/",
        r: "https://www.google.com/",
        vid: B,
        ts: T0 + MIN,
      },
      { e: "pageview", u: "https://example.com/pricing", vid: B, ts: T0 + 46 * MIN },
    ],
  };
}

/** The journey's payments (POST /api/v1/payments bodies); with `eur`, B's 10 EUR too. */
export function journeyPayments(options: { eur?: boolean } = {}) {
  const a = (payment_id: string, amount: number, kind: string) => ({
    payment_id,
    customer: { id: "cus_a", visitor_id: A },
    amount,
    currency: "USD",
    kind,
    paid_at: new Date(T0 + 20 * MIN).toISOString(),
  });
  const payments = [a("pay_1", 29.99, "charge"), a("pay_2", 5, "refund")];
  // B pays 10 EUR 47 minutes after its first visit: a second currency, its first charge.
  if (options.eur) {
    payments.push({
      payment_id: "pay_3",
      customer: { id: "cus_b", visitor_id: B },
      amount: 10,
      currency: "EUR",
      kind: "charge",
      paid_at: new Date(T0 + 48 * MIN).toISOString(),
    });
  }
  return payments;
}

/** Sends the journey to the server at `url` with an ingest key; each write acknowledged. */
export async function sendJourney(
  url: string,
  siteId: string,
  key: string,
  options: { eur?: boolean } = {},
): Promise<void> {
  const events = await postJson(`${url}/api/v1/events`, journeyEvents(siteId), {
    key,
    headers: { "user-agent": BROWSER_UA },
  });
  expect(events.status, events.text).toBe(204);
  for (const payment of journeyPayments(options)) {
    const res = await postJson(`${url}/api/v1/payments`, payment, { key });
    expect(res.status, res.text).toBe(200);
  }
}

/** Query's answer value of a count, as proto JSON. */
export const count = (n: number) => ({ count: String(n) });
/** Query's answer value of a USD amount, as proto JSON (a zero has no minor units). */
export const usd = (minor: number, decimal: string) => ({
  money:
    minor === 0
      ? { currency: "USD", decimal }
      : { currency: "USD", minorUnits: String(minor), decimal },
});

/** A Query over REST of the journey's day: traffic and USD net revenue by channel. */
export const JOURNEY_QUERY = {
  metrics: ["visitors", "visits", "pageviews", "bounce_rate", "net_revenue"],
  dimensions: ["channel"],
  period: { from_day: "2026-03-11", to_day: "2026-03-11" },
  currency: "USD",
  order_by: [{ field: "net_revenue", desc: true }],
};

/** JOURNEY_QUERY's answer (proto JSON), as every door and every worker gives it. */
export const JOURNEY_QUERY_ANSWER = {
  metrics: JOURNEY_QUERY.metrics,
  dimensions: ["channel"],
  rows: [
    {
      dimensions: ["Email"],
      metrics: [count(1), count(1), count(2), { number: 0 }, usd(2499, "24.99")],
    },
    {
      dimensions: ["Direct"],
      metrics: [count(1), count(1), count(1), { number: 100 }, usd(0, "0.00")],
    },
    {
      dimensions: ["Organic Search"],
      metrics: [count(1), count(1), count(1), { number: 100 }, usd(0, "0.00")],
    },
  ],
  totals: [count(2), count(3), count(4), { number: 66.67 }, usd(2499, "24.99")],
  period: { from: "2026-03-11T00:00:00.000Z", to: "2026-03-12T00:00:00.000Z", timeZone: "UTC" },
  model: "first_touch",
};

/** A Funnel over REST of the journey's day: home, pricing, signup. */
export const JOURNEY_FUNNEL = {
  steps: [
    { kind: "page", value: "https://example.com/", label: "home" },
    { kind: "page", value: "https://example.com/pricing" },
    { kind: "event", value: "signup" },
  ],
  period: { from_day: "2026-03-11", to_day: "2026-03-11" },
};

/** JOURNEY_FUNNEL's answer (proto JSON): A and B reach pricing, A signs up. */
export const JOURNEY_FUNNEL_ANSWER = {
  steps: [
    { label: "home", visitors: "2", conversionFromPrevious: 100, conversionOverall: 100 },
    {
      label: "https://example.com/pricing",
      visitors: "2",
      conversionFromPrevious: 100,
      conversionOverall: 100,
      medianSecondsFromPrevious: 1500,
    },
    {
      label: "signup",
      visitors: "1",
      conversionFromPrevious: 50,
      conversionOverall: 50,
      medianSecondsFromPrevious: 300,
    },
  ],
  period: JOURNEY_QUERY_ANSWER.period,
  model: "first_touch",
};
