/**
 * The engine's query and funnel answers equal the reference model's (test/helpers/
 * analytics-reference.ts) on random data (test/helpers/analytics-
 * arbitraries.ts: visits across day and time-zone boundaries, refunds and
 * chargebacks, identified and stitched visitors, every model): the data is
 * written into a SQLite database of the service's schema, moved into DuckDB
 * by the feed, and the same plan asked of both. Another site's random data
 * sits beside it (besideAnotherSite): no answer may read it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { FunnelPlan, QueryPlan } from "../../src/domain/analytics/query-plan.js";
import { visitorKey } from "../../src/store/duckdb/analytics-store.js";
import {
  besideAnotherSite,
  countQueryCaseArb,
  funnelCaseArb,
  paymentQueryCaseArb,
  queryCaseArb,
} from "../helpers/analytics-arbitraries.js";
import { engineOverData } from "../helpers/analytics-engine-over.js";
import { type RefData, referenceFunnel, referenceQuery } from "../helpers/analytics-reference.js";
import { useTempDirs } from "../helpers/temp-dirs.js";
import { scaled } from "../helpers/timeouts.js";

const tempDir = useTempDirs("query-semantics-");
type Engine = Awaited<ReturnType<typeof engineOverData>>["engine"];

/** One site's events alone: no identity, stitch, customer or payment. */
const trafficOnly = (events: RefData["events"]): RefData => ({
  sites: [{ id: "site_1", hostnames: ["example.com"] }],
  events,
  identities: [],
  stitches: [],
  customers: [],
  payments: [],
});

/**
 * Visitor bitmaps so small (24 bits a group for ten visitors, two groups to a
 * statement) that a breakdown of a few values counts its visitors in parts,
 * each part a few of them (visitor-count.ts), or by key past eight parts.
 */
const SMALL_BITMAPS = { bits: 48, headroom: 8 };

/**
 * What `ask` gets of an engine over `data` (written, then moved by the feed),
 * closed after. With `warm`, `ask` is asked once the first half is in too: what
 * it kept must not outlive the batches of the rest that changed it. With
 * `small`, the engine's visitor bitmaps are {@link SMALL_BITMAPS}.
 */
async function overData<T>(
  data: RefData,
  ask: (engine: Engine) => Promise<T>,
  warm = false,
  small = false,
): Promise<T> {
  const { engine, close } = await engineOverData(
    tempDir(),
    data,
    warm ? ask : undefined,
    small ? SMALL_BITMAPS : undefined,
  );
  try {
    return await ask(engine);
  } finally {
    close();
  }
}

/** A pageview of `visitorId` on site_1 at `ts`, from `source` (its utm_source). */
const pageviewFrom = (
  visitorId: string,
  ts: number,
  source: string,
): RefData["events"][number] => ({
  siteId: "site_1",
  visitorId,
  ts,
  name: "pageview",
  url: `https://example.com/${visitorId}`,
  utmSource: source,
});

/** A query of `metrics` by source over `period`, ordered as the planner completes it (the dimension breaks ties). */
function bySource(metrics: QueryPlan["metrics"], period: QueryPlan["period"]): QueryPlan {
  return {
    siteId: "site_1",
    timeZone: "UTC",
    metrics,
    dimensions: ["source"],
    filters: [],
    period,
    model: "first_touch",
    orderBy: [
      { field: "visitors", desc: true },
      { field: "source", desc: false },
    ],
    limit: 100,
    offset: 0,
  };
}

/** A first-touch funnel of site_1 over 2026-03-27 (UTC) whose steps are these pages. */
function pageFunnel(paths: string[], over: Partial<FunnelPlan>): FunnelPlan {
  return {
    siteId: "site_1",
    timeZone: "UTC",
    steps: paths.map((value) => ({ kind: "page" as const, value, filters: [], label: value })),
    filters: [],
    period: { from: Date.UTC(2026, 2, 27), to: Date.UTC(2026, 2, 28) },
    windowMs: 600_000,
    model: "first_touch",
    ...over,
  };
}

/** The property that on every case of `cases` the engine's answer (`ask`) equals the reference's. */
function agreesWithReference<Plan, Answer>(
  cases: fc.Arbitrary<{ data: RefData; plan: Plan }>,
  ask: (engine: Engine, plan: Plan) => Promise<Answer>,
  reference: (data: RefData, plan: Plan) => Answer,
  params: fc.Parameters<[{ data: RefData; plan: Plan }, boolean, boolean]>,
) {
  return fc.assert(
    fc.asyncProperty(cases, fc.boolean(), fc.boolean(), async ({ data, plan }, warm, small) => {
      expect(await overData(data, (engine) => ask(engine, plan), warm, small)).toEqual(
        reference(data, plan),
      );
    }),
    params,
  );
}

/**
 * The property that on every case of `cases` over a site's traffic alone (no
 * customer, payment or identity: the feed's batches of the data's second half
 * are batches of events, which grow what the engine kept) the engine's answer
 * equals the reference's, asked with the first half in and again after a
 * batch that changed nothing (kept from then on), then after the rest.
 */
function agreesOnceBatchesGrew<Plan, Answer>(
  cases: fc.Arbitrary<{ data: RefData; plan: Plan }>,
  ask: (engine: Engine, plan: Plan) => Promise<Answer>,
  reference: (data: RefData, plan: Plan) => Answer,
  params: fc.Parameters<[{ data: RefData; plan: Plan }]>,
) {
  const traffic = cases.map(({ data, plan }) => ({
    data: { ...data, identities: [], stitches: [], customers: [], payments: [] },
    plan,
  }));
  return fc.assert(
    fc.asyncProperty(traffic, async ({ data, plan }) => {
      const { engine, close } = await engineOverData(tempDir(), data, async (early, store) => {
        await ask(early, plan);
        await store.scopedWrite({ sites: new Map() }, () => store.writer.run("SELECT 1"));
        await ask(early, plan);
      });
      try {
        expect(await ask(engine, plan)).toEqual(reference(data, plan));
      } finally {
        close();
      }
    }),
    params,
  );
}

describe("the engine against the reference model", () => {
  it("answers every funnel as the reference does", { timeout: scaled(300_000) }, async () => {
    await agreesWithReference(
      besideAnotherSite(funnelCaseArb),
      (engine, plan) => engine.funnel(plan),
      referenceFunnel,
      { numRuns: 30, seed: 30 },
    );
  });

  it("answers every query as the reference does", { timeout: scaled(300_000) }, async () => {
    // Fixed seed: a failure prints its seed and path (fast-check's report) to replay it.
    await agreesWithReference(
      besideAnotherSite(queryCaseArb),
      (engine, plan) => engine.query(plan),
      referenceQuery,
      {
        numRuns: 100,
        seed: 3030,
      },
    );
  });

  it("answers every breakdown of visitors, pageviews and events as the reference does, its visitors counted by bitmaps in parts", {
    timeout: scaled(300_000),
  }, async () => {
    await fc.assert(
      fc.asyncProperty(besideAnotherSite(countQueryCaseArb), async ({ data, plan }) => {
        expect(await overData(data, (engine) => engine.query(plan), false, true)).toEqual(
          referenceQuery(data, plan),
        );
      }),
      { numRuns: 40, seed: 4040 },
    );
  });

  it("answers every breakdown of visitors, pageviews and events of a site's traffic as the reference does once batches of events grew the breakdowns it kept", {
    timeout: scaled(300_000),
  }, async () => {
    await agreesOnceBatchesGrew(
      besideAnotherSite(countQueryCaseArb),
      (engine, plan) => engine.query(plan),
      referenceQuery,
      { numRuns: 80, seed: 5050 },
    );
  });

  it("answers every funnel over a site's traffic as the reference does once batches of events grew the first steps it kept", {
    timeout: scaled(300_000),
  }, async () => {
    // Stored in any order, so a batch may hold a visitor's events earlier
    // than their first place kept at step 1.
    const shuffled = besideAnotherSite(funnelCaseArb).chain(({ data, plan }) =>
      fc
        .shuffledSubarray(data.events, {
          minLength: data.events.length,
          maxLength: data.events.length,
        })
        .map((events) => ({ data: { ...data, events }, plan })),
    );
    await agreesOnceBatchesGrew(shuffled, (engine, plan) => engine.funnel(plan), referenceFunnel, {
      numRuns: 60,
      seed: 6060,
    });
  });

  it("answers every query by currency, customer or days to first payment as the reference does", {
    timeout: scaled(300_000),
  }, async () => {
    await agreesWithReference(
      besideAnotherSite(paymentQueryCaseArb),
      (engine, plan) => engine.query(plan),
      referenceQuery,
      { numRuns: 60, seed: 3333 },
    );
  });

  it("rounds revenue per visitor half away from zero, negative halves too", async () => {
    // Random data seldom lands on a negative half: one refund of 0.03 over 2 visitors is -0.015.
    const at = Date.UTC(2026, 2, 27, 10);
    const data: RefData = {
      sites: [{ id: "site_1", hostnames: ["example.com"] }],
      events: ["d0", "d1"].map((visitorId) => ({
        siteId: "site_1",
        visitorId,
        ts: at,
        name: "pageview",
        url: "https://example.com/",
      })),
      identities: [],
      stitches: [],
      customers: [{ siteId: "site_1", customerId: "c0", visitorIds: ["d0"] }],
      payments: [
        {
          siteId: "site_1",
          paymentId: "p0",
          customerId: "c0",
          kind: "refund",
          status: "succeeded",
          amountMinor: 3,
          currency: "EUR",
          paidAt: at + 60_000,
        },
      ],
    };
    const plan: QueryPlan = {
      siteId: "site_1",
      timeZone: "UTC",
      metrics: ["revenue_per_visitor", "visitors"],
      dimensions: [],
      filters: [],
      period: { from: Date.UTC(2026, 2, 27), to: Date.UTC(2026, 2, 28) },
      model: "linear",
      orderBy: [],
      currency: "EUR",
      limit: 100,
      offset: 0,
    };
    const answer = await overData(data, (engine) => engine.query(plan));
    expect(answer.totals).toEqual([
      { kind: "money", currency: "EUR", minor: -2n },
      { kind: "count", value: 2 },
    ]);
    expect(answer).toEqual(referenceQuery(data, plan));
  });

  it("reads the visits across the period's start, its end and both as the reference does, by a visit's own dimension", async () => {
    // Random data seldom has a visit across midnight where a query reads whole visits.
    const day = Date.UTC(2026, 2, 27);
    const MIN = 60_000;
    const pageviews = (
      visitorId: string,
      from: number,
      to: number,
      every: number,
      source: string,
    ) => {
      const events: RefData["events"] = [];
      for (let ts = from; ts <= to; ts += every) events.push(pageviewFrom(visitorId, ts, source));
      return events;
    };
    const data = trafficOnly([
      // Across the start, across the end, across both (one visit of 25 hours), inside.
      ...pageviews("d0", day - 10 * MIN, day + 10 * MIN, 10 * MIN, "start"),
      ...pageviews("d1", day + 1430 * MIN, day + 1450 * MIN, 10 * MIN, "end"),
      ...pageviews("d2", day - 30 * MIN, day + 1470 * MIN, 20 * MIN, "both"),
      ...pageviews("d3", day + 600 * MIN, day + 605 * MIN, 5 * MIN, "inside"),
      ...pageviews("d4", day + 700 * MIN, day + 700 * MIN, MIN, "inside"),
    ]);
    const plan = bySource(["visitors", "visits", "pageviews", "bounce_rate", "visit_duration"], {
      from: day,
      to: day + 1440 * MIN,
    });
    const answer = await overData(data, (engine) => engine.query(plan));
    expect(answer.rows.map((r) => [r.dimensions[0], r.metrics[2]])).toEqual([
      ["inside", { kind: "count", value: 3 }],
      ["both", { kind: "count", value: 72 }],
      ["end", { kind: "count", value: 1 }],
      ["start", { kind: "count", value: 2 }],
    ]);
    expect(answer).toEqual(referenceQuery(data, plan));
  });

  it("counts a visitor of several sources once in the total of visitors by source, as the reference does", async () => {
    // The groups' visitors overlap: the total is neither the largest group nor their sum.
    const day = Date.UTC(2026, 2, 27);
    const HOUR = 3_600_000;
    const data = trafficOnly([
      pageviewFrom("d0", day + HOUR, "google"),
      pageviewFrom("d0", day + 3 * HOUR, "facebook"),
      pageviewFrom("d1", day + 2 * HOUR, "google"),
      pageviewFrom("d2", day + 4 * HOUR, "facebook"),
    ]);
    const plan = bySource(["visitors"], { from: day, to: day + 24 * HOUR });
    const answer = await overData(data, (engine) => engine.query(plan));
    expect(answer.rows.map((r) => [r.dimensions[0], r.metrics[0]])).toEqual([
      ["facebook", { kind: "count", value: 2 }],
      ["google", { kind: "count", value: 2 }],
    ]);
    expect(answer.totals).toEqual([{ kind: "count", value: 3 }]);
    expect(answer).toEqual(referenceQuery(data, plan));
  });

  it("orders a customer's touches at the same instant by stored visitor key", async () => {
    // Random data seldom starts two of a customer's visits at one instant.
    const at = Date.UTC(2026, 2, 27, 10);
    const data: RefData = {
      sites: [{ id: "site_1", hostnames: ["example.com"] }],
      events: ["d0", "d1"].map((visitorId) => ({
        siteId: "site_1",
        visitorId,
        ts: at,
        name: "pageview",
        url: `https://example.com/${visitorId}`,
      })),
      identities: [],
      stitches: [],
      customers: [{ siteId: "site_1", customerId: "c0", visitorIds: ["d0", "d1"] }],
      payments: [
        {
          siteId: "site_1",
          paymentId: "p0",
          customerId: "c0",
          kind: "charge",
          status: "succeeded",
          amountMinor: 100,
          currency: "EUR",
          paidAt: at + 60_000,
        },
      ],
    };
    const plan: QueryPlan = {
      siteId: "site_1",
      timeZone: "UTC",
      metrics: ["net_revenue"],
      dimensions: ["landing_page"],
      filters: [],
      period: { from: Date.UTC(2026, 2, 27), to: Date.UTC(2026, 2, 28) },
      model: "last_touch",
      orderBy: [{ field: "net_revenue", desc: true }],
      currency: "EUR",
      limit: 100,
      offset: 0,
    };
    const last = visitorKey("d0") > visitorKey("d1") ? "d0" : "d1";
    const answer = await overData(data, (engine) => engine.query(plan));
    expect(answer.rows).toEqual([
      {
        dimensions: [`https://example.com/${last}`],
        metrics: [{ kind: "money", currency: "EUR", minor: 100n }],
      },
    ]);
    expect(answer).toEqual(referenceQuery(data, plan));
  });

  it("walks a funnel from a later step-1 event when the earlier one's window closes first", async () => {
    // Random data seldom has a visitor whose second start reaches further within a short window.
    const at = Date.UTC(2026, 2, 27, 10);
    const event = (ts: number, path: string) => ({
      siteId: "site_1",
      visitorId: "d0",
      ts,
      name: "pageview",
      url: `https://example.com${path}`,
    });
    const data = trafficOnly([
      event(at, "/a"),
      event(at + 3_600_000, "/a"),
      event(at + 3_660_000, "/b"),
      event(at + 3_690_000, "/c"),
    ]);
    const plan = pageFunnel(["/a", "/b", "/c"], { windowMs: 600_000 });
    const answer = await overData(data, (engine) => engine.funnel(plan));
    expect(answer.steps.map((s) => [s.visitors, s.medianSecondsFromPrevious])).toEqual([
      [1, undefined],
      [1, 60],
      [1, 30],
    ]);
    expect(answer).toEqual(referenceFunnel(data, plan));
  });

  it("counts a funnel's completers' revenue in the funnel's currency alone", async () => {
    // Under first touch the shares of every currency are one table, read through a filter.
    const at = Date.UTC(2026, 2, 27, 10);
    const data: RefData = {
      sites: [{ id: "site_1", hostnames: ["example.com"] }],
      events: ["/a", "/b"].map((path, i) => ({
        siteId: "site_1",
        visitorId: "d0",
        ts: at + i * 60_000,
        name: "pageview",
        url: `https://example.com${path}`,
      })),
      identities: [],
      stitches: [],
      customers: [{ siteId: "site_1", customerId: "c0", visitorIds: ["d0"] }],
      payments: (["EUR", "USD"] as const).map((currency, i) => ({
        siteId: "site_1",
        paymentId: `p${i}`,
        customerId: "c0",
        kind: "charge" as const,
        status: "succeeded" as const,
        amountMinor: 100 + i * 50,
        currency,
        paidAt: at + 600_000,
        attribution: {
          channel: "Direct",
          landingPage: "https://example.com/a",
          visitorId: "d0",
          touchedAt: at,
        },
      })),
    };
    const plan = pageFunnel(["/a", "/b"], { windowMs: 3_600_000, currency: "EUR" });
    const answer = await overData(data, (engine) => engine.funnel(plan));
    expect(answer.completersNetMinor).toBe(100n);
    expect(answer).toEqual(referenceFunnel(data, plan));
  });

  it("buckets by the zone's wall clock on both sides of a change of its offset", async () => {
    // Random periods seldom hold a daylight-saving change: Berlin goes from +1 h to +2 h
    // at 2026-03-29T01:00Z, so 22:30Z that day is 00:30 on the 30th there.
    const event = (visitorId: string, ts: number) => ({
      siteId: "site_1",
      visitorId,
      ts,
      name: "pageview",
      url: "https://example.com/",
    });
    const data = trafficOnly([
      event("d0", Date.UTC(2026, 2, 28, 22, 30)),
      event("d1", Date.UTC(2026, 2, 29, 22, 30)),
      event("d2", Date.UTC(2026, 9, 24, 22, 30)),
      event("d3", Date.UTC(2026, 9, 25, 22, 30)),
    ]);
    const plan: QueryPlan = {
      siteId: "site_1",
      timeZone: "Europe/Berlin",
      metrics: ["visitors"],
      dimensions: ["time:day"],
      filters: [],
      period: { from: Date.UTC(2026, 2, 27, 23), to: Date.UTC(2026, 9, 27, 23) },
      model: "first_touch",
      orderBy: [{ field: "time:day", desc: false }],
      limit: 1000,
      offset: 0,
    };
    const answer = await overData(data, (engine) => engine.query(plan));
    expect(answer.rows.map((r) => r.dimensions[0])).toEqual([
      "2026-03-28",
      "2026-03-30",
      "2026-10-25",
    ]);
    expect(answer.rows.map((r) => r.metrics[0])).toEqual([
      { kind: "count", value: 1 },
      { kind: "count", value: 1 },
      { kind: "count", value: 2 },
    ]);
    expect(answer).toEqual(referenceQuery(data, plan));
  });

  it("counts a visitor as new in the period that holds its best pageview, whatever lies outside it", async () => {
    // Random data seldom has a visitor whose pageviews in the period are all internal
    // navigations and whose only pageview with a channel comes after the period.
    const day = Date.UTC(2026, 2, 27);
    const hour = 3_600_000;
    const pageview = (visitorId: string, ts: number, referrerHost: string) => ({
      siteId: "site_1",
      visitorId,
      ts,
      name: "pageview",
      url: "https://example.com/",
      referrerHost,
    });
    const data = trafficOnly([
      // New: internal navigations only, nothing before or after (its best is its first).
      pageview("d0", day + 10 * hour, "example.com"),
      // Not new: its best is the pageview with a channel the day after.
      pageview("d1", day + 10 * hour, "example.com"),
      pageview("d1", day + 34 * hour, "www.google.com"),
      // Not new: a pageview with a channel the day before.
      pageview("d2", day - 14 * hour, "www.google.com"),
      pageview("d2", day + 10 * hour, "www.bing.com"),
      // New: only an internal navigation before, its first pageview with a channel in the period.
      pageview("d3", day - 14 * hour, "example.com"),
      pageview("d3", day + 10 * hour, "www.google.com"),
    ]);
    const plan: QueryPlan = {
      siteId: "site_1",
      timeZone: "UTC",
      metrics: ["new_visitors"],
      dimensions: ["channel"],
      filters: [],
      period: { from: day, to: day + 24 * hour },
      model: "first_touch",
      orderBy: [{ field: "channel", desc: false }],
      limit: 1000,
      offset: 0,
    };
    const answer = await overData(data, (engine) => engine.query(plan));
    expect(answer.rows.map((r) => [r.dimensions[0], r.metrics[0]])).toEqual([
      ["Direct", { kind: "count", value: 1 }],
      ["Organic Search", { kind: "count", value: 1 }],
    ]);
    expect(answer).toEqual(referenceQuery(data, plan));
  });
});
