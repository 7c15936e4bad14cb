/**
 * The fixed reports (SiteOverview, RevenueByChannel) as plans of the query
 * layer: each cut is a QueryPlan the engine answers with the semantic layer's
 * one definition of its metrics (src/store/duckdb/semantic-layer.ts), and
 * its rows are turned back into the reports' shapes here. Days are UTC (the
 * fixed reports' days have always been), the model is first touch (the
 * stored attribution), amounts stay per currency.
 */
import type {
  DailyNet,
  DimensionNet,
  NewVisitorCount,
  RevenueBreakdown,
  RevenueRow,
} from "../store/store.js";
import { UNATTRIBUTED } from "../vocabulary.js";
import {
  type AnalyticsEngine,
  type DimensionName,
  type MetricName,
  type MetricValue,
  NONE_VALUE,
  type QueryPlan,
} from "./query-plan.js";

/** Rows a fixed report's plan may give: every group (the engine pages only Query's answers). */
const ALL_ROWS = 1_000_000_000;

/** A fixed report's plan over [from, to): UTC, first touch, every currency unless grouped by one. */
export function fixedPlan(
  siteId: string,
  from: number,
  to: number,
  metrics: MetricName[],
  dimensions: DimensionName[],
): QueryPlan {
  return {
    siteId,
    timeZone: "UTC",
    metrics,
    dimensions,
    filters: [],
    period: { from, to },
    model: "first_touch",
    orderBy: dimensions.map((field) => ({ field, desc: false })),
    limit: ALL_ROWS,
    offset: 0,
  };
}

const count = (v: MetricValue | undefined): number => (v?.kind === "count" ? v.value : 0);
const minor = (v: MetricValue | undefined): bigint => (v?.kind === "money" ? v.minor : 0n);
/** A dimension value, absent for `(none)`. */
const present = (v: string | undefined): string | undefined =>
  v === undefined || v === NONE_VALUE ? undefined : v;
/** Code point order, as the stores sorted (SQLite's BINARY collation). */
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A channel's revenue in one currency, with its net as the semantic layer's `net_revenue`. */
export interface ChannelRevenue extends RevenueRow {
  netMinor: bigint;
}

/**
 * RevenueByChannel of [from, to): succeeded payments by first-touch channel
 * (`unattributed` without one) and currency, sorted by both. SiteOverview's
 * channel revenue is these rows: the one plan and the one net.
 */
export async function revenueByChannelOf(
  engine: AnalyticsEngine,
  siteId: string,
  from: number,
  to: number,
): Promise<ChannelRevenue[]> {
  const result = await engine.report(
    fixedPlan(
      siteId,
      from,
      to,
      [
        "gross_revenue",
        "refunds",
        "chargebacks",
        "net_revenue",
        "transactions",
        "paying_customers",
      ],
      ["channel", "currency"],
    ),
  );
  return result.rows
    .map((r): ChannelRevenue => {
      const [gross, refunds, chargebacks, net, transactions, paying] = r.metrics;
      return {
        // A payment without a first touch is under (none) in the query layer.
        channel: present(r.dimensions[0]) ?? UNATTRIBUTED,
        currency: r.dimensions[1] ?? "",
        grossMinor: minor(gross),
        refundsMinor: minor(refunds),
        chargebacksMinor: minor(chargebacks),
        netMinor: minor(net),
        payments: count(transactions),
        payingCustomers: count(paying),
      };
    })
    .sort((a, b) => byText(a.channel, b.channel) || byText(a.currency, b.currency));
}

/** New visitors (first touches) of [from, to) by first-touch channel, source, campaign and landing page. */
export async function newVisitorsOf(
  engine: AnalyticsEngine,
  siteId: string,
  from: number,
  to: number,
): Promise<NewVisitorCount[]> {
  const result = await engine.report(
    fixedPlan(
      siteId,
      from,
      to,
      ["new_visitors"],
      ["channel", "source", "campaign", "landing_page"],
    ),
  );
  return result.rows.map((r) => {
    const [channel, source, campaign, landingPage] = r.dimensions;
    const v: NewVisitorCount = {
      channel: channel ?? "",
      landingPage: landingPage ?? "",
      visitors: count(r.metrics[0]),
    };
    const s = present(source);
    const c = present(campaign);
    if (s !== undefined) v.source = s;
    if (c !== undefined) v.campaign = c;
    return v;
  });
}

/**
 * Net revenue of [from, to) by UTC day of payment and by each first-touch
 * dimension, per currency: one plan by all of them, summed here (exactly,
 * in minor units). A payment without a value for a dimension is in no entry of it.
 */
export async function revenueBreakdownOf(
  engine: AnalyticsEngine,
  siteId: string,
  from: number,
  to: number,
): Promise<RevenueBreakdown> {
  const result = await engine.report(
    fixedPlan(
      siteId,
      from,
      to,
      ["net_revenue"],
      ["time:day", "currency", "source", "campaign", "landing_page"],
    ),
  );
  const days = new Map<string, DailyNet>();
  const dims = [
    new Map<string, DimensionNet>(),
    new Map<string, DimensionNet>(),
    new Map<string, DimensionNet>(),
  ];
  for (const r of result.rows) {
    const [day = "", currency = "", ...values] = r.dimensions;
    const net = minor(r.metrics[0]);
    const d = days.get(`${day}\u0000${currency}`);
    if (d) d.netMinor += net;
    else days.set(`${day}\u0000${currency}`, { day, currency, netMinor: net });
    values.forEach((raw, i) => {
      const value = present(raw);
      const into = dims[i];
      if (value === undefined || into === undefined) return;
      const key = `${value}\u0000${currency}`;
      const e = into.get(key);
      if (e) e.netMinor += net;
      else into.set(key, { value, currency, netMinor: net });
    });
  }
  const sorted = <T>(m: Map<string, T>) =>
    [...m].sort(([a], [b]) => byText(a, b)).map(([, entry]) => entry);
  const [sources, campaigns, landingPages] = dims.map(sorted) as [
    DimensionNet[],
    DimensionNet[],
    DimensionNet[],
  ];
  return { days: sorted(days), sources, campaigns, landingPages };
}
