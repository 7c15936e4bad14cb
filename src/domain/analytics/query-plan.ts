/**
 * A validated analytics question: what `ReportsService.Query` and `Funnel`
 * requests become once their names, period and limits have been checked.
 * The validation (request → plan, with the exact refusals) and the engine
 * (plan → answer) meet here and nowhere else, so either can change without
 * the other. Times are Unix milliseconds; money is integer minor units.
 */
import type { EventPage, EventPageQuery } from "../store/events-port.js";

/** Every metric a query may ask for, in the order docs/reports.md defines them. */
export const METRIC_NAMES = [
  "visitors",
  "visits",
  "pageviews",
  "events",
  "views_per_visit",
  "bounce_rate",
  "visit_duration",
  "conversions",
  "conversion_rate",
  "new_visitors",
  "payments",
  "transactions",
  "paying_customers",
  "gross_revenue",
  "refunds",
  "chargebacks",
  "net_revenue",
  "revenue_per_visitor",
  "average_order_value",
  "median_days_to_first_payment",
  "median_visits_to_first_payment",
] as const;

export type MetricName = (typeof METRIC_NAMES)[number];

/** The dimensions with a fixed name (`prop:<key>` and `time:<grain>` are the others). */
export const PLAIN_DIMENSION_NAMES = [
  "channel",
  "source",
  "medium",
  "campaign",
  "term",
  "content",
  "referrer",
  "landing_page",
  "page",
  "exit_page",
  "country",
  "device",
  "browser",
  "os",
  "event",
  "currency",
  "customer",
  "days_to_first_payment",
] as const;

export type PlainDimensionName = (typeof PLAIN_DIMENSION_NAMES)[number];

/**
 * Dimensions that describe payments only (events read `(none)` there): they
 * cannot be asked with a metric that counts traffic (docs/reports.md).
 */
export const PAYMENT_DIMENSIONS: ReadonlySet<PlainDimensionName> = new Set<PlainDimensionName>([
  "currency",
  "customer",
  "days_to_first_payment",
]);

/** The buckets of `days_to_first_payment`, in order: whole days elapsed, ranges inclusive. */
export const DAYS_TO_FIRST_PAYMENT_BUCKETS = [
  "0",
  "1",
  "2-3",
  "4-7",
  "8-14",
  "15-30",
  "31-60",
  "61-90",
  "91+",
] as const;

export const TIME_GRAINS = ["hour", "day", "week", "month"] as const;
export type TimeGrain = (typeof TIME_GRAINS)[number];

export type DimensionName = PlainDimensionName | `prop:${string}` | `time:${TimeGrain}`;

export const FILTER_OPS = ["is", "is_not", "contains"] as const;
export type FilterOp = (typeof FILTER_OPS)[number];

export const ATTRIBUTION_MODELS = [
  "first_touch",
  "last_touch",
  "last_non_direct",
  "linear",
  "position_based",
] as const;
export type AttributionModel = (typeof ATTRIBUTION_MODELS)[number];

/** The value that stands for an absent dimension value, in rows and in filters. */
export const NONE_VALUE = "(none)";

export interface FilterPlan {
  /** Never a time dimension. */
  dimension: Exclude<DimensionName, `time:${TimeGrain}`>;
  op: FilterOp;
  /** 1–50 values; NONE_VALUE for an absent value. */
  values: string[];
}

/** A half-open interval of instants, [from, to). */
export interface Interval {
  from: number;
  to: number;
}

export interface QueryPlan {
  siteId: string;
  /** The site's IANA time zone: days, weeks, months and hours are read in it. */
  timeZone: string;
  /** 1–10, distinct, in the request's order. */
  metrics: MetricName[];
  /** 0–3, distinct, in the request's order. */
  dimensions: DimensionName[];
  filters: FilterPlan[];
  period: Interval;
  /** Set with a comparison (`previous_period` or `year_over_year`). */
  comparison?: Interval;
  model: AttributionModel;
  /** ISO 4217; set whenever a revenue metric is asked for. */
  currency?: string;
  /** Never empty: the validation fills the default order. */
  orderBy: { field: MetricName | DimensionName; desc: boolean }[];
  /** 1–1000. */
  limit: number;
  /** Rows to skip (from the page token). */
  offset: number;
}

/** One funnel step: a page (exact), a page prefix or an event name. */
export interface FunnelStepPlan {
  kind: "page" | "page_prefix" | "event";
  value: string;
  filters: FilterPlan[];
  label: string;
}

export interface FunnelPlan {
  siteId: string;
  timeZone: string;
  /** 2–8 steps, in order. */
  steps: FunnelStepPlan[];
  filters: FilterPlan[];
  period: Interval;
  /** Milliseconds from a visitor's first step to its last; the period's length when not given. */
  windowMs: number;
  model: AttributionModel;
  currency?: string;
}

/** A metric's value: a count, a number, money in the plan's currency, or none. */
export type MetricValue =
  | { kind: "count"; value: number }
  | { kind: "number"; value: number }
  | { kind: "money"; currency: string; minor: bigint }
  | { kind: "none" };

export interface QueryResultRow {
  /** One per dimension of the plan; NONE_VALUE when absent. */
  dimensions: string[];
  /** One per metric of the plan. */
  metrics: MetricValue[];
  /** With a comparison: the same row in the comparison period. */
  comparison?: MetricValue[];
}

export interface QueryResult {
  rows: QueryResultRow[];
  totals: MetricValue[];
  comparisonTotals?: MetricValue[];
  /** Whether rows follow this page (for the next page token). */
  more: boolean;
}

export interface FunnelStepResult {
  label: string;
  visitors: number;
  /** Percent of the previous step's visitors (100 for the first). */
  conversionFromPrevious: number;
  /** Percent of the first step's visitors. */
  conversionOverall: number;
  medianSecondsFromPrevious?: number;
}

export interface FunnelResult {
  steps: FunnelStepResult[];
  completersNetMinor?: bigint;
}

/**
 * The analytics engine as the domain sees it (implemented over DuckDB in
 * src/store/duckdb/). Both methods may reject when the engine is
 * unavailable, or with a timeout when a query runs past its limit.
 */
export interface AnalyticsEngine {
  query(plan: QueryPlan, signal?: AbortSignal): Promise<QueryResult>;
  /**
   * A fixed report's plan (SiteOverview, RevenueByChannel), answered as
   * `query` within the time limit but outside the per-site query slots: the
   * service admits it in lanes of its own (report-admission.ts).
   */
  report(plan: QueryPlan, signal?: AbortSignal): Promise<QueryResult>;
  funnel(plan: FunnelPlan, signal?: AbortSignal): Promise<FunnelResult>;
  /*
   * The stored events' reads. On SQLite deployments an event leaves SQLite
   * once the feed moved it (migration 19), so these answer from the engine
   * (src/domain/analytics/event-reads.ts chooses). Plain data in and out:
   * they can be forwarded between processes; an export pages by `before`.
   */
  /** A page of a site's events, newest first by position (as StoreEventsPart.pageEvents). */
  pageEvents(siteId: string, query: EventPageQuery): Promise<EventPage>;
  /** How many of a site's stored events match `filter` (erasure's and retention's counts). */
  countEvents(siteId: string, filter: EventCountFilter): Promise<number>;
}

/** Which events `countEvents` counts: every given condition holds. */
export interface EventCountFilter {
  /** Events with `ts` before this (Unix ms). */
  before?: number;
  /** Events of these stored visitor ids. */
  visitorIds?: string[];
  /** `$identify` events of this user id. */
  identifyUserId?: string;
}
