/**
 * The pure parts of SiteOverview (the days of a period, the top lists, the
 * period's checks) and its one seam: traffic from the engine's plan when
 * there is an engine, else (or when the engine is busy) from the store.
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

describe("buildSiteOverview's traffic", () => {
  /** A store whose traffic reads answer 7 visitors and 9 pageviews on the period's first day. */
  const store = {
    trafficRollup: async () => [{ day: "2026-03-09", visitors: 7, pageviews: 9 }],
    trafficByDay: async () => [],
    newVisitorRollup: async () => [],
    newVisitorCounts: async () => [],
    revenueBreakdown: async () => ({ days: [], sources: [], campaigns: [], landingPages: [] }),
    revenueByChannel: async () => [],
    recentPayments: async () => [],
  } as unknown as Store;
  const engineAnswering = (asked: QueryPlan[], answer: () => Promise<QueryResult>) =>
    ({
      query: (plan: QueryPlan) => {
        asked.push(plan);
        return answer();
      },
      funnel: () => Promise.reject(new Error("not used")),
    }) as unknown as AnalyticsEngine;
  const days = (v: Awaited<ReturnType<typeof buildSiteOverview>>) =>
    v.days.map((d) => [d.day, d.visitors, d.pageviews]);

  it("is the engine's plan of visitors and pageviews by UTC day when there is an engine", async () => {
    const asked: QueryPlan[] = [];
    const engine = engineAnswering(asked, async () => ({
      rows: [
        {
          dimensions: ["2026-03-10"],
          metrics: [
            { kind: "count", value: 3 },
            { kind: "count", value: 5 },
          ],
        },
      ],
      totals: [],
      more: false,
    }));
    const view = await buildSiteOverview(store, "site_1", T, T + 2 * DAY, store, engine);
    expect(asked).toEqual([overviewTrafficPlan("site_1", T, T + 2 * DAY)]);
    expect(asked[0]).toMatchObject({
      timeZone: "UTC",
      metrics: ["visitors", "pageviews"],
      dimensions: ["time:day"],
      filters: [],
      period: { from: T, to: T + 2 * DAY },
      limit: 367,
      offset: 0,
    });
    expect(days(view)).toEqual([
      ["2026-03-09", 0, 0],
      ["2026-03-10", 3, 5],
    ]);
  });

  it("is the store's when there is no engine, or when the engine refuses for too many queries", async () => {
    expect(days(await buildSiteOverview(store, "site_1", T, T + DAY))).toEqual([
      ["2026-03-09", 7, 9],
    ]);
    const busy = engineAnswering([], () => Promise.reject(errors.tooManyQueries()));
    expect(days(await buildSiteOverview(store, "site_1", T, T + DAY, store, busy))).toEqual([
      ["2026-03-09", 7, 9],
    ]);
  });

  it("fails with the engine's error when it is unavailable (no silent answer from elsewhere)", async () => {
    const down = engineAnswering([], () => Promise.reject(errors.analyticsUnavailable()));
    await expect(buildSiteOverview(store, "site_1", T, T + DAY, store, down)).rejects.toMatchObject(
      {
        kind: "unavailable",
        message: "the analytics store is unavailable, retry later",
      },
    );
  });
});
