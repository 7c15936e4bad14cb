/**
 * The pure parts of SiteOverview (the days of a period, the top lists, the
 * period's checks) and its one seam: every cut from the engine's plans
 * (as the engine's fixed reports, never Query's slots), unavailable without an engine.
 */
import { describe, expect, it } from "vitest";
import type {
  AnalyticsEngine,
  QueryPlan,
  QueryResult,
} from "../../../src/domain/analytics/query-plan.js";
import { errors } from "../../../src/domain/errors.js";
import {
  buildSiteOverview,
  daysOf,
  overviewPeriod,
  overviewTrafficPlan,
  TOP_ENTRIES,
  topLists,
} from "../../../src/domain/site-overview.js";
import type { DimensionNet, NewVisitorCount, Store } from "../../../src/domain/store/store.js";

const DAY = 86_400_000;
const T = Date.UTC(2026, 2, 9);

const net = (value: string, netMinor: bigint, currency = "USD"): DimensionNet => ({
  value,
  currency,
  netMinor,
});
const visitors = (source: string | undefined, n: number): NewVisitorCount => ({
  channel: "Email",
  ...(source === undefined ? {} : { source }),
  landingPage: "https://example.com/",
  visitors: n,
});

describe("daysOf", () => {
  it("lists every UTC day a period touches, partial days included", () => {
    expect(daysOf(T, T + 3 * DAY)).toEqual(["2026-03-09", "2026-03-10", "2026-03-11"]);
    expect(daysOf(T + 1, T + DAY + 1)).toEqual(["2026-03-09", "2026-03-10"]);
    expect(daysOf(T, T + 1)).toEqual(["2026-03-09"]);
  });
});

describe("topLists", () => {
  it("ranks by new visitors, then value; entries without the dimension are left out", () => {
    const lists = topLists(
      "source",
      [
        visitors("b", 2),
        visitors("a", 2),
        visitors("c", 5),
        visitors(undefined, 9),
        visitors("a", 1),
      ],
      [],
    );
    expect(lists.byVisitors.map((e) => [e.value, e.newVisitors])).toEqual([
      ["c", 5],
      ["a", 3],
      ["b", 2],
    ]);
    expect(lists.byRevenue).toEqual([]);
  });

  it("ranks by net revenue within each currency, never adding two currencies", () => {
    const lists = topLists(
      "source",
      [visitors("a", 1)],
      [net("a", 900n), net("a", 50n), net("b", 1999n), net("a", 5n, "EUR")],
    );
    expect(
      lists.byRevenue.map((e) => [
        e.value,
        e.newVisitors,
        e.net.map((m) => `${m.minor} ${m.currency}`),
      ]),
    ).toEqual([
      ["a", 1, ["5 EUR"]],
      ["b", 0, ["1999 USD"]],
      ["a", 1, ["950 USD"]],
    ]);
    expect(lists.byVisitors[0]?.net).toEqual([
      { currency: "EUR", minor: 5n },
      { currency: "USD", minor: 950n },
    ]);
  });

  it(`keeps ${TOP_ENTRIES} entries per list (per currency by revenue)`, () => {
    const many = Array.from({ length: 15 }, (_, i) => `s${String(i).padStart(2, "0")}`);
    const lists = topLists(
      "source",
      many.map((s, i) => visitors(s, i + 1)),
      many.flatMap((s, i) => [net(s, BigInt(i + 1)), net(s, BigInt(i + 1), "EUR")]),
    );
    expect(lists.byVisitors.map((e) => e.value)).toEqual(many.slice(5).reverse());
    expect(lists.byRevenue).toHaveLength(2 * TOP_ENTRIES);
  });
});

describe("overviewPeriod", () => {
  const parse = (_name: string, value: string) => Date.parse(value);
  it("needs both ends, in order, at most 366 days apart", () => {
    expect(
      overviewPeriod(parse, { from: "2026-03-01T00:00:00Z", to: "2027-03-02T00:00:00Z" }),
    ).toEqual({
      from: Date.UTC(2026, 2, 1),
      to: Date.UTC(2027, 2, 2),
    });
    const fails = (from: string, to: string) => {
      try {
        overviewPeriod(parse, { from, to });
        return undefined;
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(fails("", "2026-03-02T00:00:00Z")).toBe("from: required");
    expect(fails("2026-03-02T00:00:00Z", "")).toBe("to: required");
    expect(fails("2026-03-02T00:00:00Z", "2026-03-02T00:00:00Z")).toBe("to: must be after from");
    expect(fails("2026-03-01T00:00:00Z", "2027-03-02T00:00:01Z")).toBe(
      "to: must be at most 366 days after from",
    );
  });
});

describe("buildSiteOverview's seam", () => {
  /** A store with no recent payments: every cut comes from the engine. */
  const store = { recentPayments: async () => [] } as unknown as Store;
  const count = (value: number) => ({ kind: "count" as const, value });
  const money = (minor: bigint) => ({ kind: "money" as const, currency: "EUR", minor });
  /** The engine's answer to each of the overview's plans, by its first metric. */
  const answers: Record<string, QueryResult> = {
    visitors: {
      rows: [{ dimensions: ["2026-03-10"], metrics: [count(3), count(5)] }],
      totals: [],
      more: false,
    },
    new_visitors: {
      rows: [
        {
          dimensions: ["Email", "newsletter", "(none)", "https://example.com/"],
          metrics: [count(2)],
        },
      ],
      totals: [],
      more: false,
    },
    net_revenue: {
      rows: [
        {
          dimensions: ["2026-03-10", "EUR", "newsletter", "(none)", "https://example.com/"],
          metrics: [money(900n)],
        },
        {
          dimensions: ["2026-03-10", "EUR", "(none)", "(none)", "(none)"],
          metrics: [money(100n)],
        },
      ],
      totals: [],
      more: false,
    },
    gross_revenue: {
      rows: [
        {
          dimensions: ["Email", "EUR"],
          metrics: [money(1000n), money(100n), money(0n), money(900n), count(3), count(2)],
        },
        {
          dimensions: ["(none)", "EUR"],
          metrics: [money(100n), money(0n), money(0n), money(100n), count(1), count(1)],
        },
      ],
      totals: [],
      more: false,
    },
  };
  const answerOf = (plan: QueryPlan) =>
    Promise.resolve(answers[plan.metrics[0] as string] as QueryResult);
  /** An engine whose fixed reports answer by `report`; Query's slots are always full. */
  const engineWith = (asked: QueryPlan[], report: (plan: QueryPlan) => Promise<QueryResult>) =>
    ({
      query: () => Promise.reject(errors.tooManyQueries()),
      report: (plan: QueryPlan) => {
        asked.push(plan);
        return report(plan);
      },
      funnel: () => Promise.reject(new Error("not used")),
    }) as unknown as AnalyticsEngine;
  const days = (v: Awaited<ReturnType<typeof buildSiteOverview>>) =>
    v.days.map((d) => [d.day, d.visitors, d.pageviews]);

  it("asks the engine one plan per cut, first touch in UTC, and reads them back", async () => {
    const asked: QueryPlan[] = [];
    const view = await buildSiteOverview(
      store,
      "site_1",
      T,
      T + 2 * DAY,
      engineWith(asked, answerOf),
    );
    expect(asked[0]).toEqual(overviewTrafficPlan("site_1", T, T + 2 * DAY));
    expect(asked[0]).toMatchObject({
      timeZone: "UTC",
      metrics: ["visitors", "pageviews"],
      dimensions: ["time:day"],
      filters: [],
      period: { from: T, to: T + 2 * DAY },
      limit: 367,
      offset: 0,
    });
    const fixed = (metrics: string[], dimensions: string[]) => ({
      siteId: "site_1",
      timeZone: "UTC",
      metrics,
      dimensions,
      filters: [],
      period: { from: T, to: T + 2 * DAY },
      model: "first_touch",
      orderBy: dimensions.map((field) => ({ field, desc: false })),
      limit: 1_000_000_000,
      offset: 0,
    });
    expect(asked.slice(1)).toEqual([
      fixed(["new_visitors"], ["channel", "source", "campaign", "landing_page"]),
      fixed(["net_revenue"], ["time:day", "currency", "source", "campaign", "landing_page"]),
      fixed(
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
    ]);
    expect(days(view)).toEqual([
      ["2026-03-09", 0, 0],
      ["2026-03-10", 3, 5],
    ]);
    expect(view.newVisitors).toBe(2);
    expect(view.days[1]?.net).toEqual([{ currency: "EUR", minor: 1000n }]);
    expect(view.sources.byVisitors).toEqual([
      { value: "newsletter", newVisitors: 2, net: [{ currency: "EUR", minor: 900n }] },
    ]);
    expect(view.campaigns).toEqual({ byVisitors: [], byRevenue: [] });
    expect(view.channels).toEqual([
      {
        channel: "Email",
        newVisitors: 2,
        revenue: [
          {
            channel: "Email",
            currency: "EUR",
            grossMinor: 1000n,
            refundsMinor: 100n,
            chargebacksMinor: 0n,
            payments: 3,
            payingCustomers: 2,
            netMinor: 900n,
          },
        ],
      },
      {
        channel: "unattributed",
        newVisitors: 0,
        revenue: [
          {
            channel: "unattributed",
            currency: "EUR",
            grossMinor: 100n,
            refundsMinor: 0n,
            chargebacksMinor: 0n,
            payments: 1,
            payingCustomers: 1,
            netMinor: 100n,
          },
        ],
      },
    ]);
  });

  it("is unavailable without an engine", async () => {
    await expect(buildSiteOverview(store, "site_1", T, T + DAY, undefined)).rejects.toMatchObject({
      kind: "unavailable",
      message:
        "analytics queries are not served by this process (they are served by the process that owns the analytics store)",
    });
  });

  it("answers with the report lanes' refusal: every plan is the engine's report (its own admission), never a Query", async () => {
    const refused = engineWith([], () => Promise.reject(errors.tooManyQueries()));
    await expect(buildSiteOverview(store, "site_1", T, T + DAY, refused)).rejects.toMatchObject({
      kind: "too_many_requests",
      message: "too many analytics queries running for this site, retry later",
      retryAfterSeconds: 1,
    });
  });

  it("fails with the engine's error when it is unavailable (no silent answer from elsewhere)", async () => {
    const down = engineWith([], () => Promise.reject(errors.analyticsUnavailable()));
    await expect(buildSiteOverview(store, "site_1", T, T + DAY, down)).rejects.toMatchObject({
      kind: "unavailable",
      message: "the analytics store is unavailable, retry later",
    });
  });
});
