/**
 * The analytics engine answers from the DuckDB store its feed fills: a small
 * hand-made journey sent through the HTTP API, the feed drained on an
 * explicit signal (`feed.runOnce()` resolves once the log is applied), then
 * plans asked of the engine with exact answers.
 */
import { describe, expect, it } from "vitest";
import type { MetricName, QueryPlan } from "../../src/domain/analytics/query-plan.js";
import type { Analytics } from "../../src/services.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { A, MIN, sendJourney, T0 } from "../helpers/query-journey.js";
import { createTenant, postJson, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();

function analytics(): Analytics {
  const a = ctx.server.app.analytics;
  if (!a) throw new Error("the test server owns no analytics store");
  return a;
}

function plan(overrides: Partial<QueryPlan>): QueryPlan {
  return {
    siteId: ctx.siteId,
    timeZone: "UTC",
    metrics: ["visitors"],
    dimensions: [],
    filters: [],
    period: { from: T0 - 60 * MIN, to: TEST_NOW + MIN },
    model: "first_touch",
    orderBy: [{ field: "visitors", desc: true }],
    limit: 100,
    offset: 0,
    ...overrides,
  };
}

const count = (value: number) => ({ kind: "count", value });
const number = (value: number) => ({ kind: "number", value });
const usd = (minor: number) => ({ kind: "money", currency: "USD", minor: BigInt(minor) });

describe("the analytics engine over DuckDB", () => {
  it("answers traffic and revenue metrics of a journey exactly once the feed has applied it", async () => {
    await sendJourney(ctx.url, ctx.siteId, ctx.key);
    await analytics().feed.runOnce();

    const traffic: MetricName[] = [
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
    const totals = await analytics().engine.query(plan({ metrics: traffic }));
    expect(totals).toEqual({
      rows: [{ dimensions: [], metrics: totals.totals }],
      totals: [
        count(2),
        count(3),
        count(4),
        count(5),
        number(1.33),
        number(66.67),
        number(200),
        count(1),
        number(50),
      ],
      more: false,
    });

    const byChannel = await analytics().engine.query(
      plan({
        metrics: ["visitors", "visits", "net_revenue", "gross_revenue", "refunds", "payments"],
        dimensions: ["channel"],
        currency: "USD",
        orderBy: [{ field: "net_revenue", desc: true }],
      }),
    );
    expect(byChannel.rows).toEqual([
      {
        dimensions: ["Email"],
        metrics: [count(1), count(1), usd(2499), usd(2999), usd(500), count(1)],
      },
      { dimensions: ["Direct"], metrics: [count(1), count(1), usd(0), usd(0), usd(0), count(0)] },
      {
        dimensions: ["Organic Search"],
        metrics: [count(1), count(1), usd(0), usd(0), usd(0), count(0)],
      },
    ]);
    expect(byChannel.totals).toEqual([
      count(2),
      count(3),
      usd(2499),
      usd(2999),
      usd(500),
      count(1),
    ]);

    const pricing = await analytics().engine.query(
      plan({
        metrics: ["visitors", "pageviews"],
        dimensions: ["page"],
        filters: [{ dimension: "page", op: "contains", values: ["PRIC"] }],
      }),
    );
    expect(pricing.rows).toEqual([
      { dimensions: ["https://example.com/pricing"], metrics: [count(2), count(2)] },
    ]);

    const funnel = await analytics().engine.funnel({
      siteId: ctx.siteId,
      timeZone: "UTC",
      steps: [
        { kind: "page", value: "https://example.com/", filters: [], label: "home" },
        { kind: "page", value: "https://example.com/pricing", filters: [], label: "pricing" },
        { kind: "event", value: "signup", filters: [], label: "signup" },
      ],
      filters: [],
      period: { from: T0 - 60 * MIN, to: TEST_NOW + MIN },
      windowMs: 2 * 60 * MIN,
      model: "first_touch",
    });
    expect(funnel).toEqual({
      steps: [
        { label: "home", visitors: 2, conversionFromPrevious: 100, conversionOverall: 100 },
        {
          label: "pricing",
          visitors: 2,
          conversionFromPrevious: 100,
          conversionOverall: 100,
          medianSecondsFromPrevious: 1500,
        },
        {
          label: "signup",
          visitors: 1,
          conversionFromPrevious: 50,
          conversionOverall: 50,
          medianSecondsFromPrevious: 300,
        },
      ],
    });
  });

  it("splits a payment across its customer's touches by model, to the unit", async () => {
    const other = await createTenant(ctx.server);
    const C = "visitor-cccc-000003";
    const res = await postJson(
      `${ctx.url}/api/v1/events`,
      {
        s: other.siteId,
        b: [
          {
            e: "pageview",
            u: "https://example.com/",
            r: "https://www.google.com/",
            vid: C,
            ts: T0,
          },
          {
            e: "pageview",
            u: "https://example.com/?utm_source=news&utm_medium=email",
            vid: C,
            ts: T0 + 35 * MIN,
          },
          { e: "pageview", u: "https://example.com/", vid: C, ts: T0 + 40 * MIN },
        ],
      },
      { key: other.key, headers: { "user-agent": BROWSER_UA } },
    );
    expect(res.status).toBe(204);
    const pay = await postJson(
      `${ctx.url}/api/v1/payments`,
      {
        payment_id: "pay_c",
        customer: { id: "cus_c", visitor_id: C },
        amount: 10.01,
        currency: "USD",
        kind: "charge",
        paid_at: new Date(T0 + 45 * MIN).toISOString(),
      },
      { key: other.key },
    );
    expect(pay.status).toBe(200);
    await analytics().feed.runOnce();
    const byModel = async (model: QueryPlan["model"]) => {
      const r = await analytics().engine.query(
        plan({
          siteId: other.siteId,
          metrics: ["net_revenue", "payments"],
          dimensions: ["channel"],
          currency: "USD",
          model,
          orderBy: [{ field: "channel", desc: false }],
        }),
      );
      return [r.rows.map((x) => [x.dimensions[0], x.metrics]), r.totals];
    };
    // Revenue metrics alone: a row per value that has revenue.
    expect(await byModel("first_touch")).toEqual([
      [["Organic Search", [usd(1001), count(1)]]],
      [usd(1001), count(1)],
    ]);
    // Two touches (two visits: at 0, then 35-40 min), 10.01 split 501 / 500 (ties to the earlier).
    expect(await byModel("linear")).toEqual([
      [
        ["Email", [usd(500), count(1)]],
        ["Organic Search", [usd(501), count(1)]],
      ],
      [usd(1001), count(1)],
    ]);
    expect(await byModel("last_touch")).toEqual([
      [["Email", [usd(1001), count(1)]]],
      [usd(1001), count(1)],
    ]);
  });

  it("compares a time dimension's bucket with the bucket at the same position of the comparison", async () => {
    const res = await postJson(
      `${ctx.url}/api/v1/payments`,
      {
        payment_id: "pay_yesterday",
        customer: { id: "cus_a", visitor_id: A },
        amount: 7,
        currency: "USD",
        kind: "charge",
        paid_at: "2026-03-10T12:00:00Z",
      },
      { key: ctx.key },
    );
    expect(res.status).toBe(200);
    await analytics().feed.runOnce();
    const day = Date.UTC(2026, 2, 11);
    const r = await analytics().engine.query(
      plan({
        metrics: ["net_revenue"],
        dimensions: ["time:day"],
        currency: "USD",
        period: { from: day, to: day + 86_400_000 },
        comparison: { from: day - 86_400_000, to: day },
        orderBy: [{ field: "time:day", desc: false }],
      }),
    );
    expect(r.rows).toEqual([
      { dimensions: ["2026-03-11"], metrics: [usd(2499)], comparison: [usd(700)] },
    ]);
    expect([r.totals, r.comparisonTotals]).toEqual([[usd(2499)], [usd(700)]]);
  });
});
