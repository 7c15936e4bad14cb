/**
 * The reference model of Query and Funnel (test/helpers/analytics-reference.ts)
 * on small examples computed by hand, so that it can be trusted as the oracle
 * the engine is checked against: each traffic metric, filters, a time
 * dimension across midnight in the site's zone, a comparison, each
 * attribution model over payments, refunds, stitched visitors and medians,
 * ordering and pages, and a funnel.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  planFunnel,
  planQuery,
  type QueryRequestFields,
} from "../../src/domain/analytics/plan-query.js";
import type { MetricValue, QueryPlan } from "../../src/domain/analytics/query-plan.js";
import { eraseCustomer, funnelCaseArb, queryCaseArb } from "../helpers/analytics-arbitraries.js";
import {
  type RefData,
  type RefEvent,
  referenceFunnel,
  referenceQuery,
} from "../helpers/analytics-reference.js";

const SITE = "site_1";
const T0 = Date.parse("2026-03-01T10:00:00Z");
const MIN = 60_000;
const HOUR = 60 * MIN;

function ev(
  visitorId: string,
  ts: number,
  name: string,
  path: string,
  extra: Partial<RefEvent> = {},
): RefEvent {
  return { siteId: SITE, visitorId, ts, name, url: `https://example.com${path}`, ...extra };
}

const email = { utmSource: "news", utmMedium: "email" };
const google = { referrerHost: "www.google.com" };

/** A: an email visit of 3 events then a direct bounce; B: a Google bounce; C: only $identify. */
const TRAFFIC: RefData = {
  sites: [{ id: SITE, hostnames: ["example.com"] }],
  events: [
    ev("A", T0, "pageview", "/a?utm_source=news&utm_medium=email", { ...email, country: "FR" }),
    ev("A", T0 + MIN, "pageview", "/b", { referrerHost: "example.com", country: "FR" }),
    ev("A", T0 + 2 * MIN, "signup", "/b", { country: "FR", props: { plan: "pro" } }),
    ev("A", T0 + 2 * HOUR, "pageview", "/a", { country: "FR" }),
    ev("B", T0 + 10 * MIN, "pageview", "/a", { ...google, country: "US" }),
    ev("C", T0 + 5 * MIN, "$identify", "/a", { userId: "u1" }),
  ],
  identities: [{ siteId: SITE, visitorId: "C", userId: "u1" }],
  stitches: [],
  customers: [],
  payments: [],
};

function request(over: Partial<QueryRequestFields>): QueryRequestFields {
  return {
    siteId: SITE,
    metrics: ["visitors"],
    dimensions: [],
    filters: [],
    period: { fromDay: "2026-03-01", toDay: "2026-03-01", from: "", to: "" },
    compare: "",
    model: "",
    currency: "",
    orderBy: [],
    limit: 0,
    pageToken: "",
    ...over,
  };
}

const ALL_TRAFFIC = [
  "visitors",
  "visits",
  "pageviews",
  "events",
  "views_per_visit",
  "bounce_rate",
  "visit_duration",
  "conversions",
  "conversion_rate",
];

const c = (value: number): MetricValue => ({ kind: "count", value });
const n = (value: number): MetricValue => ({ kind: "number", value });
const eur = (minor: number): MetricValue => ({
  kind: "money",
  currency: "EUR",
  minor: BigInt(minor),
});
const NONE: MetricValue = { kind: "none" };

function run(data: RefData, over: Partial<QueryRequestFields>, timeZone?: string) {
  return referenceQuery(
    data,
    planQuery(request(over), { site: timeZone ? { id: SITE, timeZone } : { id: SITE } }),
  );
}

describe("reference: traffic", () => {
  it("counts every traffic metric of the period ($identify is no visit and no event)", () => {
    const r = run(TRAFFIC, { metrics: ALL_TRAFFIC });
    // 2 visitors, 3 visits (A's two, B's), 4 pageviews, 5 events; durations 120, 0, 0 s;
    // 2 of 3 visits bounce; A converted (signup).
    expect(r.totals).toEqual([c(2), c(3), c(4), c(5), n(1.33), n(66.67), n(40), c(1), n(50)]);
    expect(r.rows).toEqual([{ dimensions: [], metrics: r.totals }]);
    expect(r.more).toBe(false);
  });

  it("splits by channel: a visit's events all count under the visit's touch", () => {
    const r = run(TRAFFIC, { metrics: ["visitors", "visits", "events"], dimensions: ["channel"] });
    expect(r.rows).toEqual([
      { dimensions: ["Direct"], metrics: [c(1), c(1), c(1)] },
      { dimensions: ["Email"], metrics: [c(1), c(1), c(3)] },
      { dimensions: ["Organic Search"], metrics: [c(1), c(1), c(1)] },
    ]);
  });

  it("splits by page, landing page, exit page and event", () => {
    expect(run(TRAFFIC, { metrics: ["events", "visitors"], dimensions: ["page"] }).rows).toEqual([
      { dimensions: ["https://example.com/a"], metrics: [c(3), c(2)] },
      { dimensions: ["https://example.com/b"], metrics: [c(2), c(1)] },
    ]);
    expect(run(TRAFFIC, { metrics: ["visits"], dimensions: ["exit_page"] }).rows).toEqual([
      { dimensions: ["https://example.com/a"], metrics: [c(2)] },
      { dimensions: ["https://example.com/b"], metrics: [c(1)] },
    ]);
    expect(run(TRAFFIC, { metrics: ["visits"], dimensions: ["landing_page"] }).rows).toEqual([
      { dimensions: ["https://example.com/a"], metrics: [c(3)] },
    ]);
    expect(
      run(TRAFFIC, { metrics: ["events", "conversions"], dimensions: ["event", "prop:plan"] }).rows,
    ).toEqual([
      { dimensions: ["pageview", "(none)"], metrics: [c(4), c(0)] },
      { dimensions: ["signup", "pro"], metrics: [c(1), c(1)] },
    ]);
  });

  it("applies filters: is, is_not with (none), contains case-insensitively", () => {
    expect(
      run(TRAFFIC, {
        metrics: ["visitors", "events", "pageviews", "visits"],
        filters: [{ dimension: "page", op: "is", values: ["https://example.com/b"] }],
      }).totals,
    ).toEqual([c(1), c(2), c(1), c(1)]);
    expect(
      run(TRAFFIC, {
        metrics: ["visitors"],
        filters: [{ dimension: "source", op: "contains", values: ["GOO"] }],
      }).totals,
    ).toEqual([c(1)]);
    expect(
      run(TRAFFIC, {
        metrics: ["events"],
        filters: [{ dimension: "prop:plan", op: "is_not", values: ["(none)"] }],
      }).totals,
    ).toEqual([c(1)]);
    expect(
      run(TRAFFIC, {
        metrics: ["visitors"],
        filters: [{ dimension: "country", op: "is_not", values: ["FR"] }],
      }).totals,
    ).toEqual([c(1)]);
  });

  it("reads time buckets in the site's zone: a visit across midnight in Kolkata is in both days", () => {
    const data: RefData = {
      ...TRAFFIC,
      events: [
        ev("E", Date.parse("2026-03-01T18:20:00Z"), "pageview", "/x"), // 23:50 IST
        ev("E", Date.parse("2026-03-01T18:40:00Z"), "pageview", "/y"), // 00:10 IST, same visit
      ],
    };
    const r = run(
      data,
      {
        metrics: ["visits", "pageviews"],
        dimensions: ["time:day"],
        period: { fromDay: "2026-03-01", toDay: "2026-03-02", from: "", to: "" },
      },
      "Asia/Kolkata",
    );
    expect(r.rows).toEqual([
      { dimensions: ["2026-03-01"], metrics: [c(1), c(1)] },
      { dimensions: ["2026-03-02"], metrics: [c(1), c(1)] },
    ]);
    expect(r.totals).toEqual([c(1), c(2)]);
  });

  it("compares with the previous period, row by row and bucket by position", () => {
    const data: RefData = {
      ...TRAFFIC,
      events: [
        ...TRAFFIC.events,
        ev("F", Date.parse("2026-03-02T09:00:00Z"), "pageview", "/a", google),
        ev("G", Date.parse("2026-03-02T09:00:00Z"), "pageview", "/a", google),
      ],
    };
    const r = run(data, {
      metrics: ["visitors"],
      dimensions: ["channel"],
      period: { fromDay: "2026-03-02", toDay: "2026-03-02", from: "", to: "" },
      compare: "previous_period",
    });
    expect(r.rows).toEqual([
      { dimensions: ["Organic Search"], metrics: [c(2)], comparison: [c(1)] },
    ]);
    expect([r.totals, r.comparisonTotals]).toEqual([[c(2)], [c(2)]]);
    const byDay = run(data, {
      metrics: ["visitors"],
      dimensions: ["time:day"],
      period: { fromDay: "2026-03-02", toDay: "2026-03-02", from: "", to: "" },
      compare: "previous_period",
    });
    expect(byDay.rows).toEqual([
      { dimensions: ["2026-03-02"], metrics: [c(2)], comparison: [c(2)] },
    ]);
  });

  it("orders by the first metric descending then the dimensions, and pages by offset", () => {
    const data: RefData = {
      ...TRAFFIC,
      events: [...TRAFFIC.events, ev("H", T0, "pageview", "/a", google)],
    };
    const first = run(data, { metrics: ["visitors"], dimensions: ["channel"], limit: 2 });
    expect(first.rows.map((r) => r.dimensions[0])).toEqual(["Organic Search", "Direct"]);
    expect(first.more).toBe(true);
    const asc = run(data, {
      metrics: ["visitors"],
      dimensions: ["channel"],
      orderBy: [{ field: "channel", desc: true }],
    });
    expect(asc.rows.map((r) => r.dimensions[0])).toEqual(["Organic Search", "Email", "Direct"]);
  });
});

/**
 * cust1 (visitor A: an email visit at T0, a direct one at T0+2h) pays 1000 EUR at T0+3h and is
 * refunded 300 at T0+4h; cust2 (daily id d1 stitched to p:x: Google on 28 Feb, direct at
 * T0+30min, email at T0+5h) pays 1001 EUR at T0+6h. A USD charge and a pending one do not count.
 */
const REVENUE: RefData = {
  sites: [{ id: SITE, hostnames: ["example.com"] }],
  events: [
    ev("A", T0, "pageview", "/a?utm_source=news&utm_medium=email", email),
    ev("A", T0 + 2 * HOUR, "pageview", "/a"),
    ev("p:x", Date.parse("2026-02-28T10:00:00Z"), "pageview", "/", google),
    ev("d1", T0 + 30 * MIN, "pageview", "/d"),
    ev("p:x", T0 + 5 * HOUR, "pageview", "/e?utm_source=news&utm_medium=email", email),
  ],
  identities: [],
  stitches: [{ siteId: SITE, visitorId: "d1", persistentId: "p:x" }],
  customers: [
    { siteId: SITE, customerId: "cust1", visitorIds: ["A"] },
    { siteId: SITE, customerId: "cust2", visitorIds: ["d1"] },
  ],
  payments: [
    payment("p1", "cust1", "charge", 1000, T0 + 3 * HOUR, "Email", "A", T0),
    payment("p2", "cust1", "refund", 300, T0 + 4 * HOUR, "Email", "A", T0),
    payment(
      "p5",
      "cust2",
      "charge",
      1001,
      T0 + 6 * HOUR,
      "Organic Search",
      "p:x",
      Date.parse("2026-02-28T10:00:00Z"),
    ),
    {
      ...payment("p6", "cust2", "charge", 500, T0 + 7 * HOUR, "Organic Search", "p:x", T0),
      currency: "USD",
    },
    {
      ...payment("p7", "cust1", "charge", 700, T0 + 7 * HOUR, "Email", "A", T0),
      status: "pending",
    },
  ],
};

function payment(
  paymentId: string,
  customerId: string,
  kind: "charge" | "refund" | "chargeback",
  amountMinor: number,
  paidAt: number,
  channel: string,
  visitorId: string,
  touchedAt: number,
): RefData["payments"][number] {
  return {
    siteId: SITE,
    paymentId,
    customerId,
    kind,
    status: "succeeded",
    amountMinor,
    currency: "EUR",
    paidAt,
    attribution: { channel, landingPage: "https://example.com/a", visitorId, touchedAt },
  };
}

const MONEY = ["gross_revenue", "refunds", "net_revenue", "payments", "paying_customers"];

function revenueBy(model: string) {
  return run(REVENUE, { metrics: MONEY, dimensions: ["channel"], model, currency: "EUR" }).rows.map(
    (r) => [r.dimensions[0], ...r.metrics],
  );
}

describe("reference: revenue and models", () => {
  it("first_touch counts each payment under its stored attribution", () => {
    expect(revenueBy("first_touch")).toEqual([
      ["Organic Search", eur(1001), eur(0), eur(1001), c(1), c(1)],
      ["Email", eur(1000), eur(300), eur(700), c(1), c(1)],
    ]);
  });

  it("last_touch credits the last visit before each payment", () => {
    expect(revenueBy("last_touch")).toEqual([
      ["Email", eur(1001), eur(0), eur(1001), c(1), c(1)],
      ["Direct", eur(1000), eur(300), eur(700), c(1), c(1)],
    ]);
  });

  it("last_non_direct skips direct visits", () => {
    expect(revenueBy("last_non_direct")).toEqual([
      ["Email", eur(2001), eur(300), eur(1701), c(2), c(2)],
    ]);
  });

  it("linear splits across the stitched visitor's visits, the odd unit to the earliest", () => {
    // p1: 500/500; p2: 150/150; p5 over Google, direct, email: 334/334/333.
    expect(revenueBy("linear")).toEqual([
      ["Direct", eur(834), eur(150), eur(684), c(2), c(2)],
      ["Email", eur(833), eur(150), eur(683), c(2), c(2)],
      ["Organic Search", eur(334), eur(0), eur(334), c(1), c(1)],
    ]);
  });

  it("position_based gives 40/20/40 over three touches and 50/50 over two", () => {
    // p5: 400.4/200.2/400.4 → 400/200/400 and the unit left to the first (ties: earlier).
    expect(revenueBy("position_based")).toEqual([
      ["Email", eur(900), eur(150), eur(750), c(2), c(2)],
      ["Direct", eur(700), eur(150), eur(550), c(2), c(2)],
      ["Organic Search", eur(401), eur(0), eur(401), c(1), c(1)],
    ]);
  });

  it("takes the touches of identified and stitched visitors (either id), and only visits before paid_at", () => {
    const data: RefData = {
      ...REVENUE,
      events: [
        ev("u-v", T0, "pageview", "/", google),
        ev("d9", T0 + HOUR, "pageview", "/m?utm_source=news&utm_medium=email", email),
        ev("p:y", T0 + 2 * HOUR, "pageview", "/"),
        ev("p:y", T0 + 4 * HOUR, "pageview", "/", google),
      ],
      identities: [{ siteId: SITE, visitorId: "u-v", userId: "u9" }],
      stitches: [{ siteId: SITE, visitorId: "d9", persistentId: "p:y" }],
      customers: [{ siteId: SITE, customerId: "cust3", userId: "u9", visitorIds: ["p:y"] }],
      payments: [
        payment("p10", "cust3", "charge", 900, T0 + 3 * HOUR, "Organic Search", "u-v", T0),
      ],
    };
    const r = run(data, {
      metrics: ["net_revenue"],
      dimensions: ["channel"],
      model: "linear",
      currency: "EUR",
    });
    expect(r.rows).toEqual([
      { dimensions: ["Direct"], metrics: [eur(300)] },
      { dimensions: ["Email"], metrics: [eur(300)] },
      { dimensions: ["Organic Search"], metrics: [eur(300)] },
    ]);
  });

  it("totals: per-visitor revenue, average order value and the medians to first payment", () => {
    const r = run(REVENUE, {
      metrics: [
        "net_revenue",
        "visitors",
        "revenue_per_visitor",
        "average_order_value",
        "median_days_to_first_payment",
        "median_visits_to_first_payment",
      ],
      model: "linear",
      currency: "EUR",
    });
    // 1701 over 3 visitors (A, d1, p:x) = 567; 2001 over 2 charges = 1000.5 → 1001;
    // days: 3h = 0.125 and 1 d 6 h = 1.25 → 0.6875; visits: 2 and 3 → 2.5.
    expect(r.totals).toEqual([eur(1701), c(3), eur(567), eur(1001), n(0.69), n(2.5)]);
  });

  it("puts a payment with no touch in one unattributed (none) row and has no average without charges", () => {
    const data: RefData = {
      ...REVENUE,
      customers: [{ siteId: SITE, customerId: "cust9", visitorIds: [] }],
      payments: [
        {
          ...payment("p9", "cust9", "chargeback", 250, T0, "Direct", "A", T0),
          attribution: undefined,
        },
      ],
    };
    const r = run(data, {
      metrics: ["chargebacks", "net_revenue", "average_order_value"],
      dimensions: ["channel"],
      model: "linear",
      currency: "EUR",
    });
    expect(r.rows).toEqual([{ dimensions: ["(none)"], metrics: [eur(250), eur(-250), NONE] }]);
  });
});

describe("reference: funnel", () => {
  const plan = (over: { windowSeconds?: bigint; currency?: string; model?: string } = {}) =>
    planFunnel(
      {
        siteId: SITE,
        steps: [
          { kind: "page", value: "/a", filters: [], label: "" },
          { kind: "event", value: "signup", filters: [], label: "Signed up" },
        ],
        filters: [],
        period: { fromDay: "2026-03-01", toDay: "2026-03-01", from: "", to: "" },
        windowSeconds: over.windowSeconds ?? 0n,
        currency: over.currency ?? "",
        model: over.model ?? "",
      },
      { site: { id: SITE } },
    );

  it("counts visitors reaching each step in order, conversions and the median time between steps", () => {
    expect(referenceFunnel(TRAFFIC, plan())).toEqual({
      steps: [
        { label: "/a", visitors: 2, conversionFromPrevious: 100, conversionOverall: 100 },
        {
          label: "Signed up",
          visitors: 1,
          conversionFromPrevious: 50,
          conversionOverall: 50,
          medianSecondsFromPrevious: 120,
        },
      ],
    });
  });

  it("drops a step reached after the window", () => {
    expect(referenceFunnel(TRAFFIC, plan({ windowSeconds: 60n })).steps[1]).toEqual({
      label: "Signed up",
      visitors: 0,
      conversionFromPrevious: 0,
      conversionOverall: 0,
    });
  });

  it("sums the net revenue credited to the visitors who completed it", () => {
    const data: RefData = {
      ...REVENUE,
      events: [...REVENUE.events, ev("A", T0 + 2 * HOUR + MIN, "signup", "/a")],
    };
    // A completes (/a at T0+2h, signup a minute later); linear credits A with all of p1 and p2.
    expect(
      referenceFunnel(data, plan({ currency: "EUR", model: "linear" })).completersNetMinor,
    ).toBe(700n);
    expect(referenceFunnel(data, plan({ currency: "EUR" })).completersNetMinor).toBe(700n);
  });
});

describe("reference: properties on random data", () => {
  const netOf = (payments: RefData["payments"]) =>
    payments
      .filter((p) => p.status === "succeeded" && p.currency === "EUR")
      .reduce((a, p) => a + BigInt(p.kind === "charge" ? p.amountMinor : -p.amountMinor), 0n);
  const inPeriod = (data: RefData, plan: { period: { from: number; to: number } }) =>
    data.payments.filter((p) => p.paidAt >= plan.period.from && p.paidAt < plan.period.to);
  const minor = (v: MetricValue | undefined) => (v?.kind === "money" ? v.minor : undefined);

  it("every model splits each counted payment exactly: totals and the sum of rows equal the payments' net", () => {
    fc.assert(
      fc.property(queryCaseArb, ({ data, plan }) => {
        const p: QueryPlan = {
          ...plan,
          metrics: ["net_revenue"],
          dimensions: plan.dimensions.slice(0, 1),
          filters: [],
          currency: "EUR",
          limit: 1000,
          offset: 0,
          orderBy: [
            { field: "net_revenue", desc: true },
            ...plan.dimensions.slice(0, 1).map((field) => ({ field, desc: false })),
          ],
        };
        const r = referenceQuery(data, p);
        const expected = netOf(inPeriod(data, p));
        expect(minor(r.totals[0])).toBe(expected);
        expect(r.rows.reduce((a, row) => a + (minor(row.metrics[0]) ?? 0n), 0n)).toBe(expected);
      }),
      { numRuns: 150 },
    );
  });

  it("erasing a customer takes exactly its payments out of the first-touch net", () => {
    fc.assert(
      fc.property(queryCaseArb, ({ data, plan }) => {
        fc.pre(data.customers.length > 0);
        const customerId = (data.customers[0] as RefData["customers"][number]).customerId;
        const p: QueryPlan = {
          ...plan,
          metrics: ["net_revenue"],
          dimensions: [],
          filters: [],
          model: "first_touch",
          currency: "EUR",
          orderBy: [{ field: "net_revenue", desc: true }],
        };
        const before = minor(referenceQuery(data, p).totals[0]) as bigint;
        const after = minor(referenceQuery(eraseCustomer(data, customerId), p).totals[0]) as bigint;
        expect(before - after).toBe(
          netOf(inPeriod(data, p).filter((x) => x.customerId === customerId)),
        );
      }),
      { numRuns: 100 },
    );
  });

  it("answers every planned query: one value per metric, rows within the limit, visitors never above events", () => {
    fc.assert(
      fc.property(queryCaseArb, ({ data, plan }) => {
        const r = referenceQuery(data, plan);
        expect(r.totals).toHaveLength(plan.metrics.length);
        expect(r.rows.length).toBeLessThanOrEqual(plan.limit);
        for (const row of r.rows) {
          expect(row.dimensions).toHaveLength(plan.dimensions.length);
          expect(row.metrics).toHaveLength(plan.metrics.length);
          expect(row.comparison === undefined).toBe(plan.comparison === undefined);
        }
        const t = referenceQuery(data, {
          ...plan,
          metrics: ["visitors", "visits", "events"],
          orderBy: [{ field: "visitors", desc: true }],
        }).totals.map((v) => (v.kind === "count" ? v.value : -1));
        expect(t[0]).toBeLessThanOrEqual(t[1] as number);
        expect(t[1]).toBeLessThanOrEqual(t[2] as number);
      }),
      { numRuns: 100 },
    );
  });

  it("a funnel's steps never gain visitors, and its rates stay within 0–100", () => {
    fc.assert(
      fc.property(funnelCaseArb, ({ data, plan }) => {
        const r = referenceFunnel(data, plan);
        r.steps.forEach((s, i) => {
          if (i > 0)
            expect(s.visitors).toBeLessThanOrEqual(
              (r.steps[i - 1] as { visitors: number }).visitors,
            );
          for (const x of [s.conversionFromPrevious, s.conversionOverall]) {
            expect(x).toBeGreaterThanOrEqual(0);
            expect(x).toBeLessThanOrEqual(100);
          }
        });
        expect(r.completersNetMinor === undefined).toBe(plan.currency === undefined);
      }),
      { numRuns: 100 },
    );
  });
});
