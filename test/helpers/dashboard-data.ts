/**
 * Demo data for the dashboard's tests and screenshot: five visitors from four
 * channels over three UTC days, four paying customers in three currencies, a
 * refund and an unattributed payment, sent through the public REST API at the
 * test clock's time. One yearly subscription gives MRR.
 */
import { expect } from "vitest";
import { BROWSER_UA } from "./fixtures.js";
import { postJson, type TestClock } from "./test-server.js";

const HOUR = 3_600_000;

/** Where the demo's site and key are. */
export interface DemoTarget {
  url: string;
  siteId: string;
  key: string;
  clock: TestClock;
}

/** The ids the tests look for. */
export const DEMO = {
  googleCustomer: "cus_demo_google",
  googlePayment: "pay_demo_google_1",
  newsletterPayment: "pay_demo_news_1",
} as const;

/** Sends the demo's events and payments; every one must be stored. */
export async function seedDashboardDemo(t: DemoTarget): Promise<void> {
  const now = t.clock.now();
  const at = (hoursAgo: number) => now - hoursAgo * HOUR;
  const iso = (hoursAgo: number) => new Date(at(hoursAgo)).toISOString();
  // The API replaces a `ts` more than an hour old by the time of receipt: the
  // clock is moved to each event's time instead, and back at the end.
  const event = async (ip: string, body: Record<string, unknown>) => {
    const { ts, ...rest } = body as { ts: number };
    t.clock.set(ts);
    const res = await postJson(
      `${t.url}/api/v1/events`,
      { s: t.siteId, ip, ua: BROWSER_UA, ...rest },
      { key: t.key },
    );
    expect(res.status).toBe(204);
  };
  const pay = async (body: Record<string, unknown>) => {
    const res = await postJson(
      `${t.url}/api/v1/payments`,
      { kind: "charge", ...body },
      { key: t.key },
    );
    expect(res.status).toBe(200);
  };
  // Organic Search (Google), lands on the home page, becomes a customer.
  await event("198.51.100.11", {
    e: "pageview",
    u: "https://example.com/",
    r: "https://www.google.com/",
    ts: at(50),
  });
  await event("198.51.100.11", { e: "pageview", u: "https://example.com/pricing", ts: at(49.9) });
  await event("198.51.100.11", {
    e: "$identify",
    u: "https://example.com/app",
    uid: "user-google",
    ts: at(49.8),
  });
  // Email (newsletter, campaign spring), lands on pricing, becomes a customer.
  await event("198.51.100.12", {
    e: "pageview",
    u: "https://example.com/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=spring",
    ts: at(26),
  });
  await event("198.51.100.12", {
    e: "$identify",
    u: "https://example.com/app",
    uid: "user-news",
    ts: at(25.9),
  });
  // Paid Social (facebook): two visitors, no payment.
  for (const ip of ["198.51.100.13", "198.51.100.14"]) {
    await event(ip, {
      e: "pageview",
      u: "https://example.com/blog?utm_source=facebook&utm_medium=paid_social&utm_campaign=launch",
      ts: at(5),
    });
  }
  // Direct, today, pays in JPY.
  await event("198.51.100.15", { e: "pageview", u: "https://example.com/", ts: at(2) });
  await event("198.51.100.15", {
    e: "$identify",
    u: "https://example.com/app",
    uid: "user-direct",
    ts: at(1.9),
  });

  t.clock.set(now);
  const google = { id: DEMO.googleCustomer, user_id: "user-google" };
  await pay({
    payment_id: DEMO.googlePayment,
    customer: google,
    amount: 49,
    currency: "USD",
    paid_at: iso(49),
  });
  await pay({
    payment_id: "pay_demo_google_2",
    customer: google,
    amount: 10,
    currency: "USD",
    kind: "refund",
    paid_at: iso(30),
  });
  await pay({
    payment_id: "pay_demo_google_3",
    customer: google,
    amount: 20,
    currency: "EUR",
    paid_at: iso(29),
  });
  await pay({
    payment_id: DEMO.newsletterPayment,
    customer: { id: "cus_demo_news", user_id: "user-news" },
    amount: 99,
    currency: "USD",
    paid_at: iso(25),
    // A yearly plan: 99.00 USD a year is 8.25 USD of MRR.
    subscription: { id: "sub_demo_news", plan: "pro", interval: "year", amount: 99 },
  });
  await pay({
    payment_id: "pay_demo_direct_1",
    customer: { id: "cus_demo_direct", user_id: "user-direct" },
    amount: 1500,
    currency: "JPY",
    paid_at: iso(1.5),
  });
  await pay({
    payment_id: "pay_demo_unknown_1",
    customer: { id: "cus_demo_unknown" },
    amount: 5,
    currency: "USD",
    paid_at: iso(3),
  });
}
