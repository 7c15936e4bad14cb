/** The site-overview part of the store port: what a dashboard reads for a site and a period. */
import type { PaymentKind } from "../vocabulary.js";
import type { PaymentRecord } from "./records.js";

/** One UTC day of a site's traffic. */
export interface DailyTraffic {
  /** YYYY-MM-DD (UTC) of the events' `ts`. */
  day: string;
  /** Distinct visitor ids with any event that day. */
  visitors: number;
  /** Events named `pageview` that day. */
  pageviews: number;
}

/** First touches recorded in a period, counted per first-touch dimension. */
export interface NewVisitorCount {
  channel: string;
  source?: string;
  campaign?: string;
  landingPage: string;
  visitors: number;
}

/** Net revenue (succeeded charges − refunds − chargebacks) in one currency, in minor units. */
export interface NetRevenue {
  currency: string;
  netMinor: bigint;
}

/** The net revenue of one UTC day (YYYY-MM-DD of `paid_at`) in one currency. */
export interface DailyNet extends NetRevenue {
  day: string;
}

/** The net revenue credited to one value of a first-touch dimension, in one currency. */
export interface DimensionNet extends NetRevenue {
  value: string;
}

/**
 * A period's net revenue by day and by each first-touch dimension: one
 * entry per key (day or value, and currency); payments whose first touch has
 * no value for a dimension (no campaign, unattributed) are in no entry of it.
 */
export interface RevenueBreakdown {
  days: DailyNet[];
  sources: DimensionNet[];
  campaigns: DimensionNet[];
  landingPages: DimensionNet[];
}

/** A succeeded payment as a list shows it. */
export interface PaymentSummary {
  paymentId: string;
  customerId: string;
  currency: string;
  amountMinor: number;
  kind: PaymentKind;
  paidAt: number;
  /** The first-touch channel, or `unattributed`. */
  channel: string;
  source?: string;
  campaign?: string;
  landingPage?: string;
}

/**
 * The site-overview part of the store port: the lists SiteOverview and
 * CustomerJourney show. Periods are [from, to) in Unix milliseconds. The
 * overview's counts and sums are the query layer's plans on the analytics
 * engine (src/domain/analytics/fixed-reports.ts), not store reads.
 */
export interface StoreOverviewPart {
  /** The `limit` most recent succeeded payments of the period, newest first (ties: payment id, descending). */
  recentPayments(
    siteId: string,
    from: number,
    to: number,
    limit: number,
  ): Promise<PaymentSummary[]>;
  /** A customer's `limit` most recent payments of any status, newest first (ties: payment id, descending). */
  customerPayments(siteId: string, customerId: string, limit: number): Promise<PaymentRecord[]>;
}
