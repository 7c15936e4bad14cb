/**
 * Request → plan: the validation of `ReportsService.Query` and `Funnel`.
 * Every name, limit and period rule is checked here once, for every door
 * (REST and RPC decode the same proto messages into the plain fields
 * below); a refusal is a 400 `invalid_input` whose message names the field
 * and what is wrong (`<field>: <problem>`), the first problem found, in the
 * request's field order. docs/reports.md lists the refusals.
 */

import { createHash } from "node:crypto";
import { errors } from "../errors.js";
import { isCurrency } from "../payments/money.js";
import { parseRfc3339 } from "../payments/rfc3339.js";
import type { SiteRecord } from "../store/records.js";
import {
  ATTRIBUTION_MODELS,
  type AttributionModel,
  type DimensionName,
  FILTER_OPS,
  type FilterOp,
  type FilterPlan,
  type FunnelPlan,
  type FunnelStepPlan,
  type Interval,
  METRIC_NAMES,
  type MetricName,
  PAYMENT_DIMENSIONS,
  PLAIN_DIMENSION_NAMES,
  type PlainDimensionName,
  type QueryPlan,
  TIME_GRAINS,
} from "./query-plan.js";
import {
  canonicalTimeZone,
  daysBetween,
  fromZoned,
  nextDay,
  parseDay,
  startOfDay,
  toZoned,
  yearEarlier,
} from "./zoned-time.js";

/** The limits of a query (docs/reports.md). */
export const QUERY_LIMITS = {
  metricsMax: 10,
  dimensionsMax: 3,
  filtersMax: 20,
  filterValuesMax: 50,
  /** Characters of a filter value, a funnel step's value or label, a prop key. */
  valueMax: 2048,
  /** The longest period: 3 years of 365 days and a leap day. */
  periodDaysMax: 1096,
  limitMax: 1000,
  limitDefault: 100,
  stepsMin: 2,
  stepsMax: 8,
} as const;

/** Metrics counted in money: they need a currency. */
export const MONEY_METRICS: ReadonlySet<MetricName> = new Set<MetricName>([
  "gross_revenue",
  "refunds",
  "chargebacks",
  "net_revenue",
  "revenue_per_visitor",
  "average_order_value",
]);

/** Metrics that read the period's traffic (revenue per visitor divides by its visitors). */
const TRAFFIC_METRICS: ReadonlySet<MetricName> = new Set<MetricName>([
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
  "revenue_per_visitor",
]);

/** A payment dimension asked with a traffic metric is refused: events have no such value. */
function checkPaymentDimensions(metrics: MetricName[], dimensions: DimensionName[]): void {
  const d = dimensions.find((x) => PAYMENT_DIMENSIONS.has(x as PlainDimensionName));
  const m = metrics.find((x) => TRAFFIC_METRICS.has(x));
  if (d !== undefined && m !== undefined) {
    throw invalid(
      `dimensions: ${quote(d)} describes payments only: it cannot be asked with the traffic metric ${quote(m)}`,
    );
  }
}

/** A `QueryFilter` as the doors decode it. */
export interface QueryFilterFields {
  dimension: string;
  op: string;
  values: string[];
}

/** A `QueryPeriod` as the doors decode it (empty strings for unset fields). */
export interface QueryPeriodFields {
  fromDay: string;
  toDay: string;
  from: string;
  to: string;
}

/** A `QueryRequest` as the doors decode it (proto3: empty strings, 0 and [] when unset). */
export interface QueryRequestFields {
  siteId: string;
  metrics: string[];
  dimensions: string[];
  filters: QueryFilterFields[];
  /** Undefined when the message has no period. */
  period?: QueryPeriodFields;
  compare: string;
  model: string;
  currency: string;
  orderBy: { field: string; desc: boolean }[];
  limit: number;
  pageToken: string;
}

/** A `FunnelRequest` as the doors decode it. */
export interface FunnelRequestFields {
  siteId: string;
  steps: { kind: string; value: string; filters: QueryFilterFields[]; label: string }[];
  filters: QueryFilterFields[];
  period?: QueryPeriodFields;
  /** int64: a bigint from protobuf-es, a number elsewhere. */
  windowSeconds: bigint | number;
  currency: string;
  model: string;
}

/** What a plan is made for: the site (its id and time zone). */
export interface PlanContext {
  site: Pick<SiteRecord, "id" | "timeZone">;
}

const invalid = errors.invalid;
const quote = (s: string) => JSON.stringify(s);

function isTimeDimension(d: string): d is `time:${(typeof TIME_GRAINS)[number]}` {
  return d.startsWith("time:");
}

/** Whether `name` is a dimension of a query (a plain one, `prop:<key>` or `time:<grain>`). */
export function isDimension(name: string): name is DimensionName {
  if ((PLAIN_DIMENSION_NAMES as readonly string[]).includes(name)) return true;
  if (name.startsWith("prop:")) {
    const key = name.slice(5);
    return key.length > 0 && key.length <= 256 && key.trim() === key;
  }
  if (isTimeDimension(name)) return (TIME_GRAINS as readonly string[]).includes(name.slice(5));
  return false;
}

/** The site's time zone, checked: a stored zone the runtime no longer knows is refused, not guessed. */
export function siteTimeZone(site: Pick<SiteRecord, "timeZone">): string {
  const tz = site.timeZone ?? "UTC";
  const canonical = canonicalTimeZone(tz);
  if (canonical === undefined) throw invalid(`time_zone: unknown time zone ${quote(tz)}`);
  return canonical;
}

function planMetrics(names: string[]): MetricName[] {
  if (names.length === 0) throw invalid("metrics: at least one is required");
  if (names.length > QUERY_LIMITS.metricsMax) {
    throw invalid(`metrics: at most ${QUERY_LIMITS.metricsMax} are allowed`);
  }
  const seen = new Set<string>();
  for (const m of names) {
    if (!(METRIC_NAMES as readonly string[]).includes(m)) {
      throw invalid(`metrics: unknown metric ${quote(m)}`);
    }
    if (seen.has(m)) throw invalid(`metrics: ${quote(m)} is listed twice`);
    seen.add(m);
  }
  return names as MetricName[];
}

function planDimensions(names: string[]): DimensionName[] {
  if (names.length > QUERY_LIMITS.dimensionsMax) {
    throw invalid(`dimensions: at most ${QUERY_LIMITS.dimensionsMax} are allowed`);
  }
  const seen = new Set<string>();
  for (const d of names) {
    if (!isDimension(d)) throw invalid(`dimensions: unknown dimension ${quote(d)}`);
    if (seen.has(d)) throw invalid(`dimensions: ${quote(d)} is listed twice`);
    seen.add(d);
  }
  return names as DimensionName[];
}

function planFilters(filters: QueryFilterFields[], field: string): FilterPlan[] {
  if (filters.length > QUERY_LIMITS.filtersMax) {
    throw invalid(`${field}: at most ${QUERY_LIMITS.filtersMax} are allowed`);
  }
  return filters.map((f, i) => {
    const at = `${field}[${i}]`;
    if (!isDimension(f.dimension)) {
      throw invalid(`${at}.dimension: unknown dimension ${quote(f.dimension)}`);
    }
    if (isTimeDimension(f.dimension)) {
      throw invalid(`${at}.dimension: a time dimension cannot be filtered (use the period)`);
    }
    if (!(FILTER_OPS as readonly string[]).includes(f.op)) {
      throw invalid(`${at}.op: unknown operator ${quote(f.op)} (is, is_not or contains)`);
    }
    if (f.values.length === 0) throw invalid(`${at}.values: at least one is required`);
    if (f.values.length > QUERY_LIMITS.filterValuesMax) {
      throw invalid(`${at}.values: at most ${QUERY_LIMITS.filterValuesMax} are allowed`);
    }
    f.values.forEach((v, j) => {
      if (v.length > QUERY_LIMITS.valueMax) {
        throw invalid(`${at}.values[${j}]: must be at most ${QUERY_LIMITS.valueMax} characters`);
      }
      if (f.op === "contains" && v === "") {
        throw invalid(`${at}.values[${j}]: must not be empty with contains`);
      }
    });
    return {
      dimension: f.dimension as FilterPlan["dimension"],
      op: f.op as FilterOp,
      values: [...f.values],
    };
  });
}

function planModel(model: string): AttributionModel {
  if (model === "") return "first_touch";
  if (!(ATTRIBUTION_MODELS as readonly string[]).includes(model)) {
    throw invalid(`model: unknown model ${quote(model)} (${ATTRIBUTION_MODELS.join(", ")})`);
  }
  return model as AttributionModel;
}

function planCurrency(currency: string, required: boolean): string | undefined {
  if (currency === "") {
    if (required) throw invalid("currency: required with revenue metrics");
    return undefined;
  }
  if (!isCurrency(currency)) {
    throw invalid(`currency: ${quote(currency)} is not an ISO 4217 code (e.g. EUR)`);
  }
  return currency;
}

/**
 * The period as instants, and, for whole days, the days themselves (a
 * comparison a year earlier moves days, not milliseconds).
 */
interface ResolvedPeriod {
  interval: Interval;
  days?: {
    from: { year: number; month: number; day: number };
    to: { year: number; month: number; day: number };
  };
}

const DAY_FORMAT = "must be a day YYYY-MM-DD, e.g. 2024-01-15";
const INSTANT_FORMAT = "must be RFC 3339, e.g. 2024-01-15T10:30:00Z";
const DAY_MS = 86_400_000;

function planPeriod(period: QueryPeriodFields | undefined, timeZone: string): ResolvedPeriod {
  const p = period ?? { fromDay: "", toDay: "", from: "", to: "" };
  const hasDays = p.fromDay !== "" || p.toDay !== "";
  const hasInstants = p.from !== "" || p.to !== "";
  if (!hasDays && !hasInstants) {
    throw invalid("period: required (from_day and to_day, or from and to)");
  }
  if (hasDays && hasInstants) {
    throw invalid("period: from_day and to_day, or from and to, not both kinds");
  }
  if (hasDays) {
    if (p.fromDay === "") throw invalid("period.from_day: required with to_day");
    if (p.toDay === "") throw invalid("period.to_day: required with from_day");
    const from = parseDay(p.fromDay);
    if (!from) throw invalid(`period.from_day: ${DAY_FORMAT}`);
    const to = parseDay(p.toDay);
    if (!to) throw invalid(`period.to_day: ${DAY_FORMAT}`);
    const days = daysBetween(from, to) + 1;
    if (days < 1) throw invalid("period.to_day: must not be before from_day");
    if (days > QUERY_LIMITS.periodDaysMax) {
      throw invalid(`period: at most 3 years (${QUERY_LIMITS.periodDaysMax} days) long`);
    }
    return {
      interval: { from: startOfDay(from, timeZone), to: startOfDay(nextDay(to), timeZone) },
      days: { from, to },
    };
  }
  if (p.from === "") throw invalid("period.from: required with to");
  if (p.to === "") throw invalid("period.to: required with from");
  const from = parseRfc3339(p.from);
  if (from === undefined) throw invalid(`period.from: ${INSTANT_FORMAT}`);
  const to = parseRfc3339(p.to);
  if (to === undefined) throw invalid(`period.to: ${INSTANT_FORMAT}`);
  if (to <= from) throw invalid("period.to: must be after from");
  if (to - from > QUERY_LIMITS.periodDaysMax * DAY_MS) {
    throw invalid(`period: at most 3 years (${QUERY_LIMITS.periodDaysMax} days) long`);
  }
  return { interval: { from, to } };
}

/** The same wall-clock instant a year earlier in `timeZone` (29 February → 28 February). */
function instantYearEarlier(ms: number, timeZone: string): number {
  return fromZoned(yearEarlier(toZoned(ms, timeZone)), timeZone);
}

function planComparison(
  compare: string,
  period: ResolvedPeriod,
  timeZone: string,
): Interval | undefined {
  const { from, to } = period.interval;
  switch (compare) {
    case "":
      return undefined;
    case "previous_period":
      return { from: from - (to - from), to: from };
    case "year_over_year": {
      if (period.days) {
        return {
          from: startOfDay(yearEarlier(period.days.from), timeZone),
          to: startOfDay(nextDay(yearEarlier(period.days.to)), timeZone),
        };
      }
      return { from: instantYearEarlier(from, timeZone), to: instantYearEarlier(to, timeZone) };
    }
    default:
      throw invalid(
        `compare: unknown comparison ${quote(compare)} (previous_period or year_over_year)`,
      );
  }
}

function planLimit(limit: number): number {
  if (limit === 0) return QUERY_LIMITS.limitDefault;
  if (!Number.isInteger(limit) || limit < 1 || limit > QUERY_LIMITS.limitMax) {
    throw invalid(`limit: must be from 1 to ${QUERY_LIMITS.limitMax}`);
  }
  return limit;
}

function planOrder(
  orderBy: { field: string; desc: boolean }[],
  metrics: MetricName[],
  dimensions: DimensionName[],
): QueryPlan["orderBy"] {
  const requested = new Set<string>([...metrics, ...dimensions]);
  const seen = new Set<string>();
  const order: QueryPlan["orderBy"] = orderBy.map((o, i) => {
    if (!requested.has(o.field)) {
      throw invalid(
        `order_by[${i}].field: ${quote(o.field)} is not a requested metric or dimension`,
      );
    }
    if (seen.has(o.field)) throw invalid(`order_by[${i}].field: ${quote(o.field)} is listed twice`);
    seen.add(o.field);
    return { field: o.field as MetricName | DimensionName, desc: o.desc };
  });
  if (order.length === 0) {
    // Time first, ascending (a series reads left to right), then the first metric, descending.
    for (const d of dimensions) {
      if (isTimeDimension(d)) {
        order.push({ field: d, desc: false });
        seen.add(d);
      }
    }
    const first = metrics[0] as MetricName;
    order.push({ field: first, desc: true });
    seen.add(first);
  }
  // Every dimension breaks ties (ascending), so pages never overlap or skip a row.
  for (const d of dimensions) if (!seen.has(d)) order.push({ field: d, desc: false });
  return order;
}

/** What the page token's hash covers: everything that decides the rows but the limit and offset. */
function planHash(plan: Omit<QueryPlan, "offset" | "limit">): string {
  const canonical = JSON.stringify([
    plan.siteId,
    plan.timeZone,
    plan.metrics,
    plan.dimensions,
    plan.filters,
    plan.period,
    plan.comparison ?? null,
    plan.model,
    plan.currency ?? null,
    plan.orderBy,
  ]);
  return createHash("sha256").update(canonical).digest("base64url").slice(0, 12);
}

const TOKEN_PREFIX = "q1.";

/**
 * The `next_page_token` of a page of `plan` that has more rows: opaque to
 * the caller, it carries the next offset and a short hash of the query, so
 * a token cannot be replayed against another query.
 */
export function nextPageToken(plan: QueryPlan): string {
  const text = `${TOKEN_PREFIX}${plan.offset + plan.limit}.${planHash(plan)}`;
  return Buffer.from(text).toString("base64url");
}

function planOffset(token: string, plan: Omit<QueryPlan, "offset" | "limit">): number {
  if (token === "") return 0;
  const text = /^[A-Za-z0-9_-]+$/.test(token) ? Buffer.from(token, "base64url").toString() : "";
  const m = /^q1\.(\d{1,15})\.([A-Za-z0-9_-]{12})$/.exec(text);
  if (!m) throw invalid("page_token: not a token from a Query response");
  if (m[2] !== planHash(plan)) throw invalid("page_token: from a different query");
  return Number(m[1]);
}

/** A `QueryRequest` → its plan, or the first refusal (400 invalid_input). */
export function planQuery(fields: QueryRequestFields, ctx: PlanContext): QueryPlan {
  const metrics = planMetrics(fields.metrics);
  const dimensions = planDimensions(fields.dimensions);
  const filters = planFilters(fields.filters, "filters");
  const timeZone = siteTimeZone(ctx.site);
  const period = planPeriod(fields.period, timeZone);
  const comparison = planComparison(fields.compare, period, timeZone);
  const model = planModel(fields.model);
  checkPaymentDimensions(metrics, dimensions);
  // By `currency`, amounts need no currency: each row's are in its own (totals unset).
  const currency = planCurrency(
    fields.currency,
    metrics.some((m) => MONEY_METRICS.has(m)) && !dimensions.includes("currency"),
  );
  const orderBy = planOrder(fields.orderBy, metrics, dimensions);
  const limit = planLimit(fields.limit);
  const plan: Omit<QueryPlan, "offset" | "limit"> = {
    siteId: ctx.site.id,
    timeZone,
    metrics,
    dimensions,
    filters,
    period: period.interval,
    model,
    orderBy,
  };
  if (comparison) plan.comparison = comparison;
  if (currency !== undefined) plan.currency = currency;
  const offset = planOffset(fields.pageToken, plan);
  return { ...plan, limit, offset };
}

const STEP_KINDS = ["page", "page_prefix", "event"] as const;

function planSteps(steps: FunnelRequestFields["steps"]): FunnelStepPlan[] {
  if (steps.length < QUERY_LIMITS.stepsMin) {
    throw invalid(`steps: at least ${QUERY_LIMITS.stepsMin} are required`);
  }
  if (steps.length > QUERY_LIMITS.stepsMax) {
    throw invalid(`steps: at most ${QUERY_LIMITS.stepsMax} are allowed`);
  }
  return steps.map((s, i) => {
    const at = `steps[${i}]`;
    if (!(STEP_KINDS as readonly string[]).includes(s.kind)) {
      throw invalid(`${at}.kind: unknown step kind ${quote(s.kind)} (page, page_prefix or event)`);
    }
    if (s.value.trim() === "") throw invalid(`${at}.value: required`);
    if (s.value.length > QUERY_LIMITS.valueMax) {
      throw invalid(`${at}.value: must be at most ${QUERY_LIMITS.valueMax} characters`);
    }
    if (s.label.length > QUERY_LIMITS.valueMax) {
      throw invalid(`${at}.label: must be at most ${QUERY_LIMITS.valueMax} characters`);
    }
    return {
      kind: s.kind as FunnelStepPlan["kind"],
      value: s.value,
      filters: planFilters(s.filters, `${at}.filters`),
      label: s.label === "" ? s.value : s.label,
    };
  });
}

/** A `FunnelRequest` → its plan, or the first refusal (400 invalid_input). */
export function planFunnel(fields: FunnelRequestFields, ctx: PlanContext): FunnelPlan {
  const steps = planSteps(fields.steps);
  const filters = planFilters(fields.filters, "filters");
  const timeZone = siteTimeZone(ctx.site);
  const period = planPeriod(fields.period, timeZone).interval;
  const window = BigInt(fields.windowSeconds);
  if (window < 0n) throw invalid("window_seconds: must not be negative");
  const periodMs = period.to - period.from;
  // 0 (unset) is the whole period; a window longer than the period changes nothing.
  const windowMs =
    window === 0n || window * 1000n > BigInt(periodMs) ? periodMs : Number(window) * 1000;
  const model = planModel(fields.model);
  const currency = planCurrency(fields.currency, false);
  const plan: FunnelPlan = {
    siteId: ctx.site.id,
    timeZone,
    steps,
    filters,
    period,
    windowMs,
    model,
  };
  if (currency !== undefined) plan.currency = currency;
  return plan;
}
