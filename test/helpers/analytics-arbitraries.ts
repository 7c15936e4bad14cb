/**
 * fast-check arbitraries for the analytics property ("the engine answers as
 * the reference does"): realistic small data sets (a few visitors whose
 * visits cross midnight in the site's zone and DST days, daily ids stitched
 * to persistent ones, `$identify` calls that re-attribute a customer,
 * charges, refunds and chargebacks in two currencies, stored first-touch
 * attributions computed by the service's own rules) and valid Query and
 * Funnel requests planned for that site.
 */
import fc from "fast-check";
import {
  type FunnelRequestFields,
  planFunnel,
  planQuery,
  type QueryRequestFields,
} from "../../src/domain/analytics/plan-query.js";
import {
  ATTRIBUTION_MODELS,
  type FunnelPlan,
  METRIC_NAMES,
  type QueryPlan,
} from "../../src/domain/analytics/query-plan.js";
import { creditedTouch } from "../../src/domain/attribution/ranking.js";
import { touchOf } from "../../src/domain/attribution/touches.js";
import type { EventRecord, VisitorTouch } from "../../src/domain/store/records.js";
import {
  createReference,
  type RefData,
  type RefEvent,
  type RefPayment,
} from "./analytics-reference.js";

export const ARB_SITE = "site_1";
const HOSTS = ["example.com"];

/** Zones with DST (both hemispheres' rules around the window) and a half-hour offset. */
export const ARB_TIME_ZONES = ["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata"] as const;

/** The data's days: 27 March to 1 April 2026 (Paris changes clocks on the 29th). */
const WINDOW_START = Date.parse("2026-03-27T00:00:00Z");
const WINDOW_DAYS = 5;
export const ARB_PERIOD_DAYS = [
  "2026-03-27",
  "2026-03-28",
  "2026-03-29",
  "2026-03-30",
  "2026-03-31",
];

const MIN = 60_000;
/** Gaps between a visitor's events: inside a visit, at the 30-minute edge, new visits, new days. */
const GAPS = [MIN, 10 * MIN, 30 * MIN, 30 * MIN + 1, 3 * 60 * MIN, 20 * 60 * MIN];

const PATHS = ["/", "/pricing", "/blog/post", "/checkout", "/signup"];
const EVENT_NAMES = ["pageview", "pageview", "pageview", "signup", "purchase"];
const ORIGINS: {
  referrerHost?: string;
  utmSource?: string;
  utmMedium?: string;
  utmCampaign?: string;
  gclid?: true;
}[] = [
  {},
  {},
  { referrerHost: "www.google.com" },
  { referrerHost: "example.com" },
  { referrerHost: "news.ycombinator.com" },
  { utmSource: "news", utmMedium: "email", utmCampaign: "spring" },
  { utmSource: "facebook", utmMedium: "cpc" },
  { gclid: true },
];
export const ARB_COUNTRIES = ["FR", "US", "IN"];

/** One event of a visitor's timeline, before ids and times are fixed. */
const stepArb = fc.record({
  gap: fc.constantFrom(...GAPS),
  name: fc.constantFrom(...EVENT_NAMES),
  path: fc.constantFrom(...PATHS),
  origin: fc.constantFrom(...ORIGINS),
  country: fc.option(fc.constantFrom(...ARB_COUNTRIES), { nil: undefined }),
  device: fc.constantFrom("Desktop", "Mobile"),
  plan: fc.option(fc.constantFrom("pro", "free"), { nil: undefined }),
});

const visitorArb = fc.record({
  /** Minutes after the window's start of its first event. */
  startMinute: fc.integer({ min: 0, max: WINDOW_DAYS * 24 * 60 - 1 }),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 7 }),
  persistent: fc.boolean(),
  /** Sends `$identify` for this user (index in the users) after its first event. */
  identifies: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
});

function eventOf(visitorId: string, ts: number, s: StepValue): RefEvent {
  const o = s.origin;
  const query = [
    o.utmSource && `utm_source=${o.utmSource}`,
    o.utmMedium && `utm_medium=${o.utmMedium}`,
    o.utmCampaign && `utm_campaign=${o.utmCampaign}`,
    o.gclid && "gclid=abc",
  ].filter(Boolean);
  const e: RefEvent = {
    siteId: ARB_SITE,
    visitorId,
    ts,
    name: s.name,
    url: `https://example.com${s.path}${query.length ? `?${query.join("&")}` : ""}`,
    device: s.device,
  };
  if (o.referrerHost) e.referrerHost = o.referrerHost;
  if (o.utmSource) e.utmSource = o.utmSource;
  if (o.utmMedium) e.utmMedium = o.utmMedium;
  if (o.utmCampaign) e.utmCampaign = o.utmCampaign;
  if (o.gclid) e.clickIds = { gclid: "abc" };
  if (s.country) e.country = s.country;
  if (s.plan && s.name !== "pageview") e.props = { plan: s.plan };
  return e;
}

type StepValue = {
  gap: number;
  name: string;
  path: string;
  origin: (typeof ORIGINS)[number];
  country: string | undefined;
  device: string;
  plan: string | undefined;
};

const paymentArb = fc.record({
  kind: fc.constantFrom("charge", "charge", "charge", "refund", "chargeback") as fc.Arbitrary<
    RefPayment["kind"]
  >,
  status: fc.constantFrom(
    "succeeded",
    "succeeded",
    "succeeded",
    "pending",
    "failed",
  ) as fc.Arbitrary<RefPayment["status"]>,
  amountMinor: fc.integer({ min: 1, max: 100_000 }),
  currency: fc.constantFrom("EUR", "EUR", "USD"),
  minute: fc.integer({ min: 0, max: WINDOW_DAYS * 24 * 60 - 1 }),
});

const customerArb = fc.record({
  /** Indexes of the visitors its `visitor_id` and earlier payments linked. */
  visitors: fc.uniqueArray(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 2 }),
  user: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
  payments: fc.array(paymentArb, { minLength: 1, maxLength: 4 }),
});

/** The stored first touch of a customer, by the service's rules, over everything its visitors did. */
function storedAttribution(data: RefData, customerId: string): RefPayment["attribution"] {
  const customer = data.customers.find((c) => c.customerId === customerId);
  if (!customer) return undefined;
  const visitors = new Set(createReference(data, ARB_SITE).customerVisitors(customer));
  const best = new Map<string, VisitorTouch>();
  for (const e of data.events) {
    if (!visitors.has(e.visitorId)) continue;
    const t = touchOf({ ...e, receivedAt: e.ts } as EventRecord, HOSTS);
    if (!t) continue;
    const cur = best.get(e.visitorId);
    if (!cur || (t.internal !== cur.internal ? !t.internal : t.ts < cur.ts))
      best.set(e.visitorId, t);
  }
  const credited = creditedTouch([...best.values()], () => "visitor_id");
  if (!credited) return undefined;
  const t = credited.touch;
  return {
    channel: t.channel,
    ...(t.source !== undefined ? { source: t.source } : {}),
    ...(t.medium !== undefined ? { medium: t.medium } : {}),
    ...(t.campaign !== undefined ? { campaign: t.campaign } : {}),
    landingPage: t.landingPage,
    visitorId: t.visitorId,
    touchedAt: t.ts,
  };
}

/** A site's data: up to 6 visitors, up to 3 customers, their payments, stitches and identities. */
export const analyticsDataArb: fc.Arbitrary<RefData> = fc
  .record({
    visitors: fc.array(visitorArb, { minLength: 1, maxLength: 6 }),
    customers: fc.array(customerArb, { minLength: 1, maxLength: 3 }),
    /** Daily visitor index → persistent visitor index stitched to it. */
    stitches: fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 5 })), {
      maxLength: 6,
    }),
  })
  .map(({ visitors, customers, stitches }) => {
    const ids = visitors.map((v, i) => (v.persistent ? `p:v${i}` : `d${i}`));
    const events: RefEvent[] = [];
    const identities: RefData["identities"] = [];
    visitors.forEach((v, i) => {
      const id = ids[i] as string;
      let ts = WINDOW_START + v.startMinute * MIN;
      v.steps.forEach((s, j) => {
        if (j > 0) ts += s.gap;
        events.push(eventOf(id, ts, s));
      });
      if (v.identifies !== undefined) {
        const userId = `user${v.identifies}`;
        events.push({
          siteId: ARB_SITE,
          visitorId: id,
          ts: WINDOW_START + v.startMinute * MIN + 1,
          name: "$identify",
          url: "https://example.com/",
          userId,
        });
        identities.push({ siteId: ARB_SITE, visitorId: id, userId });
      }
    });
    const stitched = new Set<string>();
    const stitchRows: RefData["stitches"] = [];
    for (const [d, p] of stitches) {
      const daily = ids[d];
      const persistent = ids[p];
      // A daily id is stitched to one persistent id, and only a persistent id takes daily ones.
      if (!daily || !persistent || daily.startsWith("p:") || !persistent.startsWith("p:")) continue;
      if (stitched.has(daily)) continue;
      stitched.add(daily);
      stitchRows.push({ siteId: ARB_SITE, visitorId: daily, persistentId: persistent });
    }
    const data: RefData = {
      sites: [{ id: ARB_SITE, hostnames: HOSTS }],
      events,
      identities,
      stitches: stitchRows,
      customers: customers.map((c, i) => ({
        siteId: ARB_SITE,
        customerId: `cust${i}`,
        ...(c.user !== undefined ? { userId: `user${c.user}` } : {}),
        visitorIds: c.visitors.map((v) => ids[v]).filter((v): v is string => v !== undefined),
      })),
      payments: [],
    };
    customers.forEach((c, i) => {
      const attribution = storedAttribution(data, `cust${i}`);
      c.payments.forEach((p, j) => {
        data.payments.push({
          siteId: ARB_SITE,
          paymentId: `pay${i}_${j}`,
          customerId: `cust${i}`,
          kind: p.kind,
          status: p.status,
          amountMinor: p.amountMinor,
          currency: p.currency,
          paidAt: WINDOW_START + p.minute * MIN,
          ...(attribution ? { attribution } : {}),
        });
      });
    });
    return data;
  });

/**
 * The data after erasing a customer: the customer, its payments, its visitors' events,
 * identities and stitches are gone (an erasure removes rows; nothing else changes).
 */
export function eraseCustomer(data: RefData, customerId: string): RefData {
  const customer = data.customers.find((c) => c.customerId === customerId);
  if (!customer) return data;
  const visitors = new Set(createReference(data, customer.siteId).customerVisitors(customer));
  return {
    ...data,
    events: data.events.filter((e) => !visitors.has(e.visitorId)),
    identities: data.identities.filter((l) => !visitors.has(l.visitorId)),
    stitches: data.stitches.filter(
      (s) => !visitors.has(s.visitorId) && !visitors.has(s.persistentId),
    ),
    customers: data.customers.filter((c) => c.customerId !== customerId),
    payments: data.payments.filter((p) => p.customerId !== customerId),
  };
}

const DIMENSIONS = [
  "channel",
  "source",
  "medium",
  "campaign",
  "referrer",
  "landing_page",
  "page",
  "exit_page",
  "country",
  "device",
  "event",
  "prop:plan",
  "time:hour",
  "time:day",
  "time:week",
];

const filterArb = fc.oneof(
  fc.record({
    dimension: fc.constant("country"),
    op: fc.constantFrom("is", "is_not"),
    values: fc.subarray([...ARB_COUNTRIES, "(none)"], { minLength: 1 }),
  }),
  fc.record({
    dimension: fc.constant("channel"),
    op: fc.constantFrom("is", "is_not"),
    values: fc.subarray(
      ["Direct", "Organic Search", "Email", "Paid Search", "Paid Social", "Referral"],
      {
        minLength: 1,
      },
    ),
  }),
  fc.record({
    dimension: fc.constantFrom("page", "landing_page"),
    op: fc.constant("contains"),
    values: fc.subarray(["pricing", "BLOG", "/"], { minLength: 1 }),
  }),
);

const periodArb = fc
  .tuple(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 4 }))
  .map(([a, b]) => ({
    fromDay: ARB_PERIOD_DAYS[Math.min(a, b)] as string,
    toDay: ARB_PERIOD_DAYS[Math.max(a, b)] as string,
    from: "",
    to: "",
  }));

/** A valid Query request over the arbitraries' window (EUR always given: revenue metrics need it). */
export const queryFieldsArb: fc.Arbitrary<QueryRequestFields> = fc.record({
  siteId: fc.constant(ARB_SITE),
  metrics: fc.uniqueArray(fc.constantFrom(...METRIC_NAMES), { minLength: 1, maxLength: 4 }),
  dimensions: fc.uniqueArray(fc.constantFrom(...DIMENSIONS), { maxLength: 2 }),
  filters: fc.array(filterArb, { maxLength: 2 }),
  period: periodArb,
  compare: fc.constantFrom("", "", "previous_period", "year_over_year"),
  model: fc.constantFrom("", ...ATTRIBUTION_MODELS),
  currency: fc.constant("EUR"),
  orderBy: fc.constant<QueryRequestFields["orderBy"]>([]),
  limit: fc.constantFrom(0, 3, 1000),
  pageToken: fc.constant(""),
});

/**
 * A valid Query request by a payment dimension (currency, customer, days to
 * first payment): payment metrics only; by `currency`, with or without a
 * currency (each row's amounts in its own).
 */
export const paymentQueryFieldsArb: fc.Arbitrary<QueryRequestFields> = fc
  .record({
    metrics: fc.uniqueArray(
      fc.constantFrom(
        "payments",
        "transactions",
        "paying_customers",
        "gross_revenue",
        "refunds",
        "chargebacks",
        "net_revenue",
        "average_order_value",
        "median_days_to_first_payment",
        "median_visits_to_first_payment",
      ),
      { minLength: 1, maxLength: 4 },
    ),
    payment: fc.constantFrom("currency", "customer", "days_to_first_payment"),
    other: fc.constantFrom(undefined, "channel", "landing_page", "time:day"),
    filters: fc.array(
      fc.oneof(
        filterArb,
        fc.record({
          dimension: fc.constantFrom("currency", "days_to_first_payment"),
          op: fc.constantFrom("is", "is_not"),
          values: fc.subarray(["EUR", "USD", "(none)", "0", "1", "2-3"], { minLength: 1 }),
        }),
      ),
      { maxLength: 2 },
    ),
    period: periodArb,
    compare: fc.constantFrom("", "previous_period"),
    model: fc.constantFrom("", ...ATTRIBUTION_MODELS),
    withCurrency: fc.boolean(),
    limit: fc.constantFrom(0, 3),
  })
  .map((r) => ({
    siteId: ARB_SITE,
    metrics: r.metrics,
    dimensions: r.other ? [r.payment, r.other] : [r.payment],
    filters: r.filters,
    period: r.period,
    compare: r.compare,
    model: r.model,
    currency: r.payment === "currency" && !r.withCurrency ? "" : "EUR",
    orderBy: [],
    limit: r.limit,
    pageToken: "",
  }));

/** A valid Funnel request over the arbitraries' window. */
export const funnelFieldsArb: fc.Arbitrary<FunnelRequestFields> = fc.record({
  siteId: fc.constant(ARB_SITE),
  steps: fc.array(
    fc.oneof(
      fc.record({
        kind: fc.constant("page"),
        value: fc.constantFrom(...PATHS),
        filters: fc.constant<QueryRequestFields["filters"]>([]),
        label: fc.constant(""),
      }),
      fc.record({
        kind: fc.constant("page_prefix"),
        value: fc.constantFrom("/blog", "/"),
        filters: fc.constant<QueryRequestFields["filters"]>([]),
        label: fc.constant(""),
      }),
      fc.record({
        kind: fc.constant("event"),
        value: fc.constantFrom("signup", "purchase"),
        filters: fc.constant<QueryRequestFields["filters"]>([]),
        label: fc.constant(""),
      }),
    ),
    { minLength: 2, maxLength: 4 },
  ),
  filters: fc.array(filterArb, { maxLength: 1 }),
  period: periodArb,
  windowSeconds: fc.constantFrom(0n, 600n, 7200n),
  currency: fc.constantFrom("", "EUR"),
  model: fc.constantFrom("", ...ATTRIBUTION_MODELS),
});

/** A site's time zone among {@link ARB_TIME_ZONES}. */
export const timeZoneArb = fc.constantFrom(...ARB_TIME_ZONES);

/** Data and a planned query for it. */
export const queryCaseArb: fc.Arbitrary<{ data: RefData; plan: QueryPlan }> = fc
  .record({ data: analyticsDataArb, fields: queryFieldsArb, timeZone: timeZoneArb })
  .map(({ data, fields, timeZone }) => ({
    data,
    plan: planQuery(fields, { site: { id: ARB_SITE, timeZone } }),
  }));

/**
 * Data and a planned breakdown of visitors, and maybe pageviews and events,
 * by one or two dimensions: the queries whose visitors an engine may count by
 * bitmaps in parts (src/store/duckdb/visitor-count.ts).
 */
export const countQueryCaseArb: fc.Arbitrary<{ data: RefData; plan: QueryPlan }> = fc
  .record({
    data: analyticsDataArb,
    fields: queryFieldsArb,
    counts: fc.subarray(["pageviews", "events"]),
    dimensions: fc.uniqueArray(fc.constantFrom(...DIMENSIONS), { minLength: 1, maxLength: 2 }),
    timeZone: timeZoneArb,
  })
  .map(({ data, fields, counts, dimensions, timeZone }) => ({
    data,
    plan: planQuery(
      { ...fields, metrics: ["visitors", ...counts], dimensions },
      { site: { id: ARB_SITE, timeZone } },
    ),
  }));

/** Data and a planned query by a payment dimension. */
export const paymentQueryCaseArb: fc.Arbitrary<{ data: RefData; plan: QueryPlan }> = fc
  .record({ data: analyticsDataArb, fields: paymentQueryFieldsArb, timeZone: timeZoneArb })
  .map(({ data, fields, timeZone }) => ({
    data,
    plan: planQuery(fields, { site: { id: ARB_SITE, timeZone } }),
  }));

/** Data and a planned funnel for it. */
export const funnelCaseArb: fc.Arbitrary<{ data: RefData; plan: FunnelPlan }> = fc
  .record({ data: analyticsDataArb, fields: funnelFieldsArb, timeZone: timeZoneArb })
  .map(({ data, fields, timeZone }) => ({
    data,
    plan: planFunnel(fields, { site: { id: ARB_SITE, timeZone } }),
  }));

/** The other site of {@link besideAnotherSite}: the feed numbers it before {@link ARB_SITE}. */
export const OTHER_SITE = "site_0";

/** `data` as `siteId`'s: every row moved to that site. */
export function onSite(data: RefData, siteId: string): RefData {
  return {
    sites: data.sites.map((s) => ({ ...s, id: siteId })),
    events: data.events.map((e) => ({ ...e, siteId })),
    identities: data.identities.map((i) => ({ ...i, siteId })),
    stitches: data.stitches.map((s) => ({ ...s, siteId })),
    customers: data.customers.map((c) => ({ ...c, siteId })),
    payments: data.payments.map((p) => ({ ...p, siteId })),
  };
}

/**
 * Cases whose data sits beside another site's ({@link OTHER_SITE}, random
 * too, with the same visitor, customer and payment ids), their events
 * interleaved: an answer for {@link ARB_SITE} that read any of it (by its
 * ids, its visitors' dense numbers or its site number) differs from the
 * reference's, which reads the site's own rows alone.
 */
export function besideAnotherSite<P>(
  cases: fc.Arbitrary<{ data: RefData; plan: P }>,
): fc.Arbitrary<{ data: RefData; plan: P }> {
  return fc.tuple(cases, analyticsDataArb).map(([{ data, plan }, other]) => {
    const o = onSite(other, OTHER_SITE);
    const events: RefEvent[] = [];
    for (let i = 0; i < Math.max(data.events.length, o.events.length); i++) {
      const mine = data.events[i];
      const theirs = o.events[i];
      if (theirs) events.push(theirs);
      if (mine) events.push(mine);
    }
    return {
      plan,
      data: {
        sites: [...o.sites, ...data.sites],
        events,
        identities: [...o.identities, ...data.identities],
        stitches: [...o.stitches, ...data.stitches],
        customers: [...o.customers, ...data.customers],
        payments: [...o.payments, ...data.payments],
      },
    };
  });
}
