/**
 * The reference model of `ReportsService.Query` and `Funnel`: a deliberately
 * plain implementation of docs/reports.md over arrays (no indexes, no
 * cleverness, every rule written once), so the DuckDB engine can be checked
 * against it on random data (test/helpers/analytics-arbitraries.ts). Visits
 * and attribution splits come from the domain (visits.ts,
 * attribution-models.ts), themselves unit-tested.
 */
import { splitPayment } from "../../src/domain/analytics/attribution-models.js";
import {
  type DimensionName,
  type FilterPlan,
  type FunnelPlan,
  type FunnelResult,
  type Interval,
  type MetricName,
  type MetricValue,
  NONE_VALUE,
  type QueryPlan,
  type QueryResult,
  type QueryResultRow,
} from "../../src/domain/analytics/query-plan.js";
import { pageOf, type Visit, visitsOf, visitTouch } from "../../src/domain/analytics/visits.js";
import { bucketOf } from "../../src/domain/analytics/zoned-time.js";
import { isBetterTouch } from "../../src/domain/attribution/ranking.js";
import { touchOf } from "../../src/domain/attribution/touches.js";
import type { EventRecord } from "../../src/domain/store/records.js";
import { visitorKey } from "../../src/store/duckdb/analytics-store.js";

/** A stored event, as the reference reads it. */
export interface RefEvent {
  siteId: string;
  visitorId: string;
  ts: number;
  name: string;
  url: string;
  referrerHost?: string;
  utmSource?: string;
  utmMedium?: string;
  utmCampaign?: string;
  utmTerm?: string;
  utmContent?: string;
  clickIds?: Record<string, string>;
  country?: string;
  device?: string;
  browser?: string;
  os?: string;
  props?: Record<string, unknown>;
  userId?: string;
}

/** A customer and the visitors linked to it (its `visitor_id`, earlier payments' links). */
export interface RefCustomer {
  siteId: string;
  customerId: string;
  userId?: string;
  visitorIds: string[];
}

/** A payment with its stored first-touch attribution (undefined when unattributed). */
export interface RefPayment {
  siteId: string;
  paymentId: string;
  customerId: string;
  kind: "charge" | "refund" | "chargeback";
  status: "succeeded" | "pending" | "failed";
  /** Positive minor units, whatever the kind (as stored). */
  amountMinor: number;
  currency: string;
  paidAt: number;
  attribution?: {
    channel: string;
    source?: string;
    medium?: string;
    campaign?: string;
    landingPage: string;
    visitorId: string;
    touchedAt: number;
  };
}

/** Everything the analytics store holds (after erasures: erased rows are simply absent). */
export interface RefData {
  sites: { id: string; hostnames: string[] }[];
  events: RefEvent[];
  /** `$identify` links: visitor → user id. */
  identities: { siteId: string; visitorId: string; userId: string }[];
  /** Daily id → persistent id. */
  stitches: { siteId: string; visitorId: string; persistentId: string }[];
  customers: RefCustomer[];
  payments: RefPayment[];
}

type Values = Partial<Record<string, string>>;

/** One event of the period with its visit, and its value of every dimension. */
interface EventRow {
  event: RefEvent;
  visitKey: string;
  visit: Visit<RefEvent>;
}

/** A visitor's first touch: its best pageview (the domain's ranking) and that pageview's values. */
interface TouchRow {
  event: RefEvent;
  values: Values;
}

/** One part of a payment, credited to a visit (or to none). */
interface ShareRow {
  payment: RefPayment;
  minor: bigint;
  /** The credited visit's values of the touch dimensions; all absent when unattributed. */
  values: Values;
}

const TIME_PREFIX = "time:";
const TRAFFIC_METRICS = new Set<MetricName>([
  "visitors",
  "visits",
  "pageviews",
  "events",
  "views_per_visit",
  "bounce_rate",
  "visit_duration",
  "conversions",
  "conversion_rate",
]);
/** Metrics of first touches (neither traffic rows nor payments). */
const TOUCH_METRICS = new Set<MetricName>(["new_visitors"]);

/** Rounded to 2 decimals, halves away from zero. */
function round2(x: number): number {
  return (Math.sign(x) * Math.round(Math.abs(x) * 100 + 1e-9)) / 100;
}

/** Rounded to a whole number, halves away from zero. */
function roundHalfAway(x: number): number {
  return Math.sign(x) * Math.round(Math.abs(x) + 1e-9) || 0;
}

/** a / b in minor units, rounded half away from zero. */
function divRound(a: bigint, b: bigint): bigint {
  const neg = a < 0n !== b < 0n;
  const [x, y] = [a < 0n ? -a : a, b < 0n ? -b : b];
  const q = (2n * x + y) / (2n * y);
  return neg ? -q : q;
}

function median(xs: number[]): number | undefined {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1
    ? (s[mid] as number)
    : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** A prop's value as a dimension value: strings as they are, other values as JSON. */
function propValue(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** The visit-level values of a visit: its touch and its first event's country, device, browser, os. */
function visitValues(v: Visit<RefEvent>): Values {
  const first = v.events[0] as RefEvent;
  return {
    channel: v.touch.channel,
    source: v.touch.source,
    medium: v.touch.medium,
    campaign: v.touch.campaign,
    term: v.touch.term,
    content: v.touch.content,
    referrer: v.touch.referrerHost,
    landing_page: v.landingPage,
    exit_page: v.exitPage,
    country: first.country,
    device: first.device,
    browser: first.browser,
    os: first.os,
  };
}

/** An event's value of a dimension (time dimensions: its bucket). */
function eventValue(row: EventRow, d: DimensionName, tz: string): string {
  const e = row.event;
  let v: string | undefined;
  if (d.startsWith(TIME_PREFIX)) v = bucketOf(e.ts, d.slice(5) as "day", tz);
  else if (d.startsWith("prop:")) v = propValue(e.props?.[d.slice(5)]);
  else if (d === "page") v = pageOf(e.url);
  else if (d === "event") v = e.name;
  else if (d === "country" || d === "device" || d === "browser" || d === "os") v = e[d];
  else v = visitValues(row.visit)[d];
  return v ?? NONE_VALUE;
}

/** A first touch's value of a dimension: its pageview's (time: its bucket); exit page has none. */
function touchValue(row: TouchRow, d: DimensionName, tz: string): string {
  const e = row.event;
  let v: string | undefined;
  if (d.startsWith(TIME_PREFIX)) v = bucketOf(e.ts, d.slice(5) as "day", tz);
  else if (d.startsWith("prop:")) v = propValue(e.props?.[d.slice(5)]);
  else if (d === "page") v = pageOf(e.url);
  else if (d === "event") v = e.name;
  else if (d === "country" || d === "device" || d === "browser" || d === "os") v = e[d];
  else v = row.values[d];
  return v ?? NONE_VALUE;
}

/** A share's value of a dimension: the credited visit's; page, event and props have none. */
function shareValue(s: ShareRow, d: DimensionName, tz: string): string {
  if (d.startsWith(TIME_PREFIX)) return bucketOf(s.payment.paidAt, d.slice(5) as "day", tz);
  return s.values[d] ?? NONE_VALUE;
}

function matches(value: string, f: FilterPlan): boolean {
  switch (f.op) {
    case "is":
      return f.values.includes(value);
    case "is_not":
      return !f.values.includes(value);
    case "contains":
      return (
        value !== NONE_VALUE && f.values.some((x) => value.toLowerCase().includes(x.toLowerCase()))
      );
  }
}

/** The analytics model of one site: visits, touches and customers' journeys, built once. */
export function createReference(data: RefData, siteId: string) {
  const site = data.sites.find((s) => s.id === siteId) ?? { id: siteId, hostnames: [] };
  const events = data.events.filter((e) => e.siteId === siteId);

  // Visits of each stored visitor id, over all its events.
  const byVisitor = new Map<string, RefEvent[]>();
  for (const e of events) {
    const list = byVisitor.get(e.visitorId) ?? [];
    list.push(e);
    byVisitor.set(e.visitorId, list);
  }
  const visits = new Map<string, Visit<RefEvent>[]>();
  const rows: EventRow[] = [];
  for (const [visitorId, list] of [...byVisitor].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const vs = visitsOf(list, site.hostnames);
    visits.set(visitorId, vs);
    vs.forEach((visit, i) => {
      for (const event of visit.events) rows.push({ event, visitKey: `${visitorId}#${i}`, visit });
    });
  }

  // Each stored visitor's first touch: its best pageview by the domain's ranking, in stored order.
  const firstTouches: TouchRow[] = [];
  for (const list of byVisitor.values()) {
    let best: { event: RefEvent; rank: { internal: boolean; ts: number } } | undefined;
    for (const event of list) {
      const t = touchOf({ ...event, receivedAt: event.ts } as EventRecord, site.hostnames);
      if (t && isBetterTouch(t, best?.rank)) best = { event, rank: t };
    }
    if (!best) continue;
    const e = best.event;
    const t = visitTouch(e, pageOf(e.url), site.hostnames);
    firstTouches.push({
      event: e,
      values: {
        channel: t.channel,
        source: t.source,
        medium: t.medium,
        campaign: t.campaign,
        term: t.term,
        content: t.content,
        referrer: t.referrerHost,
        landing_page: pageOf(e.url),
      },
    });
  }

  /** The visitors of a customer: its links, its user id's `$identify` visitors, and their stitched ids. */
  function customerVisitors(c: RefCustomer): string[] {
    const ids = new Set(c.visitorIds);
    if (c.userId !== undefined) {
      for (const l of data.identities) {
        if (l.siteId === siteId && l.userId === c.userId) ids.add(l.visitorId);
      }
    }
    const stitches = data.stitches.filter((s) => s.siteId === siteId);
    const persistents = new Set<string>();
    for (const id of ids) {
      persistents.add(id);
      for (const s of stitches) if (s.visitorId === id) persistents.add(s.persistentId);
    }
    for (const p of persistents) {
      ids.add(p);
      for (const s of stitches) if (s.persistentId === p) ids.add(s.visitorId);
    }
    return [...ids].sort();
  }

  /** A customer's visits that started before `t`, by start then stored visitor key (ties). */
  function visitsBefore(
    c: RefCustomer | undefined,
    t: number,
  ): { visitorId: string; visit: Visit<RefEvent> }[] {
    if (!c) return [];
    const out: { visitorId: string; visit: Visit<RefEvent> }[] = [];
    for (const visitorId of customerVisitors(c)) {
      for (const visit of visits.get(visitorId) ?? []) {
        if (visit.start < t) out.push({ visitorId, visit });
      }
    }
    return out.sort((a, b) => {
      if (a.visit.start !== b.visit.start) return a.visit.start - b.visit.start;
      const x = visitorKey(a.visitorId);
      const y = visitorKey(b.visitorId);
      return x < y ? -1 : x > y ? 1 : 0;
    });
  }

  const customerOf = (id: string) =>
    data.customers.find((c) => c.siteId === siteId && c.customerId === id);

  /** The visit a stored first-touch attribution names: the attributed visitor's visit holding its time. */
  function attributedVisit(a: NonNullable<RefPayment["attribution"]>): Visit<RefEvent> | undefined {
    return visits.get(a.visitorId)?.find((v) => v.start <= a.touchedAt && a.touchedAt <= v.end);
  }

  /** A payment's shares by `model`, with the values of the visits they credit. */
  function sharesOf(p: RefPayment, model: QueryPlan["model"]): ShareRow[] {
    const signed = BigInt(p.kind === "charge" ? p.amountMinor : -p.amountMinor);
    if (model === "first_touch") {
      if (!p.attribution) return [{ payment: p, minor: signed, values: {} }];
      const a = p.attribution;
      const visit = attributedVisit(a);
      const values: Values = {
        ...(visit ? visitValues(visit) : {}),
        channel: a.channel,
        source: a.source,
        medium: a.medium,
        campaign: a.campaign,
        landing_page: a.landingPage,
      };
      return [{ payment: p, minor: signed, values }];
    }
    const touches = visitsBefore(customerOf(p.customerId), p.paidAt);
    return splitPayment(
      model,
      signed,
      touches.map((t) => t.visit.touch),
    ).map((s) => {
      const t = s.touchIndex === undefined ? undefined : touches[s.touchIndex];
      return { payment: p, minor: s.minor, values: t ? visitValues(t.visit) : {} };
    });
  }

  /** The payments revenue metrics count: succeeded, in the currency, paid in the interval. */
  function countedPayments(interval: Interval, currency: string | undefined): RefPayment[] {
    return data.payments.filter(
      (p) =>
        p.siteId === siteId &&
        p.status === "succeeded" &&
        (currency === undefined || p.currency === currency) &&
        p.paidAt >= interval.from &&
        p.paidAt < interval.to,
    );
  }

  /** A customer's first succeeded charge (in the currency when given), whenever it was. */
  function firstCharge(customerId: string, currency: string | undefined): RefPayment | undefined {
    return data.payments
      .filter(
        (p) =>
          p.siteId === siteId &&
          p.customerId === customerId &&
          p.kind === "charge" &&
          p.status === "succeeded" &&
          (currency === undefined || p.currency === currency),
      )
      .sort((a, b) => a.paidAt - b.paidAt || (a.paymentId < b.paymentId ? -1 : 1))[0];
  }

  /** The metrics of one set of events and shares. */
  function metricsOf(
    plan: QueryPlan,
    evs: EventRow[],
    shares: ShareRow[],
    dims: string[] = [],
    touches: TouchRow[] = [],
  ): MetricValue[] {
    // Without a currency (by the currency dimension) a row's amounts are in its own;
    // totals would add currencies up: unset.
    const byCurrency = plan.dimensions.indexOf("currency");
    const currency = plan.currency ?? (byCurrency >= 0 ? dims[byCurrency] : undefined);
    const money = (minor: bigint): MetricValue =>
      currency === undefined ? { kind: "none" } : { kind: "money", currency, minor };
    const count = (value: number): MetricValue => ({ kind: "count", value });
    const num = (x: number | undefined): MetricValue =>
      x === undefined || !Number.isFinite(x)
        ? { kind: "none" }
        : { kind: "number", value: round2(x) };
    const visitors = new Set(evs.map((r) => r.event.visitorId));
    const visitMap = new Map(evs.map((r) => [r.visitKey, r.visit]));
    const pageviews = evs.filter((r) => r.event.name === "pageview").length;
    const converters = new Set(
      evs.filter((r) => r.event.name !== "pageview").map((r) => r.event.visitorId),
    );
    const sum = (kind: RefPayment["kind"]) =>
      shares.filter((s) => s.payment.kind === kind).reduce((a, s) => a + s.minor, 0n);
    const gross = sum("charge");
    const refunds = -sum("refund");
    const chargebacks = -sum("chargeback");
    const net = gross - refunds - chargebacks;
    const charges = new Set(
      shares.filter((s) => s.payment.kind === "charge").map((s) => s.payment.paymentId),
    );
    const firstPayments = [
      ...new Set(shares.filter((s) => s.payment.kind === "charge").map((s) => s.payment)),
    ]
      .filter((p) => firstCharge(p.customerId, plan.currency) === p)
      .map((p) => ({ p, touches: visitsBefore(customerOf(p.customerId), p.paidAt) }))
      .filter((x) => x.touches.length > 0);
    const vs = [...visitMap.values()];
    function value(m: MetricName): MetricValue {
      switch (m) {
        case "visitors":
          return count(visitors.size);
        case "visits":
          return count(vs.length);
        case "pageviews":
          return count(pageviews);
        case "events":
          return count(evs.length);
        case "views_per_visit":
          return num(vs.length ? pageviews / vs.length : undefined);
        case "bounce_rate":
          return num(vs.length ? (vs.filter((v) => v.bounce).length / vs.length) * 100 : undefined);
        case "visit_duration":
          // Whole seconds, as Plausible reports it.
          return vs.length
            ? {
                kind: "number",
                value: roundHalfAway(vs.reduce((a, v) => a + v.durationMs, 0) / 1000 / vs.length),
              }
            : { kind: "none" };
        case "conversions":
          return count(converters.size);
        case "conversion_rate":
          return num(visitors.size ? (converters.size / visitors.size) * 100 : undefined);
        case "new_visitors":
          return count(touches.length);
        case "payments":
          return count(charges.size);
        case "transactions":
          return count(new Set(shares.map((s) => s.payment.paymentId)).size);
        case "paying_customers":
          return count(
            new Set(
              shares.filter((s) => s.payment.kind === "charge").map((s) => s.payment.customerId),
            ).size,
          );
        case "gross_revenue":
          return money(gross);
        case "refunds":
          return money(refunds);
        case "chargebacks":
          return money(chargebacks);
        case "net_revenue":
          return money(net);
        case "revenue_per_visitor":
          return visitors.size ? money(divRound(net, BigInt(visitors.size))) : { kind: "none" };
        case "average_order_value":
          return charges.size ? money(divRound(gross, BigInt(charges.size))) : { kind: "none" };
        case "median_days_to_first_payment":
          return num(
            median(
              firstPayments.map(
                (x) => (x.p.paidAt - (x.touches[0]?.visit.start as number)) / 86_400_000,
              ),
            ),
          );
        case "median_visits_to_first_payment":
          return num(median(firstPayments.map((x) => x.touches.length)));
      }
    }
    return plan.metrics.map(value);
  }

  /**
   * A payment's own dimensions: its currency, its customer and, on a
   * customer's first charge with a touch before it, the whole days from the
   * earliest such touch to it, bucketed.
   */
  function paymentValues(p: RefPayment, plan: QueryPlan): Values {
    const values: Values = { currency: p.currency, customer: p.customerId };
    const touches = visitsBefore(customerOf(p.customerId), p.paidAt);
    if (firstCharge(p.customerId, plan.currency) === p && touches.length > 0) {
      const days = (p.paidAt - (touches[0]?.visit.start as number)) / 86_400_000;
      const bounds: [number, string][] = [
        [1, "0"],
        [2, "1"],
        [4, "2-3"],
        [8, "4-7"],
        [15, "8-14"],
        [31, "15-30"],
        [61, "31-60"],
        [91, "61-90"],
      ];
      values.days_to_first_payment = bounds.find(([below]) => days < below)?.[1] ?? "91+";
    }
    return values;
  }

  /** The events and shares of an interval that pass the plan's filters. */
  function inInterval(plan: QueryPlan, interval: Interval) {
    const evs = rows.filter(
      (r) =>
        r.event.ts >= interval.from &&
        r.event.ts < interval.to &&
        plan.filters.every((f) => matches(eventValue(r, f.dimension, plan.timeZone), f)),
    );
    const revenue = plan.metrics.some((m) => !TRAFFIC_METRICS.has(m) && !TOUCH_METRICS.has(m));
    const touches = firstTouches.filter(
      (t) =>
        t.event.ts >= interval.from &&
        t.event.ts < interval.to &&
        plan.filters.every((f) => matches(touchValue(t, f.dimension, plan.timeZone), f)),
    );
    const shares = revenue
      ? countedPayments(interval, plan.currency)
          .flatMap((p) => sharesOf(p, plan.model))
          .map((s) => ({ ...s, values: { ...s.values, ...paymentValues(s.payment, plan) } }))
          .filter((s) =>
            plan.filters.every((f) => matches(shareValue(s, f.dimension, plan.timeZone), f)),
          )
      : [];
    return { evs, shares, touches };
  }

  /** The time buckets of an interval, in order (for matching comparison rows by position). */
  function buckets(interval: Interval, grain: string, tz: string): string[] {
    const out: string[] = [];
    for (let t = interval.from; t < interval.to; t += 15 * 60_000) {
      const b = bucketOf(t, grain as "day", tz);
      if (out[out.length - 1] !== b) out.push(b);
    }
    return out;
  }

  function query(plan: QueryPlan): QueryResult {
    const traffic = plan.metrics.some((m) => TRAFFIC_METRICS.has(m));
    const firsts = plan.metrics.some((m) => TOUCH_METRICS.has(m));
    const revenue = plan.metrics.some((m) => !TRAFFIC_METRICS.has(m) && !TOUCH_METRICS.has(m));
    const main = inInterval(plan, plan.period);
    const keyOf = (vals: string[]) => JSON.stringify(vals);
    const groups = new Map<
      string,
      { dims: string[]; evs: EventRow[]; shares: ShareRow[]; touches: TouchRow[] }
    >();
    const group = (dims: string[]) => {
      const k = keyOf(dims);
      let g = groups.get(k);
      if (!g) {
        g = { dims, evs: [], shares: [], touches: [] };
        groups.set(k, g);
      }
      return g;
    };
    for (const r of main.evs) {
      const g = group(plan.dimensions.map((d) => eventValue(r, d, plan.timeZone)));
      g.evs.push(r);
    }
    for (const s of main.shares) {
      group(plan.dimensions.map((d) => shareValue(s, d, plan.timeZone))).shares.push(s);
    }
    for (const t of main.touches) {
      group(plan.dimensions.map((d) => touchValue(t, d, plan.timeZone))).touches.push(t);
    }
    // A row exists when something a requested metric counts falls in it.
    const present = [...groups.values()].filter(
      (g) =>
        (traffic && g.evs.length > 0) ||
        (revenue && g.shares.length > 0) ||
        (firsts && g.touches.length > 0),
    );
    let resultRows: QueryResultRow[] = present.map((g) => ({
      dimensions: g.dims,
      metrics: metricsOf(plan, g.evs, g.shares, g.dims, g.touches),
    }));

    let comparisonTotals: MetricValue[] | undefined;
    if (plan.comparison) {
      const cmp = inInterval(plan, plan.comparison);
      comparisonTotals = metricsOf(plan, cmp.evs, cmp.shares, [], cmp.touches);
      // Time dimensions: the bucket at the same position in the comparison period.
      const maps = plan.dimensions.map((d) => {
        if (!d.startsWith(TIME_PREFIX)) return undefined;
        const grain = d.slice(5);
        const a = buckets(plan.period, grain, plan.timeZone);
        const b = buckets(plan.comparison as Interval, grain, plan.timeZone);
        return new Map(a.map((x, i) => [x, b[i]]));
      });
      const mapped = (dims: string[]) => dims.map((v, i) => (maps[i] ? (maps[i].get(v) ?? "") : v));
      resultRows = resultRows.map((row) => {
        const want = keyOf(mapped(row.dimensions));
        const evs = cmp.evs.filter(
          (r) => keyOf(plan.dimensions.map((d) => eventValue(r, d, plan.timeZone))) === want,
        );
        const shares = cmp.shares.filter(
          (s) => keyOf(plan.dimensions.map((d) => shareValue(s, d, plan.timeZone))) === want,
        );
        const touches = cmp.touches.filter(
          (t) => keyOf(plan.dimensions.map((d) => touchValue(t, d, plan.timeZone))) === want,
        );
        return { ...row, comparison: metricsOf(plan, evs, shares, row.dimensions, touches) };
      });
    }

    const fieldIndex = (f: string) => {
      const d = plan.dimensions.indexOf(f as DimensionName);
      return d >= 0 ? { dim: d } : { metric: plan.metrics.indexOf(f as MetricName) };
    };
    const order = plan.orderBy.map((o) => ({ ...fieldIndex(o.field), desc: o.desc }));
    resultRows.sort((a, b) => {
      for (const o of order) {
        const c =
          "dim" in o && o.dim !== undefined
            ? cmpString(a.dimensions[o.dim] as string, b.dimensions[o.dim] as string, o.desc)
            : cmpMetric(
                a.metrics[o.metric as number] as MetricValue,
                b.metrics[o.metric as number] as MetricValue,
                o.desc,
              );
        if (c !== 0) return c;
      }
      return 0;
    });

    const result: QueryResult = {
      rows: resultRows.slice(plan.offset, plan.offset + plan.limit),
      totals: metricsOf(plan, main.evs, main.shares, [], main.touches),
      more: resultRows.length > plan.offset + plan.limit,
    };
    if (comparisonTotals) result.comparisonTotals = comparisonTotals;
    return result;
  }

  /**
   * Each visitor's furthest run through the steps: from every step-1 event,
   * the earliest event of each next step after the previous one, within the
   * window of the step-1 event; the run that reaches furthest (the earliest
   * such) gives the step times.
   */
  function funnel(plan: FunnelPlan): FunnelResult {
    const stepMatches = (r: EventRow, i: number) => {
      const step = plan.steps[i] as FunnelPlan["steps"][number];
      const e = r.event;
      let hit: boolean;
      if (step.kind === "event") hit = e.name === step.value;
      else {
        const page = pageOf(e.url);
        const path = step.value.startsWith("/")
          ? URL.canParse(page)
            ? new URL(page).pathname
            : page
          : page;
        hit =
          e.name === "pageview" &&
          (step.kind === "page" ? path === step.value : path.startsWith(step.value));
      }
      return (
        hit && step.filters.every((f) => matches(eventValue(r, f.dimension, plan.timeZone), f))
      );
    };
    const inPeriod = rows.filter(
      (r) =>
        r.event.ts >= plan.period.from &&
        r.event.ts < plan.period.to &&
        plan.filters.every((f) => matches(eventValue(r, f.dimension, plan.timeZone), f)),
    );
    const perVisitor = new Map<string, EventRow[]>();
    for (const r of inPeriod) {
      const list = perVisitor.get(r.event.visitorId) ?? [];
      list.push(r);
      perVisitor.set(r.event.visitorId, list);
    }
    const reached = plan.steps.map(() => 0);
    const gaps: number[][] = plan.steps.map(() => []);
    const completers = new Set<string>();
    for (const [visitorId, list] of perVisitor) {
      const evs = [...list].sort((a, b) => a.event.ts - b.event.ts);
      let best: number[] = [];
      for (let s = 0; s < evs.length; s++) {
        if (!stepMatches(evs[s] as EventRow, 0)) continue;
        const t0 = (evs[s] as EventRow).event.ts;
        const times = [t0];
        let at = s;
        for (let step = 1; step < plan.steps.length; step++) {
          let next = -1;
          for (let j = at + 1; j < evs.length; j++) {
            const ts = (evs[j] as EventRow).event.ts;
            if (ts - t0 > plan.windowMs) break;
            if (stepMatches(evs[j] as EventRow, step)) {
              next = j;
              break;
            }
          }
          if (next < 0) break;
          times.push((evs[next] as EventRow).event.ts);
          at = next;
        }
        if (times.length > best.length) best = times;
      }
      best.forEach((t, i) => {
        reached[i] = (reached[i] as number) + 1;
        if (i > 0) gaps[i]?.push((t - (best[i - 1] as number)) / 1000);
      });
      if (best.length === plan.steps.length) completers.add(visitorId);
    }
    const first = reached[0] as number;
    const result: FunnelResult = {
      steps: plan.steps.map((step, i) => {
        const n = reached[i] as number;
        const prev = i === 0 ? n : (reached[i - 1] as number);
        const out: FunnelResult["steps"][number] = {
          label: step.label,
          visitors: n,
          conversionFromPrevious: i === 0 ? 100 : prev ? round2((n / prev) * 100) : 0,
          conversionOverall: first ? round2((n / first) * 100) : 0,
        };
        const m = median(gaps[i] as number[]);
        if (i > 0 && m !== undefined) out.medianSecondsFromPrevious = round2(m);
        return out;
      }),
    };
    if (plan.currency !== undefined) {
      let net = 0n;
      for (const p of countedPayments(plan.period, plan.currency)) {
        if (plan.model === "first_touch") {
          if (p.attribution && completers.has(p.attribution.visitorId)) {
            net += BigInt(p.kind === "charge" ? p.amountMinor : -p.amountMinor);
          }
          continue;
        }
        const touches = visitsBefore(customerOf(p.customerId), p.paidAt);
        const signed = BigInt(p.kind === "charge" ? p.amountMinor : -p.amountMinor);
        for (const s of splitPayment(
          plan.model,
          signed,
          touches.map((t) => t.visit.touch),
        )) {
          const t = s.touchIndex === undefined ? undefined : touches[s.touchIndex];
          if (t && completers.has(t.visitorId)) net += s.minor;
        }
      }
      result.completersNetMinor = net;
    }
    return result;
  }

  return { query, funnel, customerVisitors, visitsBefore };
}

/** Strings in code point order (`desc` reverses it). */
function cmpString(a: string, b: string, desc: boolean): number {
  const c = a < b ? -1 : a > b ? 1 : 0;
  return desc ? -c : c;
}

/** Metric values by their number; a value with none sorts last either way. */
function cmpMetric(a: MetricValue, b: MetricValue, desc: boolean): number {
  const n = (v: MetricValue) =>
    v.kind === "none" ? undefined : v.kind === "money" ? Number(v.minor) : v.value;
  const x = n(a);
  const y = n(b);
  if (x === undefined || y === undefined) return x === y ? 0 : x === undefined ? 1 : -1;
  const c = x < y ? -1 : x > y ? 1 : 0;
  return desc ? -c : c;
}

/** The reference's answer to a query plan over `data`. */
export function referenceQuery(data: RefData, plan: QueryPlan): QueryResult {
  return createReference(data, plan.siteId).query(plan);
}

/** The reference's answer to a funnel plan over `data`. */
export function referenceFunnel(data: RefData, plan: FunnelPlan): FunnelResult {
  return createReference(data, plan.siteId).funnel(plan);
}
