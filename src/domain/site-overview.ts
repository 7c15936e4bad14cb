/**
 * SiteOverview: what a dashboard shows for a site and a period. Every cut
 * (traffic per day, new visitors, revenue by day, dimension and channel) is
 * a plan of the query layer on the analytics engine (analytics/fixed-reports.ts),
 * the channel rows RevenueByChannel's own plan, so the numbers are Query's;
 * the recent payments are the store's list. A process without the engine
 * answers unavailable. Amounts stay per currency: nothing here adds two currencies.
 */
import {
  type ChannelRevenue,
  newVisitorsOf,
  revenueBreakdownOf,
  revenueByChannelOf,
} from "./analytics/fixed-reports.js";
import type { AnalyticsEngine, QueryPlan } from "./analytics/query-plan.js";
import { errors } from "./errors.js";
import type {
  DailyTraffic,
  DimensionNet,
  NewVisitorCount,
  PaymentSummary,
  Store,
} from "./store/store.js";

/** The longest period one call covers. */
export const OVERVIEW_MAX_DAYS = 366;
/** Entries per top list (per currency for the lists by revenue). */
export const TOP_ENTRIES = 10;
/** Payments in the recent-payments list. */
export const RECENT_PAYMENTS = 20;

const DAY_MS = 86_400_000;

/** An amount of one currency in minor units. */
export interface CurrencyAmount {
  currency: string;
  minor: bigint;
}

export interface ChannelOverviewView {
  channel: string;
  newVisitors: number;
  revenue: ChannelRevenue[];
}

export interface DayOverviewView {
  day: string;
  visitors: number;
  pageviews: number;
  net: CurrencyAmount[];
}

export interface TopEntryView {
  value: string;
  newVisitors: number;
  net: CurrencyAmount[];
}

/** The top lists of one dimension. */
export interface TopListsView {
  byVisitors: TopEntryView[];
  byRevenue: TopEntryView[];
}

export interface SiteOverviewView {
  from: number;
  to: number;
  newVisitors: number;
  channels: ChannelOverviewView[];
  days: DayOverviewView[];
  sources: TopListsView;
  campaigns: TopListsView;
  landingPages: TopListsView;
  recentPayments: PaymentSummary[];
}

type Dimension = "source" | "campaign" | "landingPage";

const byCurrency = (a: CurrencyAmount, b: CurrencyAmount) => (a.currency < b.currency ? -1 : 1);

/** Adds `minor` to the currency's entry of `into`. */
function add(into: Map<string, bigint>, currency: string, minor: bigint): void {
  into.set(currency, (into.get(currency) ?? 0n) + minor);
}

function amounts(m: Map<string, bigint> | undefined): CurrencyAmount[] {
  return [...(m ?? [])].map(([currency, minor]) => ({ currency, minor })).sort(byCurrency);
}

/** The top lists of one dimension: by new visitors, and by net revenue within each currency. */
export function topLists(
  dimension: Dimension,
  visitors: readonly NewVisitorCount[],
  nets: readonly DimensionNet[],
): TopListsView {
  const counts = new Map<string, number>();
  for (const v of visitors) {
    const value = v[dimension];
    if (value !== undefined) counts.set(value, (counts.get(value) ?? 0) + v.visitors);
  }
  const revenue = new Map<string, Map<string, bigint>>();
  for (const n of nets) {
    const m = revenue.get(n.value) ?? new Map<string, bigint>();
    add(m, n.currency, n.netMinor);
    revenue.set(n.value, m);
  }
  const byVisitors = [...counts]
    .sort(([a, n], [b, m]) => m - n || (a < b ? -1 : 1))
    .slice(0, TOP_ENTRIES)
    .map(([value, n]) => ({ value, newVisitors: n, net: amounts(revenue.get(value)) }));
  const perCurrency = new Map<string, { value: string; minor: bigint }[]>();
  for (const [value, m] of revenue) {
    for (const [currency, minor] of m) {
      perCurrency.set(currency, [...(perCurrency.get(currency) ?? []), { value, minor }]);
    }
  }
  const byRevenue = [...perCurrency]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .flatMap(([currency, entries]) =>
      entries
        .sort((a, b) =>
          b.minor > a.minor ? 1 : b.minor < a.minor ? -1 : a.value < b.value ? -1 : 1,
        )
        .slice(0, TOP_ENTRIES)
        .map((e) => ({
          value: e.value,
          newVisitors: counts.get(e.value) ?? 0,
          net: [{ currency, minor: e.minor }],
        })),
    );
  return { byVisitors, byRevenue };
}

/** Every UTC day (YYYY-MM-DD) that [from, to) touches, oldest first. */
export function daysOf(from: number, to: number): string[] {
  const days: string[] = [];
  for (let t = Math.floor(from / DAY_MS) * DAY_MS; t < to; t += DAY_MS) {
    days.push(new Date(t).toISOString().slice(0, 10));
  }
  return days;
}

/**
 * The plan of SiteOverview's traffic: visitors and pageviews per UTC day of
 * [from, to), as Query defines them (docs/reports.md). Days are UTC, as the
 * overview's have always been, whatever the site's time zone.
 */
export function overviewTrafficPlan(siteId: string, from: number, to: number): QueryPlan {
  return {
    siteId,
    timeZone: "UTC",
    metrics: ["visitors", "pageviews"],
    dimensions: ["time:day"],
    filters: [],
    period: { from, to },
    model: "first_touch",
    orderBy: [{ field: "time:day", desc: false }],
    // A day per row: OVERVIEW_MAX_DAYS touch at most one more day than they hold.
    limit: OVERVIEW_MAX_DAYS + 1,
    offset: 0,
  };
}

/** Visitors and pageviews per UTC day of [from, to) from the engine; days without events are absent. */
async function engineTraffic(
  engine: AnalyticsEngine,
  siteId: string,
  from: number,
  to: number,
): Promise<DailyTraffic[]> {
  const result = await engine.report(overviewTrafficPlan(siteId, from, to));
  const count = (v: { kind: string; value?: number } | undefined) =>
    v?.kind === "count" ? (v.value ?? 0) : 0;
  return result.rows.map((r) => ({
    day: r.dimensions[0] ?? "",
    visitors: count(r.metrics[0]),
    pageviews: count(r.metrics[1]),
  }));
}

/**
 * The overview of [from, to); the caller has checked the site and the range.
 * Without an engine (a MongoDB process that does not own the analytics store,
 * a second SQLite server on the same directory) it is unavailable: the
 * stores keep no second copy of the report's rules (docs/reports.md).
 */
export async function buildSiteOverview(
  store: Store,
  siteId: string,
  from: number,
  to: number,
  engine: AnalyticsEngine | undefined,
): Promise<SiteOverviewView> {
  if (!engine) throw errors.analyticsNotServed();
  const [traffic, visitors, breakdown, revenue, recentPayments] = await Promise.all([
    engineTraffic(engine, siteId, from, to),
    newVisitorsOf(engine, siteId, from, to),
    revenueBreakdownOf(engine, siteId, from, to),
    revenueByChannelOf(engine, siteId, from, to),
    store.recentPayments(siteId, from, to, RECENT_PAYMENTS),
  ]);
  const channels = new Map<string, ChannelOverviewView>();
  const channel = (name: string) => {
    const found = channels.get(name);
    if (found) return found;
    const made: ChannelOverviewView = { channel: name, newVisitors: 0, revenue: [] };
    channels.set(name, made);
    return made;
  };
  for (const v of visitors) channel(v.channel).newVisitors += v.visitors;
  for (const r of revenue) channel(r.channel).revenue.push(r);
  const trafficByDay = new Map(traffic.map((t) => [t.day, t]));
  const netByDay = new Map<string, Map<string, bigint>>();
  for (const d of breakdown.days) {
    const m = netByDay.get(d.day) ?? new Map<string, bigint>();
    add(m, d.currency, d.netMinor);
    netByDay.set(d.day, m);
  }
  return {
    from,
    to,
    newVisitors: visitors.reduce((n, v) => n + v.visitors, 0),
    channels: [...channels.values()].sort(
      (a, b) => b.newVisitors - a.newVisitors || (a.channel < b.channel ? -1 : 1),
    ),
    days: daysOf(from, to).map((day) => ({
      day,
      visitors: trafficByDay.get(day)?.visitors ?? 0,
      pageviews: trafficByDay.get(day)?.pageviews ?? 0,
      net: amounts(netByDay.get(day)),
    })),
    sources: topLists("source", visitors, breakdown.sources),
    campaigns: topLists("campaign", visitors, breakdown.campaigns),
    landingPages: topLists("landingPage", visitors, breakdown.landingPages),
    recentPayments,
  };
}

/** The period of a SiteOverview request, checked; both ends are required. */
export function overviewPeriod(
  parse: (name: string, value: string) => number,
  input: { from: string; to: string },
): { from: number; to: number } {
  if (input.from === "") throw errors.invalid("from: required");
  if (input.to === "") throw errors.invalid("to: required");
  const from = parse("from", input.from);
  const to = parse("to", input.to);
  if (to <= from) throw errors.invalid("to: must be after from");
  if (to - from > OVERVIEW_MAX_DAYS * DAY_MS) {
    throw errors.invalid(`to: must be at most ${OVERVIEW_MAX_DAYS} days after from`);
  }
  return { from, to };
}
