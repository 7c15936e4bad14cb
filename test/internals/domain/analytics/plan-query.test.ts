/**
 * Query and Funnel requests → plans: every refusal with its exact message,
 * the period rules in the site's time zone (DST days in Paris and New York,
 * a day boundary in Kolkata), the comparisons, the default order and the
 * page token.
 */
import { describe, expect, it } from "vitest";
import {
  type FunnelRequestFields,
  nextPageToken,
  planFunnel,
  planQuery,
  type QueryRequestFields,
} from "../../../../src/domain/analytics/plan-query.js";
import { DomainError } from "../../../../src/domain/errors.js";

const UTC_SITE = { site: { id: "site_1" } };
const site = (timeZone: string) => ({ site: { id: "site_1", timeZone } });

function query(over: Partial<QueryRequestFields> = {}): QueryRequestFields {
  return {
    siteId: "site_1",
    metrics: ["visitors"],
    dimensions: [],
    filters: [],
    period: { fromDay: "2026-03-01", toDay: "2026-03-31", from: "", to: "" },
    compare: "",
    model: "",
    currency: "",
    orderBy: [],
    limit: 0,
    pageToken: "",
    ...over,
  };
}

function funnel(over: Partial<FunnelRequestFields> = {}): FunnelRequestFields {
  return {
    siteId: "site_1",
    steps: [
      { kind: "page", value: "/pricing", filters: [], label: "" },
      { kind: "event", value: "signup", filters: [], label: "Signed up" },
    ],
    filters: [],
    period: { fromDay: "2026-03-01", toDay: "2026-03-31", from: "", to: "" },
    windowSeconds: 0n,
    currency: "",
    model: "",
    ...over,
  };
}

const days = (fromDay: string, toDay: string) => ({ fromDay, toDay, from: "", to: "" });
const instants = (from: string, to: string) => ({ fromDay: "", toDay: "", from, to });

/** The refusal `fn` throws: its kind and message. */
function refusal(fn: () => unknown): { kind: string; message: string } {
  try {
    fn();
  } catch (e) {
    if (e instanceof DomainError) return { kind: e.kind, message: e.message };
    throw e;
  }
  throw new Error("no refusal");
}

const iso = (ms: number) => new Date(ms).toISOString();

describe("planQuery refusals", () => {
  const cases: [
    string,
    Partial<QueryRequestFields>,
    string,
    { site: { id: string; timeZone?: string } }?,
  ][] = [
    ["no metrics", { metrics: [] }, "metrics: at least one is required"],
    [
      "more than 10 metrics",
      {
        metrics: [
          "visitors",
          "visits",
          "pageviews",
          "events",
          "views_per_visit",
          "bounce_rate",
          "visit_duration",
          "conversions",
          "conversion_rate",
          "payments",
          "paying_customers",
        ],
      },
      "metrics: at most 10 are allowed",
    ],
    [
      "an unknown metric",
      { metrics: ["visitors", "sessions"] },
      'metrics: unknown metric "sessions"',
    ],
    ["a duplicate metric", { metrics: ["visits", "visits"] }, 'metrics: "visits" is listed twice'],
    [
      "more than 3 dimensions",
      { dimensions: ["channel", "source", "page", "country"] },
      "dimensions: at most 3 are allowed",
    ],
    ["an unknown dimension", { dimensions: ["city"] }, 'dimensions: unknown dimension "city"'],
    [
      "an unknown time grain",
      { dimensions: ["time:minute"] },
      'dimensions: unknown dimension "time:minute"',
    ],
    ["an empty prop key", { dimensions: ["prop:"] }, 'dimensions: unknown dimension "prop:"'],
    [
      "a duplicate dimension",
      { dimensions: ["page", "page"] },
      'dimensions: "page" is listed twice',
    ],
    [
      "a filter on an unknown dimension",
      { filters: [{ dimension: "city", op: "is", values: ["Paris"] }] },
      'filters[0].dimension: unknown dimension "city"',
    ],
    [
      "a filter on a time dimension",
      { filters: [{ dimension: "time:day", op: "is", values: ["2026-03-01"] }] },
      "filters[0].dimension: a time dimension cannot be filtered (use the period)",
    ],
    [
      "an unknown operator",
      {
        filters: [
          { dimension: "page", op: "is", values: ["/"] },
          { dimension: "page", op: "matches", values: ["/"] },
        ],
      },
      'filters[1].op: unknown operator "matches" (is, is_not or contains)',
    ],
    [
      "a filter without values",
      { filters: [{ dimension: "page", op: "is", values: [] }] },
      "filters[0].values: at least one is required",
    ],
    [
      "too many filter values",
      {
        filters: [
          { dimension: "page", op: "is", values: Array.from({ length: 51 }, (_, i) => `/p${i}`) },
        ],
      },
      "filters[0].values: at most 50 are allowed",
    ],
    [
      "too many filters",
      {
        filters: Array.from({ length: 21 }, () => ({ dimension: "page", op: "is", values: ["/"] })),
      },
      "filters: at most 20 are allowed",
    ],
    [
      "an empty contains value",
      { filters: [{ dimension: "page", op: "contains", values: [""] }] },
      "filters[0].values[0]: must not be empty with contains",
    ],
    [
      "a filter value over 2048 characters",
      { filters: [{ dimension: "page", op: "is", values: ["x".repeat(2049)] }] },
      "filters[0].values[0]: must be at most 2048 characters",
    ],
    ["no period", { period: undefined }, "period: required (from_day and to_day, or from and to)"],
    [
      "an empty period",
      { period: days("", "") },
      "period: required (from_day and to_day, or from and to)",
    ],
    [
      "both kinds of period",
      {
        period: {
          fromDay: "2026-03-01",
          toDay: "2026-03-02",
          from: "2026-03-01T00:00:00Z",
          to: "",
        },
      },
      "period: from_day and to_day, or from and to, not both kinds",
    ],
    [
      "from_day without to_day",
      { period: days("2026-03-01", "") },
      "period.to_day: required with from_day",
    ],
    [
      "to_day without from_day",
      { period: days("", "2026-03-01") },
      "period.from_day: required with to_day",
    ],
    [
      "from without to",
      { period: instants("2026-03-01T00:00:00Z", "") },
      "period.to: required with from",
    ],
    [
      "to without from",
      { period: instants("", "2026-03-01T00:00:00Z") },
      "period.from: required with to",
    ],
    [
      "a bad day",
      { period: days("2026-02-30", "2026-03-01") },
      "period.from_day: must be a day YYYY-MM-DD, e.g. 2024-01-15",
    ],
    [
      "a day in another format",
      { period: days("2026-03-01", "01/04/2026") },
      "period.to_day: must be a day YYYY-MM-DD, e.g. 2024-01-15",
    ],
    [
      "a bad instant",
      { period: instants("2026-03-01", "2026-03-02T00:00:00Z") },
      "period.from: must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
    ],
    [
      "a bad end instant",
      { period: instants("2026-03-01T00:00:00Z", "tomorrow") },
      "period.to: must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
    ],
    [
      "to_day before from_day",
      { period: days("2026-03-02", "2026-03-01") },
      "period.to_day: must not be before from_day",
    ],
    [
      "to not after from",
      { period: instants("2026-03-01T00:00:00Z", "2026-03-01T00:00:00Z") },
      "period.to: must be after from",
    ],
    [
      "a period over 3 years of days",
      { period: days("2023-01-01", "2026-01-01") },
      "period: at most 3 years (1096 days) long",
    ],
    [
      "a period over 3 years of instants",
      { period: instants("2023-01-01T00:00:00Z", "2026-01-01T00:00:00.001Z") },
      "period: at most 3 years (1096 days) long",
    ],
    [
      "an unknown time zone",
      {},
      'time_zone: unknown time zone "Mars/Olympus_Mons"',
      site("Mars/Olympus_Mons"),
    ],
    ["an offset as a time zone", {}, 'time_zone: unknown time zone "+05:30"', site("+05:30")],
    [
      "an unknown comparison",
      { compare: "last_year" },
      'compare: unknown comparison "last_year" (previous_period or year_over_year)',
    ],
    [
      "an unknown model",
      { model: "data_driven" },
      'model: unknown model "data_driven" (first_touch, last_touch, last_non_direct, linear, position_based)',
    ],
    [
      "a revenue metric without currency",
      { metrics: ["visitors", "net_revenue"] },
      "currency: required with revenue metrics",
    ],
    [
      "a bad currency code",
      { metrics: ["gross_revenue"], currency: "eur" },
      'currency: "eur" is not an ISO 4217 code (e.g. EUR)',
    ],
    [
      "an unknown currency code",
      { metrics: ["visitors"], currency: "XYZ" },
      'currency: "XYZ" is not an ISO 4217 code (e.g. EUR)',
    ],
    [
      "order_by on a field not requested",
      { orderBy: [{ field: "visits", desc: true }] },
      'order_by[0].field: "visits" is not a requested metric or dimension',
    ],
    [
      "order_by twice on one field",
      {
        dimensions: ["page"],
        orderBy: [
          { field: "page", desc: true },
          { field: "page", desc: false },
        ],
      },
      'order_by[1].field: "page" is listed twice',
    ],
    ["a negative limit", { limit: -1 }, "limit: must be from 1 to 1000"],
    ["a limit over 1000", { limit: 1001 }, "limit: must be from 1 to 1000"],
    [
      "a page token that is not one",
      { pageToken: "not-a-token" },
      "page_token: not a token from a Query response",
    ],
    [
      "a page token with other characters",
      { pageToken: "abc$" },
      "page_token: not a token from a Query response",
    ],
  ];

  for (const [what, over, message, ctx] of cases) {
    it(`refuses ${what}: "${message}"`, () => {
      expect(refusal(() => planQuery(query(over), ctx ?? UTC_SITE))).toEqual({
        kind: "invalid_input",
        message,
      });
    });
  }

  it("refuses a page token from a different query", () => {
    const plan = planQuery(query({ limit: 10 }), UTC_SITE);
    const token = nextPageToken(plan);
    expect(
      refusal(() =>
        planQuery(query({ metrics: ["visits"], limit: 10, pageToken: token }), UTC_SITE),
      ),
    ).toEqual({
      kind: "invalid_input",
      message: "page_token: from a different query",
    });
    expect(
      refusal(() => planQuery(query({ pageToken: token }), { site: { id: "site_2" } })),
    ).toEqual({
      kind: "invalid_input",
      message: "page_token: from a different query",
    });
  });

  it("takes a page token of the same query and moves the offset by the page's limit", () => {
    const first = planQuery(query({ limit: 10 }), UTC_SITE);
    expect(first.offset).toBe(0);
    const second = planQuery(query({ limit: 10, pageToken: nextPageToken(first) }), UTC_SITE);
    expect(second.offset).toBe(10);
    const third = planQuery(query({ limit: 10, pageToken: nextPageToken(second) }), UTC_SITE);
    expect(third.offset).toBe(20);
  });
});

describe("planQuery plans", () => {
  it("fills the defaults: UTC, first_touch, limit 100, first metric descending then dimensions ascending", () => {
    const plan = planQuery(
      query({ metrics: ["visits", "visitors"], dimensions: ["source", "page"] }),
      UTC_SITE,
    );
    expect(plan).toEqual({
      siteId: "site_1",
      timeZone: "UTC",
      metrics: ["visits", "visitors"],
      dimensions: ["source", "page"],
      filters: [],
      period: { from: Date.UTC(2026, 2, 1), to: Date.UTC(2026, 3, 1) },
      model: "first_touch",
      orderBy: [
        { field: "visits", desc: true },
        { field: "source", desc: false },
        { field: "page", desc: false },
      ],
      limit: 100,
      offset: 0,
    });
  });

  it("orders time dimensions first, ascending, by default", () => {
    const plan = planQuery(
      query({ metrics: ["visitors"], dimensions: ["channel", "time:day"] }),
      UTC_SITE,
    );
    expect(plan.orderBy).toEqual([
      { field: "time:day", desc: false },
      { field: "visitors", desc: true },
      { field: "channel", desc: false },
    ]);
  });

  it("keeps a requested order, then breaks ties by the other dimensions", () => {
    const plan = planQuery(
      query({ dimensions: ["channel", "page"], orderBy: [{ field: "page", desc: true }] }),
      UTC_SITE,
    );
    expect(plan.orderBy).toEqual([
      { field: "page", desc: true },
      { field: "channel", desc: false },
    ]);
  });

  it("keeps filters, model, currency and prop dimensions", () => {
    const plan = planQuery(
      query({
        metrics: ["net_revenue"],
        dimensions: ["prop:plan"],
        filters: [{ dimension: "country", op: "is_not", values: ["FR", "(none)"] }],
        model: "position_based",
        currency: "EUR",
        limit: 1000,
      }),
      UTC_SITE,
    );
    expect(plan.filters).toEqual([
      { dimension: "country", op: "is_not", values: ["FR", "(none)"] },
    ]);
    expect([plan.model, plan.currency, plan.limit]).toEqual(["position_based", "EUR", 1000]);
    expect(plan.dimensions).toEqual(["prop:plan"]);
  });

  it("accepts exactly 3 years of days and the instants of 1096 days", () => {
    expect(planQuery(query({ period: days("2023-01-01", "2025-12-31") }), UTC_SITE).period).toEqual(
      {
        from: Date.UTC(2023, 0, 1),
        to: Date.UTC(2026, 0, 1),
      },
    );
    expect(
      planQuery(
        query({ period: instants("2023-01-01T00:00:00Z", "2026-01-01T00:00:00Z") }),
        UTC_SITE,
      ).period,
    ).toEqual({
      from: Date.UTC(2023, 0, 1),
      to: Date.UTC(2026, 0, 1),
    });
  });

  it("reads a site's time zone case-insensitively, as the runtime names it", () => {
    expect(planQuery(query(), site("europe/paris")).timeZone).toBe("Europe/Paris");
  });
});

describe("periods in the site's time zone", () => {
  const period = (tz: string, fromDay: string, toDay: string) => {
    const p = planQuery(query({ period: days(fromDay, toDay) }), site(tz)).period;
    return [iso(p.from), iso(p.to)];
  };

  it("Europe/Paris: the day clocks go forward lasts 23 hours", () => {
    expect(period("Europe/Paris", "2026-03-29", "2026-03-29")).toEqual([
      "2026-03-28T23:00:00.000Z",
      "2026-03-29T22:00:00.000Z",
    ]);
  });

  it("Europe/Paris: the day clocks go back lasts 25 hours", () => {
    expect(period("Europe/Paris", "2026-10-25", "2026-10-25")).toEqual([
      "2026-10-24T22:00:00.000Z",
      "2026-10-25T23:00:00.000Z",
    ]);
  });

  it("America/New_York: spring forward and fall back days", () => {
    expect(period("America/New_York", "2026-03-08", "2026-03-08")).toEqual([
      "2026-03-08T05:00:00.000Z",
      "2026-03-09T04:00:00.000Z",
    ]);
    expect(period("America/New_York", "2026-11-01", "2026-11-01")).toEqual([
      "2026-11-01T04:00:00.000Z",
      "2026-11-02T05:00:00.000Z",
    ]);
  });

  it("Asia/Kolkata (+05:30): a day starts at 18:30 UTC the day before", () => {
    expect(period("Asia/Kolkata", "2026-01-01", "2026-01-31")).toEqual([
      "2025-12-31T18:30:00.000Z",
      "2026-01-31T18:30:00.000Z",
    ]);
  });

  it("a day whose midnight is skipped starts at the jump (America/Sao_Paulo, 4 November 2018)", () => {
    expect(period("America/Sao_Paulo", "2018-11-04", "2018-11-04")).toEqual([
      "2018-11-04T03:00:00.000Z",
      "2018-11-05T02:00:00.000Z",
    ]);
  });

  it("takes instants as given, whatever the time zone", () => {
    const p = planQuery(
      query({ period: instants("2026-03-29T01:30:00+02:00", "2026-03-29T12:00:00Z") }),
      site("Asia/Kolkata"),
    ).period;
    expect([iso(p.from), iso(p.to)]).toEqual([
      "2026-03-28T23:30:00.000Z",
      "2026-03-29T12:00:00.000Z",
    ]);
  });
});

describe("comparisons", () => {
  const comparison = (tz: string, p: ReturnType<typeof days>, compare: string) => {
    const c = planQuery(query({ period: p, compare }), site(tz)).comparison;
    return c && [iso(c.from), iso(c.to)];
  };

  it("previous_period is the same length immediately before", () => {
    expect(comparison("UTC", days("2026-03-01", "2026-03-31"), "previous_period")).toEqual([
      "2026-01-29T00:00:00.000Z",
      "2026-03-01T00:00:00.000Z",
    ]);
    expect(
      comparison(
        "UTC",
        instants("2026-03-01T10:00:00Z", "2026-03-01T12:00:00Z"),
        "previous_period",
      ),
    ).toEqual(["2026-03-01T08:00:00.000Z", "2026-03-01T10:00:00.000Z"]);
  });

  it("year_over_year is the same calendar days a year earlier in the site's zone", () => {
    expect(comparison("Europe/Paris", days("2026-07-01", "2026-07-31"), "year_over_year")).toEqual([
      "2025-06-30T22:00:00.000Z",
      "2025-07-31T22:00:00.000Z",
    ]);
  });

  it("year_over_year maps 29 February to 28 February", () => {
    expect(comparison("UTC", days("2024-02-29", "2024-02-29"), "year_over_year")).toEqual([
      "2023-02-28T00:00:00.000Z",
      "2023-03-01T00:00:00.000Z",
    ]);
    expect(comparison("UTC", days("2024-02-01", "2024-02-29"), "year_over_year")).toEqual([
      "2023-02-01T00:00:00.000Z",
      "2023-03-01T00:00:00.000Z",
    ]);
  });

  it("year_over_year moves instants by a calendar year on the site's wall clock", () => {
    expect(
      comparison(
        "America/New_York",
        instants("2026-03-10T12:00:00Z", "2026-03-11T12:00:00Z"),
        "year_over_year",
      ),
    ).toEqual(["2025-03-10T12:00:00.000Z", "2025-03-11T12:00:00.000Z"]);
  });

  it("has no comparison when none is asked for", () => {
    expect(comparison("UTC", days("2026-03-01", "2026-03-31"), "")).toBeUndefined();
  });
});

describe("planFunnel", () => {
  const refusals: [string, Partial<FunnelRequestFields>, string][] = [
    [
      "fewer than 2 steps",
      { steps: [{ kind: "page", value: "/", filters: [], label: "" }] },
      "steps: at least 2 are required",
    ],
    [
      "more than 8 steps",
      {
        steps: Array.from({ length: 9 }, (_, i) => ({
          kind: "page",
          value: `/${i}`,
          filters: [],
          label: "",
        })),
      },
      "steps: at most 8 are allowed",
    ],
    [
      "an unknown step kind",
      {
        steps: [
          { kind: "page", value: "/", filters: [], label: "" },
          { kind: "click", value: "#buy", filters: [], label: "" },
        ],
      },
      'steps[1].kind: unknown step kind "click" (page, page_prefix or event)',
    ],
    [
      "an empty step value",
      {
        steps: [
          { kind: "page", value: " ", filters: [], label: "" },
          { kind: "event", value: "signup", filters: [], label: "" },
        ],
      },
      "steps[0].value: required",
    ],
    [
      "a step filter with an unknown operator",
      {
        steps: [
          {
            kind: "page",
            value: "/",
            filters: [{ dimension: "country", op: "like", values: ["FR"] }],
            label: "",
          },
          { kind: "event", value: "signup", filters: [], label: "" },
        ],
      },
      'steps[0].filters[0].op: unknown operator "like" (is, is_not or contains)',
    ],
    [
      "a step value over 2048 characters",
      {
        steps: [
          { kind: "page", value: `/${"x".repeat(2048)}`, filters: [], label: "" },
          { kind: "event", value: "signup", filters: [], label: "" },
        ],
      },
      "steps[0].value: must be at most 2048 characters",
    ],
    [
      "a step label over 2048 characters",
      {
        steps: [
          { kind: "page", value: "/", filters: [], label: "" },
          { kind: "event", value: "signup", filters: [], label: "y".repeat(2049) },
        ],
      },
      "steps[1].label: must be at most 2048 characters",
    ],
    ["a negative window", { windowSeconds: -1n }, "window_seconds: must not be negative"],
    ["no period", { period: undefined }, "period: required (from_day and to_day, or from and to)"],
    [
      "an unknown model",
      { model: "u_shaped" },
      'model: unknown model "u_shaped" (first_touch, last_touch, last_non_direct, linear, position_based)',
    ],
    ["a bad currency", { currency: "EURO" }, 'currency: "EURO" is not an ISO 4217 code (e.g. EUR)'],
    [
      "a funnel filter on a time dimension",
      { filters: [{ dimension: "time:hour", op: "is", values: ["x"] }] },
      "filters[0].dimension: a time dimension cannot be filtered (use the period)",
    ],
  ];
  for (const [what, over, message] of refusals) {
    it(`refuses ${what}: "${message}"`, () => {
      expect(refusal(() => planFunnel(funnel(over), UTC_SITE))).toEqual({
        kind: "invalid_input",
        message,
      });
    });
  }

  it("plans steps with labels, the period's length as the default window, and the model", () => {
    expect(planFunnel(funnel({ currency: "USD", model: "linear" }), site("Europe/Paris"))).toEqual({
      siteId: "site_1",
      timeZone: "Europe/Paris",
      steps: [
        { kind: "page", value: "/pricing", filters: [], label: "/pricing" },
        { kind: "event", value: "signup", filters: [], label: "Signed up" },
      ],
      filters: [],
      period: { from: Date.UTC(2026, 1, 28, 23), to: Date.UTC(2026, 2, 31, 22) },
      windowMs: Date.UTC(2026, 2, 31, 22) - Date.UTC(2026, 1, 28, 23),
      model: "linear",
      currency: "USD",
    });
  });

  it("takes a window in seconds, and caps one longer than the period at the period", () => {
    expect(planFunnel(funnel({ windowSeconds: 3600n }), UTC_SITE).windowMs).toBe(3_600_000);
    expect(planFunnel(funnel({ windowSeconds: 10n ** 12n }), UTC_SITE).windowMs).toBe(
      31 * 86_400_000,
    );
  });
});
