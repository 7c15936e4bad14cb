/**
 * The semantic layer: every metric and dimension of `ReportsService.Query`
 * defined once, as data (as a Rill metrics view), from which the engine
 * (analytics-engine.ts) generates its SQL. Traffic is read from the events
 * of the period, each joined with its visit (a visitor's run of events with
 * no gap over 30 minutes); revenue from the succeeded payments paid in the
 * period in the asked currency, each joined with the touch its model credits.
 * docs/reports.md defines each in a sentence.
 */
import type {
  MetricName,
  PlainDimensionName,
  TimeGrain,
} from "../../domain/analytics/query-plan.js";

/**
 * A dimension: its SQL over a traffic row (`x`: an event with its visit's
 * columns `v_*`) and over a revenue row (`r`: a payment with its credited
 * touch's columns `t_*`); undefined where revenue has no such value.
 */
export interface DimensionDef {
  traffic: string;
  revenue?: string;
  /** Its revenue value needs the customers' touches read (as the medians do). */
  touches?: boolean;
}

/** Whole days from a customer's first touch to its first charge, bucketed (on that charge only). */
const DAYS = "((r.first_paid_at - r.first_seen_at) / 86400000.0)";
const DAYS_BUCKET = `CASE WHEN r.first_payment AND r.first_seen_at IS NOT NULL THEN CASE
  WHEN ${DAYS} < 1 THEN '0' WHEN ${DAYS} < 2 THEN '1' WHEN ${DAYS} < 4 THEN '2-3'
  WHEN ${DAYS} < 8 THEN '4-7' WHEN ${DAYS} < 15 THEN '8-14' WHEN ${DAYS} < 31 THEN '15-30'
  WHEN ${DAYS} < 61 THEN '31-60' WHEN ${DAYS} < 91 THEN '61-90' ELSE '91+' END END`;

/** The plain dimensions. A visit's acquisition is its first event's; Direct when untagged. */
export const DIMENSIONS: Record<PlainDimensionName, DimensionDef> = {
  channel: { traffic: "x.v_channel", revenue: "r.channel" },
  source: { traffic: "x.v_source", revenue: "r.source" },
  medium: { traffic: "x.v_medium", revenue: "r.medium" },
  campaign: { traffic: "x.v_campaign", revenue: "r.campaign" },
  term: { traffic: "x.v_term", revenue: "r.t_term" },
  content: { traffic: "x.v_content", revenue: "r.t_content" },
  referrer: { traffic: "x.v_referrer", revenue: "r.t_referrer" },
  landing_page: { traffic: "x.v_landing_page", revenue: "r.landing_page" },
  // A page describes an event, not a payment: revenue reads (none) there (docs/reports.md).
  page: { traffic: "x.page" },
  exit_page: { traffic: "x.v_exit_page", revenue: "r.t_exit_page" },
  country: { traffic: "x.country", revenue: "r.t_country" },
  device: { traffic: "x.device", revenue: "r.t_device" },
  browser: { traffic: "x.browser", revenue: "r.t_browser" },
  os: { traffic: "x.os", revenue: "r.t_os" },
  event: { traffic: "x.name" },
  // Payment dimensions: events have none (the planner refuses them with traffic metrics).
  currency: { traffic: "NULL", revenue: "r.currency" },
  customer: { traffic: "NULL", revenue: "r.customer_id" },
  days_to_first_payment: { traffic: "NULL", revenue: DAYS_BUCKET, touches: true },
};

/**
 * The wall-clock time of an instant column in ms, as SQL, in the zone a
 * query reads (engine's `zoneClock`): the instant plus the zone's offset.
 */
export type WallClock = (ms: string) => string;

/** UTC's wall clock: the instant itself. */
export const UTC_CLOCK: WallClock = (ms) => ms;

/** Hours and days have one length on the wall clock: their buckets are integer arithmetic. */
const FIXED_GRAIN_MS: Partial<Record<TimeGrain, number>> = { hour: 3_600_000, day: 86_400_000 };

/**
 * A time grain's bucket on the wall clock `clock` for an instant column in
 * ms, as grouped on: 8 bytes, labelled only once per group ({@link timeLabel});
 * no zone conversion per row. An hour or a day is its number since the epoch
 * on the wall clock (an integer division: a day's chart at 10M events cost
 * 20% more through date_trunc, and multiplying back to its start in ms
 * another 20–25 ms of the statement's 170); a week or a month, its start as
 * a calendar TIMESTAMP.
 */
export function timeBucketStart(grain: TimeGrain, ms: string, clock: WallClock): string {
  const fixed = FIXED_GRAIN_MS[grain];
  return fixed
    ? `((${clock(ms)}) // ${fixed})`
    : `date_trunc('${grain}', make_timestamp((${clock(ms)}) * 1000))`;
}

/** The label of a grain's bucket ({@link timeBucketStart}, SQL). */
export function timeLabel(grain: TimeGrain, start: string): string {
  const format = { hour: "%Y-%m-%d %H:00", day: "%Y-%m-%d", week: "%Y-%m-%d", month: "%Y-%m" }[
    grain
  ];
  const fixed = FIXED_GRAIN_MS[grain];
  const ts = fixed ? `make_timestamp((${start}) * ${fixed * 1000})` : start;
  return `strftime(${ts}, '${format}')`;
}

/** A time grain's label of an instant column in ms, on the wall clock `clock` (SQL). */
export function timeBucket(grain: TimeGrain, ms: string, clock: WallClock): string {
  return timeLabel(grain, timeBucketStart(grain, ms, clock));
}

/**
 * How a statement counts the distinct visitors of its rows `row` (`v`
 * per-visit rows or `x` event rows, both carrying `vk` the visitor's key and
 * `dv` its dense number) that `where` selects: SQL of a BIGINT aggregate.
 */
export interface VisitorCount {
  (row: "v" | "x", where?: string): string;
  /** By bitmaps only: the aggregate of a group's bitmap of numbers (a BIT value). */
  bitmap?: (row: "v" | "x") => string;
  /** By bitmaps only: the bits of a group's bitmap. */
  bits?: number;
  /**
   * By bitmaps of one range of the numbers only (a part, {@link bitmapsInParts}):
   * the test a row passes to be counted in it (SQL).
   */
  within?: (row: "v" | "x") => string;
  /**
   * By bitmaps in parts: each part counts the visitors of its range of
   * numbers in a statement of its own, and the parts' counts add up (a visitor
   * has one number). The counting function itself is no SQL: a statement
   * counts by one part.
   */
  parts?: readonly VisitorCount[];
}

/** By the visitors' keys: a hash table of them per group. */
export const HASHED_VISITORS: VisitorCount = (row, where) =>
  `count(DISTINCT ${row}.vk)${where ? ` FILTER (WHERE ${where})` : ""}`;

/**
 * By the visitors' dense numbers (visitor-numbers.ts): a bitmap of the
 * numbers `from` to `top` per group, one bit each, counted. A number past
 * `top` fails the statement (DuckDB's "Out of Range Error"): the engine then
 * counts by key ({@link isBitmapRangeError}).
 */
export function bitmapVisitors(top: number, from = 0): VisitorCount {
  const n = Math.max(0, Math.floor(top));
  const lo = Math.min(n, Math.max(0, Math.floor(from)));
  const bitmap = (row: "v" | "x") => `bitstring_agg(${row}.dv, ${lo}, ${n})`;
  const count: VisitorCount = (row, where) =>
    `coalesce(bit_count(${bitmap(row)}${where ? ` FILTER (WHERE ${where})` : ""}), 0)`;
  count.bitmap = bitmap;
  count.bits = n - lo + 1;
  return count;
}

/**
 * By bitmaps of the numbers 0 to `top` in `parts` ranges of equal width, each
 * counted by a statement of its own (visitor-count.ts): a statement's bitmaps
 * then take a part's width, so a breakdown of many groups over many visitors
 * stays within the bitmaps' memory. Each part but the last counts the numbers
 * of its range; the last, every number from its start, so that a number past
 * `top` fails it as it fails one bitmap.
 */
export function bitmapsInParts(top: number, parts: number): VisitorCount {
  const n = Math.max(0, Math.floor(top));
  const width = Math.ceil((n + 1) / Math.max(1, Math.floor(parts)));
  const each: VisitorCount[] = [];
  for (let from = 0; from <= n; from += width) {
    const to = Math.min(n, from + width - 1);
    const part = bitmapVisitors(to, from);
    part.within = (row) =>
      to === n ? `${row}.dv >= ${from}` : `${row}.dv >= ${from} AND ${row}.dv <= ${to}`;
    each.push(part);
  }
  const count: VisitorCount = () => {
    throw new Error("visitors counted in parts: a statement counts by one of them");
  };
  count.parts = each;
  return count;
}

/** Whether a statement failed on a visitor number past its bitmaps' top. */
export function isBitmapRangeError(err: unknown): boolean {
  return /Out of Range Error: Value \d+ is outside of provided min and max range/.test(String(err));
}

/** A metric's SQL: text, or (a count of distinct visitors) text given how visitors are counted. */
export type MetricSql = string | ((visitors: VisitorCount) => string);

/** The SQL of a metric's aggregate, with visitors counted by `visitors`. */
export function metricSql(sql: MetricSql | undefined, visitors: VisitorCount): string {
  return typeof sql === "function" ? sql(visitors) : (sql ?? "NULL");
}

/** Where a metric is computed and how its value is read back. */
export interface MetricDef {
  /**
   * traffic: from per-visit rows `v`; revenue: from revenue rows `r`; touches:
   * from first-touch rows `x` (one per visitor whose first touch is in the
   * period, read with the traffic dimensions' SQL); both: from traffic and revenue.
   */
  source: "traffic" | "revenue" | "touches" | "both";
  /**
   * The aggregate (traffic or revenue). A function for the metrics that count
   * distinct visitors, and only those (the engine chooses how to count them).
   */
  sql?: MetricSql;
  /**
   * A traffic metric's aggregate straight over event rows `x` (one row per
   * event, no per-visit rows), for a metric that reads no visit: the same
   * value as {@link sql} over the per-visit rows, with one grouping fewer.
   */
  eventSql?: MetricSql;
  kind: "count" | "number" | "money";
  /** For `both`: the value from the traffic and revenue aggregates by name. */
  combine?: (t: Record<string, number>, r: Record<string, number>) => number | undefined;
  /** The aggregates a `both` metric needs from each side. */
  needs?: { traffic: MetricName[]; revenue: MetricName[] };
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** An event row `x` that is a pageview; one the `events` metric counts (not `$…`); a custom event (a goal). */
export const IS_PAGEVIEW = "x.name = 'pageview'";
export const IS_COUNTED = "NOT starts_with(x.name, '$')";
export const IS_GOAL = `(x.name <> 'pageview' AND ${IS_COUNTED})`;

/** a / b of whole minor units, rounded half away from zero exactly (docs/reports.md). */
function divHalfAway(a: number, b: number): number {
  const x = BigInt(Math.abs(a));
  const y = BigInt(Math.abs(b));
  const q = Number((2n * x + y) / (2n * y));
  return a < 0 !== b < 0 ? -q : q;
}

/**
 * The metrics. Traffic aggregates read per-visit rows `v` (one per visit and
 * dimension values): `vk` the visitor, `pv` the visit's pageviews in the
 * group, `ev` its events in the group, `conv` whether it had a custom event
 * in the group, `v_events` and `v_seconds` the whole visit's events and
 * duration (`v_events` its events: one is a bounce). Revenue aggregates read payments `r` (amounts in minor units).
 */
export const METRICS: Record<MetricName, MetricDef> = {
  visitors: {
    source: "traffic",
    sql: (visitors) => visitors("v"),
    eventSql: (visitors) => visitors("x"),
    kind: "count",
  },
  visits: { source: "traffic", sql: "count(*)", kind: "count" },
  pageviews: {
    source: "traffic",
    sql: "coalesce(sum(v.pv), 0)",
    eventSql: `count(*) FILTER (WHERE ${IS_PAGEVIEW})`,
    kind: "count",
  },
  events: {
    source: "traffic",
    sql: "coalesce(sum(v.ev), 0)",
    eventSql: `count(*) FILTER (WHERE ${IS_COUNTED})`,
    kind: "count",
  },
  views_per_visit: {
    source: "traffic",
    sql: "round(sum(v.pv) / count(*), 2)",
    kind: "number",
  },
  bounce_rate: {
    source: "traffic",
    sql: "round(100.0 * count(*) FILTER (WHERE v.v_events = 1) / count(*), 2)",
    kind: "number",
  },
  visit_duration: { source: "traffic", sql: "round(avg(v.v_seconds))", kind: "number" },
  conversions: {
    source: "traffic",
    sql: (visitors) => visitors("v", "v.conv"),
    eventSql: (visitors) => visitors("x", IS_GOAL),
    kind: "count",
  },
  conversion_rate: {
    source: "traffic",
    sql: (visitors) => `round(100.0 * ${visitors("v", "v.conv")} / ${visitors("v")}, 2)`,
    eventSql: (visitors) => `round(100.0 * ${visitors("x", IS_GOAL)} / ${visitors("x")}, 2)`,
    kind: "number",
  },
  // A visitor's first touch is its best pageview by the domain's ranking
  // (attribution/ranking.ts isBetterTouch: not internal first, then the earliest;
  // equal ones: the first stored), its values the pageview's own (touchRows).
  new_visitors: { source: "touches", sql: "count(*)", kind: "count" },
  payments: {
    source: "revenue",
    // Distinct: a payment split across touches is several rows.
    sql: "count(DISTINCT r.payment_id) FILTER (WHERE r.kind = 'charge')",
    kind: "count",
  },
  // Succeeded payments of every kind (charges, refunds, chargebacks): RevenueByChannel's count.
  transactions: { source: "revenue", sql: "count(DISTINCT r.payment_id)", kind: "count" },
  paying_customers: {
    source: "revenue",
    sql: "count(DISTINCT r.customer_id) FILTER (WHERE r.kind = 'charge')",
    kind: "count",
  },
  gross_revenue: {
    source: "revenue",
    sql: "coalesce(sum(r.share) FILTER (WHERE r.kind = 'charge'), 0)",
    kind: "money",
  },
  refunds: {
    source: "revenue",
    sql: "coalesce(sum(r.share) FILTER (WHERE r.kind = 'refund'), 0)",
    kind: "money",
  },
  chargebacks: {
    source: "revenue",
    sql: "coalesce(sum(r.share) FILTER (WHERE r.kind = 'chargeback'), 0)",
    kind: "money",
  },
  net_revenue: {
    source: "revenue",
    sql: "coalesce(sum(CASE WHEN r.kind = 'charge' THEN r.share ELSE -r.share END), 0)",
    kind: "money",
  },
  revenue_per_visitor: {
    source: "both",
    kind: "money",
    needs: { traffic: ["visitors"], revenue: ["net_revenue"] },
    combine: (t, r) =>
      (t.visitors ?? 0) === 0 ? undefined : divHalfAway(r.net_revenue ?? 0, t.visitors ?? 1),
  },
  average_order_value: {
    source: "both",
    kind: "money",
    needs: { traffic: [], revenue: ["gross_revenue", "payments"] },
    combine: (_t, r) =>
      (r.payments ?? 0) === 0 ? undefined : divHalfAway(r.gross_revenue ?? 0, r.payments ?? 1),
  },
  median_days_to_first_payment: {
    source: "revenue",
    // Once per payment: a split payment is several rows.
    sql: "round(list_aggregate(list_transform(list_distinct(list({'p': r.payment_id, 'd': (r.first_paid_at - r.first_seen_at) / 86400000.0}) FILTER (WHERE r.first_payment AND r.first_seen_at IS NOT NULL)), x -> x.d), 'median'), 2)",
    kind: "number",
  },
  median_visits_to_first_payment: {
    source: "revenue",
    sql: "round(list_aggregate(list_transform(list_distinct(list({'p': r.payment_id, 'd': r.visits_before}) FILTER (WHERE r.first_payment AND r.visits_before IS NOT NULL)), x -> x.d), 'median'), 2)",
    kind: "number",
  },
};

/** Exported for the engine's rounding of merged metrics. */
export { round2 };
