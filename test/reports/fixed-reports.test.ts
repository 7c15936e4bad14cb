/**
 * The fixed reports' cuts as query-layer plans (src/domain/analytics/fixed-reports.ts)
 * on a real engine: RevenueByChannel's rows and SiteOverview's revenue
 * breakdown, exact past 2^53, only succeeded payments of [from, to), this
 * site only. These were the stores' own reads (their contract tests), now
 * the one rule of the semantic layer.
 */
import { describe, expect, it } from "vitest";
import {
  newVisitorsOf,
  revenueBreakdownOf,
  revenueByChannelOf,
} from "../../src/domain/analytics/fixed-reports.js";
import type { RevenueRow } from "../../src/domain/store/store.js";
import { engineOverData } from "../helpers/analytics-engine-over.js";
import type { RefData, RefPayment } from "../helpers/analytics-reference.js";
import { useTempDirs } from "../helpers/temp-dirs.js";

const tempDir = useTempDirs("fixed-reports-");
const DAY = 86_400_000;
const T0 = Date.UTC(2025, 5, 1);
const SITE = "site_1";
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

let n = 0;
/** A succeeded USD charge of `SITE` at T0, with `over`. */
const pay = (over: Partial<RefPayment>): RefPayment => ({
  siteId: SITE,
  paymentId: `pay_${++n}`,
  customerId: "cus_a",
  kind: "charge",
  status: "succeeded",
  amountMinor: 1999,
  currency: "USD",
  paidAt: T0,
  ...over,
});

const data = (payments: RefPayment[], events: RefData["events"] = []): RefData => ({
  sites: [
    { id: SITE, hostnames: ["example.com"] },
    { id: "site_2", hostnames: ["other.example"] },
  ],
  events,
  identities: [],
  stitches: [],
  customers: [],
  payments,
});

/** An expected row: its net is its gross less its refunds and chargebacks. */
const row = (r: Partial<RevenueRow> & Pick<RevenueRow, "channel" | "currency">) => {
  const full: RevenueRow = {
    grossMinor: 0n,
    refundsMinor: 0n,
    chargebacksMinor: 0n,
    payments: 0,
    payingCustomers: 0,
    ...r,
  };
  return { ...full, netMinor: full.grossMinor - full.refundsMinor - full.chargebacksMinor };
};

const paidSearch = {
  channel: "Paid Search",
  landingPage: "https://example.com/",
  visitorId: "v",
  touchedAt: T0 - DAY,
};

describe("the fixed reports on the query layer", () => {
  it("RevenueByChannel: succeeded payments in [from, to) by first-touch channel and currency", async () => {
    const from = T0 + DAY;
    const to = T0 + 2 * DAY;
    const a = (over: Partial<RefPayment>) =>
      pay({ customerId: "cus_a", paidAt: from, attribution: paidSearch, ...over });
    const { engine, close } = await engineOverData(
      tempDir(),
      data([
        // cus_a, attributed to Paid Search: two charges, a refund, a charge in EUR.
        a({ amountMinor: 1000 }),
        a({ amountMinor: 500, paidAt: to - 1 }),
        a({ amountMinor: 300, kind: "refund", paidAt: from + 5 }),
        a({ amountMinor: 2000, currency: "EUR" }),
        // Not succeeded: not counted.
        a({ amountMinor: 7, status: "pending" }),
        a({ amountMinor: 11, status: "failed" }),
        a({ amountMinor: 13, kind: "refund", status: "pending" }),
        // Outside the window: not counted.
        a({ amountMinor: 17, paidAt: from - 1 }),
        a({ amountMinor: 19, paidAt: to }),
        // cus_b, unattributed: a chargeback and a refund only (not a paying customer).
        pay({ customerId: "cus_b", amountMinor: 200, kind: "chargeback", paidAt: from }),
        pay({ customerId: "cus_b", amountMinor: 40, kind: "refund", paidAt: from }),
        // cus_c, unattributed: two charges.
        pay({ customerId: "cus_c", amountMinor: 900, paidAt: from }),
        pay({ customerId: "cus_c", amountMinor: 100, paidAt: from }),
        // Another site's payment in the window: not counted.
        pay({ siteId: "site_2", paidAt: from }),
      ]),
    );
    try {
      expect(await revenueByChannelOf(engine, SITE, from, to)).toEqual([
        row({
          channel: "Paid Search",
          currency: "EUR",
          grossMinor: 2000n,
          payments: 1,
          payingCustomers: 1,
        }),
        row({
          channel: "Paid Search",
          currency: "USD",
          grossMinor: 1500n,
          refundsMinor: 300n,
          payments: 3,
          payingCustomers: 1,
        }),
        row({
          channel: "unattributed",
          currency: "USD",
          grossMinor: 1000n,
          refundsMinor: 40n,
          chargebacksMinor: 200n,
          payments: 4,
          payingCustomers: 1,
        }),
      ]);
      // The window is half-open: from is in, to is out.
      expect(await revenueByChannelOf(engine, SITE, to, to + DAY)).toEqual([
        row({
          channel: "Paid Search",
          currency: "USD",
          grossMinor: 19n,
          payments: 1,
          payingCustomers: 1,
        }),
      ]);
      expect(await revenueByChannelOf(engine, SITE, from - 1, from)).toEqual([
        row({
          channel: "Paid Search",
          currency: "USD",
          grossMinor: 17n,
          payments: 1,
          payingCustomers: 1,
        }),
      ]);
      expect(await revenueByChannelOf(engine, SITE, from, from)).toEqual([]);
      expect(await revenueByChannelOf(engine, "site_nope", from, to)).toEqual([]);
    } finally {
      close();
    }
  });

  it("RevenueByChannel sums exactly past 2^53", async () => {
    const E15 = 1_000_000_000_000_000;
    const { engine, close } = await engineOverData(
      tempDir(),
      data([
        // Ten charges of 1e15 + i: 1e16 + 45 (odd, so no double can hold it).
        ...Array.from({ length: 10 }, (_, i) => pay({ amountMinor: E15 + i })),
        ...[MAX_SAFE, MAX_SAFE - 2, 3].map((amountMinor) => pay({ amountMinor, kind: "refund" })),
        ...[MAX_SAFE, MAX_SAFE].map((amountMinor) => pay({ amountMinor, kind: "chargeback" })),
      ]),
    );
    try {
      const rows = await revenueByChannelOf(engine, SITE, T0, T0 + 1);
      expect(rows).toEqual([
        {
          channel: "unattributed",
          currency: "USD",
          grossMinor: 10_000_000_000_000_045n,
          refundsMinor: 18_014_398_509_481_983n,
          chargebacksMinor: 18_014_398_509_481_982n,
          netMinor: -26_028_797_018_963_920n,
          payments: 15,
          payingCustomers: 1,
        },
      ]);
      expect(rows[0]?.grossMinor).toBe(BigInt(E15) * 10n + 45n);
      expect(rows[0]?.refundsMinor).toBe(2n * BigInt(MAX_SAFE) + 1n);
    } finally {
      close();
    }
  });

  it("SiteOverview's revenue: net by UTC day and by first-touch dimension, per currency, exact", async () => {
    const big = 9_000_000_000_000_000;
    const attribution = {
      channel: "Paid Search",
      source: "google",
      campaign: "spring",
      landingPage: "https://example.com/pricing",
      visitorId: "v1",
      touchedAt: T0 - 1000,
    };
    const a = (over: Partial<RefPayment>) => pay({ attribution, ...over });
    const { engine, close } = await engineOverData(
      tempDir(),
      data([
        a({ amountMinor: big }),
        a({ amountMinor: big, paidAt: T0 + 10 }),
        a({ amountMinor: 300, kind: "refund", paidAt: T0 + 20 }),
        a({ amountMinor: 2000, currency: "EUR", paidAt: T0 + DAY }),
        a({ amountMinor: 7, status: "pending", paidAt: T0 + 30 }),
        a({ amountMinor: 9, paidAt: T0 + 2 * DAY }),
        pay({ customerId: "cus_b", amountMinor: 200, kind: "chargeback", paidAt: T0 + 40 }),
      ]),
    );
    try {
      const usd = (netMinor: bigint) => ({ currency: "USD", netMinor });
      const eur = (netMinor: bigint) => ({ currency: "EUR", netMinor });
      expect(await revenueBreakdownOf(engine, SITE, T0, T0 + 2 * DAY)).toEqual({
        // 2 × 9e15 − 300 − 200: past 2^53, exact.
        days: [
          { day: "2025-06-01", ...usd(17_999_999_999_999_500n) },
          { day: "2025-06-02", ...eur(2000n) },
        ],
        // The unattributed chargeback has no source, campaign or landing page.
        sources: [
          { value: "google", ...eur(2000n) },
          { value: "google", ...usd(17_999_999_999_999_700n) },
        ],
        campaigns: [
          { value: "spring", ...eur(2000n) },
          { value: "spring", ...usd(17_999_999_999_999_700n) },
        ],
        landingPages: [
          { value: "https://example.com/pricing", ...eur(2000n) },
          { value: "https://example.com/pricing", ...usd(17_999_999_999_999_700n) },
        ],
      });
      expect(await revenueBreakdownOf(engine, SITE, T0 + 2 * DAY + 1, T0 + 3 * DAY)).toEqual({
        days: [],
        sources: [],
        campaigns: [],
        landingPages: [],
      });
    } finally {
      close();
    }
  });

  it("SiteOverview's new visitors: each visitor once, on its first touch's day and values", async () => {
    const pv = (visitorId: string, ts: number, url: string, referrerHost?: string) => ({
      siteId: SITE,
      visitorId,
      ts,
      name: "pageview",
      url,
      ...(referrerHost ? { referrerHost } : {}),
    });
    const { engine, close } = await engineOverData(
      tempDir(),
      data(
        [],
        [
          // v1: an internal navigation first, then a tagged pageview the next day: new that day.
          pv("v1", T0, "https://example.com/a", "example.com"),
          {
            ...pv("v1", T0 + DAY, "https://example.com/b?utm_source=news&utm_medium=email"),
            utmSource: "news",
            utmMedium: "email",
            utmCampaign: "spring",
          },
          // v2: from Google, then again later: new on its first day only.
          pv("v2", T0 + 10, "https://example.com/", "www.google.com"),
          pv("v2", T0 + DAY + 10, "https://example.com/x", "www.google.com"),
          // v3: internal only: Direct, on its first pageview.
          pv("v3", T0 + 20, "https://example.com/c?x=1", "example.com"),
        ],
      ),
    );
    try {
      const day1 = await newVisitorsOf(engine, SITE, T0, T0 + DAY);
      expect(day1).toEqual([
        { channel: "Direct", landingPage: "https://example.com/c", visitors: 1 },
        {
          channel: "Organic Search",
          source: "Google",
          landingPage: "https://example.com/",
          visitors: 1,
        },
      ]);
      expect(await newVisitorsOf(engine, SITE, T0 + DAY, T0 + 2 * DAY)).toEqual([
        {
          channel: "Email",
          source: "news",
          campaign: "spring",
          landingPage: "https://example.com/b",
          visitors: 1,
        },
      ]);
    } finally {
      close();
    }
  });
});
