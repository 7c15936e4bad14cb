/**
 * The page's Query requests (ReportsService.Query): the top row's metrics,
 * the main chart's series and each panel's rows, all for the view's days,
 * filters, comparison, model and currency, and how their values read. Every
 * number shown is a MetricValue as the service answered it.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  FunnelRequestSchema,
  MetricValue,
  Money,
  QueryRequestSchema,
} from "../../gen/ingest/v1/reports_pb.js";
import type { FunnelStep, ViewState } from "./period.js";

/** A metric of the top row: its Query name and its label. */
export interface MetricDef {
  name: string;
  label: string;
  /** Needs a currency (an amount in it). */
  money?: boolean;
}

/** The top row, in order (docs/dashboard.md defines each). */
export const TOP_METRICS: MetricDef[] = [
  { name: "visitors", label: "Visitors" },
  { name: "visits", label: "Visits" },
  { name: "pageviews", label: "Pageviews" },
  { name: "bounce_rate", label: "Bounce rate" },
  { name: "visit_duration", label: "Visit duration" },
  { name: "net_revenue", label: "Net revenue", money: true },
  { name: "paying_customers", label: "Paying customers", money: true },
  { name: "conversion_rate", label: "Conversion rate" },
  { name: "revenue_per_visitor", label: "Revenue per visitor", money: true },
];

/** Metrics that read payments: the page asks them in the selected currency. */
const REVENUE = new Set([
  ...TOP_METRICS.filter((m) => m.money).map((m) => m.name),
  "payments",
  "median_days_to_first_payment",
  "median_visits_to_first_payment",
]);

/** The metrics of a list that can be asked without a currency, or all of them with one. */
export function askable(metrics: string[], currency: string | undefined): string[] {
  return currency ? metrics : metrics.filter((m) => !REVENUE.has(m));
}

/** A Query request for the view (its days, filters, model, currency), with `shape`. */
export function queryRequest(
  view: ViewState,
  days: { fromDay: string; toDay: string },
  currency: string | undefined,
  shape: {
    metrics: string[];
    dimensions?: string[];
    compare?: boolean;
    limit?: number;
    /** Filters of this part only, after the page's (e.g. a row's detail view). */
    filters?: { dimension: string; op: "is" | "is_not"; values: string[] }[];
    orderBy?: { field: string; desc: boolean }[];
  },
): MessageInitShape<typeof QueryRequestSchema> {
  const metrics = askable(shape.metrics, currency);
  const revenue = metrics.some((m) => REVENUE.has(m));
  return {
    siteId: view.site,
    metrics,
    dimensions: shape.dimensions ?? [],
    filters: [
      ...view.filters.map((f) => ({ dimension: f.dimension, op: "is", values: [f.value] })),
      ...(shape.filters ?? []),
    ],
    period: { fromDay: days.fromDay, toDay: days.toDay },
    compare: shape.compare && view.compare ? "previous_period" : "",
    model: revenue ? view.model : "",
    currency: revenue && currency ? currency : "",
    limit: shape.limit ?? 0,
    ...(shape.orderBy ? { orderBy: shape.orderBy } : {}),
  };
}

/** A metric's value as the page shows it: counts grouped, rates in %, durations in m s, amounts with their currency. */
export function metricText(name: string, v: MetricValue | undefined): string {
  const value = v?.value;
  if (!value || value.case === undefined) return "–";
  if (value.case === "count") return Number(value.value).toLocaleString("en-GB");
  if (value.case === "money") return `${value.value.decimal} ${value.value.currency}`;
  const n = value.value;
  if (name === "visit_duration") {
    const s = Math.round(n);
    return s >= 60 ? `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s` : `${s}s`;
  }
  if (name.endsWith("_rate")) return `${n.toFixed(1)}%`;
  return n.toFixed(1);
}

/** A metric's value as a plain number (for the chart and for changes). */
export function metricNumber(v: MetricValue | undefined): number | undefined {
  const value = v?.value;
  if (!value || value.case === undefined) return undefined;
  if (value.case === "count") return Number(value.value);
  if (value.case === "money") return Number(value.value.decimal);
  return value.value;
}

/**
 * The change of a metric against the comparison period, as the page shows
 * it: "+12.5%", "−3.0%", "0.0%"; for rates the difference in points
 * ("+2.1 pp"); "new" when the comparison was 0 and now is not; "–" without
 * either value.
 */
export function changeText(
  name: string,
  now: MetricValue | undefined,
  before: MetricValue | undefined,
) {
  const a = metricNumber(now);
  const b = metricNumber(before);
  if (a === undefined || b === undefined) return "–";
  const sign = (x: number) => (x > 0 ? "+" : x < 0 ? "−" : "");
  if (name.endsWith("_rate")) {
    const d = a - b;
    return `${sign(d)}${Math.abs(d).toFixed(1)} pp`;
  }
  if (b === 0) return a === 0 ? "0.0%" : "new";
  const pct = ((a - b) / Math.abs(b)) * 100;
  return `${sign(pct)}${Math.abs(pct).toFixed(1)}%`;
}

/** A Funnel request for the view: its days, filters, model and currency, over `steps`. */
export function funnelRequest(
  view: ViewState,
  days: { fromDay: string; toDay: string },
  currency: string | undefined,
  steps: FunnelStep[],
): MessageInitShape<typeof FunnelRequestSchema> {
  return {
    siteId: view.site,
    steps: steps.map((s) => ({ kind: s.kind, value: s.value })),
    filters: view.filters.map((f) => ({ dimension: f.dimension, op: "is", values: [f.value] })),
    period: { fromDay: days.fromDay, toDay: days.toDay },
    model: currency ? view.model : "",
    currency: currency ?? "",
  };
}

/** An amount as the page shows it: the service's decimal and its currency; "–" when unset. */
export function moneyText(m: Money | undefined): string {
  return m ? `${m.decimal} ${m.currency}` : "–";
}
