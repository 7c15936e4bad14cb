/**
 * The store contract, the daily rollups: the traffic and new-visitor numbers
 * SiteOverview reads (whole days from the rollups the events' commit keeps,
 * partial days raw; src/domain/overview-traffic.ts) are exactly those of the
 * events and first touches committed, for any period.
 */
import fc from "fast-check";
import { beforeEach, describe, expect, it } from "vitest";
import { newVisitorsOfPeriod, trafficOfPeriod } from "../../../src/domain/overview-traffic.js";
import type {
  DailyTraffic,
  EventRecord,
  NewVisitorCount,
  Store,
  VisitorTouch,
} from "../../../src/store/port.js";
import { runs } from "../../helpers/robustness.js";
import { event, group, type StoreContract, T0, touch } from "../../helpers/store-contract.js";

const DAY = 86_400_000;
/** Days the random data spans: T0's day and the three after it. */
const SPAN_DAYS = 4;

const dayOf = (ts: number) => new Date(ts).toISOString().slice(0, 10);

/** The traffic of [from, to) straight from the events: the reference. */
function referenceTraffic(
  events: readonly EventRecord[],
  from: number,
  to: number,
): DailyTraffic[] {
  const days = new Map<string, { visitors: Set<string>; pageviews: number }>();
  for (const e of events) {
    if (e.ts < from || e.ts >= to) continue;
    const d = days.get(dayOf(e.ts)) ?? { visitors: new Set<string>(), pageviews: 0 };
    d.visitors.add(e.visitorId);
    if (e.name === "pageview") d.pageviews += 1;
    days.set(dayOf(e.ts), d);
  }
  return [...days]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([day, d]) => ({ day, visitors: d.visitors.size, pageviews: d.pageviews }));
}

/**
 * The first touch each visitor ends with (a non-internal touch beats an
 * internal one, then the earlier wins, the first of equals stays), counted by
 * dimensions when its ts is in [from, to): the reference.
 */
function referenceNewVisitors(
  touches: readonly VisitorTouch[],
  from: number,
  to: number,
): NewVisitorCount[] {
  const best = new Map<string, VisitorTouch>();
  for (const t of touches) {
    const b = best.get(t.visitorId);
    const wins =
      b === undefined || (b.internal && !t.internal) || (b.internal === t.internal && t.ts < b.ts);
    if (wins) best.set(t.visitorId, t);
  }
  const counts = new Map<string, NewVisitorCount>();
  for (const t of best.values()) {
    if (t.ts < from || t.ts >= to) continue;
    const key = JSON.stringify([t.channel, t.source, t.campaign, t.landingPage]);
    const c = counts.get(key) ?? {
      channel: t.channel,
      ...(t.source === undefined ? {} : { source: t.source }),
      ...(t.campaign === undefined ? {} : { campaign: t.campaign }),
      landingPage: t.landingPage,
      visitors: 0,
    };
    c.visitors += 1;
    counts.set(key, c);
  }
  return sortCounts([...counts.values()]);
}

function sortCounts(rows: NewVisitorCount[]): NewVisitorCount[] {
  const key = (r: NewVisitorCount) =>
    JSON.stringify([r.channel, r.source ?? "", r.campaign ?? "", r.landingPage]);
  return [...rows].sort((a, b) => (key(a) < key(b) ? -1 : 1));
}

/** Random events and candidate touches over SPAN_DAYS days, committed in several batches. */
const batchesArb = fc.array(
  fc.array(
    fc.record({
      visitor: fc.constantFrom("v1", "v2", "v3", "v4", "v5"),
      // Often right at a day's boundary, where a period's split is.
      ts: fc.oneof(
        fc.integer({ min: 0, max: SPAN_DAYS * DAY - 1 }),
        fc
          .tuple(fc.integer({ min: 1, max: SPAN_DAYS - 1 }), fc.integer({ min: -1, max: 0 }))
          .map(([d, off]) => d * DAY + off),
      ),
      pageview: fc.boolean(),
      touch: fc.option(
        fc.record({
          internal: fc.boolean(),
          channel: fc.constantFrom("Organic Search", "Direct", "Email"),
          source: fc.option(fc.constantFrom("google", "newsletter"), { nil: undefined }),
          campaign: fc.option(fc.constantFrom("spring", "summer"), { nil: undefined }),
          landingPage: fc.constantFrom("https://example.com/", "https://example.com/pricing"),
        }),
        { nil: undefined },
      ),
    }),
    { minLength: 0, maxLength: 12 },
  ),
  { minLength: 1, maxLength: 4 },
);

/** A period inside the span and a little around it, often not aligned to days. */
const periodArb = fc
  .tuple(
    fc.integer({ min: -DAY, max: (SPAN_DAYS + 1) * DAY }),
    fc.integer({ min: 1, max: (SPAN_DAYS + 1) * DAY }),
    fc.constantFrom("aligned", "any", "near"),
  )
  .map(([start, length, kind]) => {
    if (kind === "aligned") {
      const from = T0 + Math.floor(start / DAY) * DAY;
      return { from, to: from + Math.ceil(length / DAY) * DAY };
    }
    if (kind === "near") {
      // A millisecond off whole days at either end.
      const from = T0 + Math.floor(start / DAY) * DAY + (start % 2 === 0 ? 1 : -1);
      return { from, to: from + Math.ceil(length / DAY) * DAY + (length % 2 === 0 ? 1 : -1) };
    }
    return { from: T0 + start, to: T0 + start + length };
  });

export function describeRollupsContract(contract: StoreContract): void {
  const { newSite } = contract;
  /**
   * Whether the store keeps daily rollups whose counts outlive the rows
   * (MongoDB, until its analytics feed replaces them). SQLite keeps none
   * since migration 20: its whole-day reads are the rows' own, so an erased
   * or pruned row stops counting, and nothing personal is left behind.
   */
  const keepsRollups = contract.name === "mongodb";
  let store: Store;
  beforeEach(() => {
    store = contract.store;
  });

  describe("daily rollups", () => {
    it("SiteOverview's traffic and new visitors of any period equal those computed from the events and touches committed", async () => {
      await fc.assert(
        fc.asyncProperty(
          batchesArb,
          fc.array(periodArb, { minLength: 3, maxLength: 3 }),
          async (batches, periods) => {
            const { account, site } = await newSite();
            const events: EventRecord[] = [];
            const touches: VisitorTouch[] = [];
            for (const batch of batches) {
              // One request per event: several groups per commit, as the queue batches them.
              const groups = batch.map((b) => {
                const ts = T0 + b.ts;
                const e = event(site.id, b.pageview ? "pageview" : "signup", {
                  visitorId: b.visitor,
                  ts,
                  receivedAt: T0 + SPAN_DAYS * DAY,
                });
                events.push(e);
                const t: VisitorTouch[] = [];
                if (b.touch) {
                  const { source, campaign, ...rest } = b.touch;
                  const candidate: VisitorTouch = {
                    ...rest,
                    siteId: site.id,
                    visitorId: b.visitor,
                    ts,
                    ...(source === undefined ? {} : { source }),
                    ...(campaign === undefined ? {} : { campaign }),
                  };
                  touches.push(candidate);
                  t.push(candidate);
                }
                return group(account.id, [e], { ceiling: 1_000_000, touches: t });
              });
              await store.commitEvents(groups);
            }
            // Whole days from the rollups, partial days raw.
            for (const { from, to } of periods) {
              expect(await trafficOfPeriod(store, site.id, from, to)).toEqual(
                referenceTraffic(events, from, to),
              );
              expect(sortCounts(await newVisitorsOfPeriod(store, site.id, from, to))).toEqual(
                referenceNewVisitors(touches, from, to),
              );
            }
            // The rollups alone, over every whole day, equal the rows' reads.
            const first = dayOf(T0);
            const end = dayOf(T0 + SPAN_DAYS * DAY);
            expect(await store.trafficRollup(site.id, first, end)).toEqual(
              await store.trafficByDay(site.id, T0, T0 + SPAN_DAYS * DAY),
            );
            expect(sortCounts(await store.newVisitorRollup(site.id, first, end))).toEqual(
              sortCounts(await store.newVisitorCounts(site.id, T0, T0 + SPAN_DAYS * DAY)),
            );
          },
        ),
        runs(15, 40_000),
      );
    }, 60_000);

    it("a visitor counts once a day across commits; the same touch committed again counts once", async () => {
      const { account, site } = await newSite();
      const pv = (ts: number) =>
        event(site.id, "pageview", { visitorId: "v1", ts, receivedAt: ts });
      const t = touch(site.id, "v1", { ts: T0 + 5 });
      // A client sending the same request again: two commits of the same events and touch.
      for (let i = 0; i < 2; i++) {
        await store.commitEvents([
          group(account.id, [pv(T0 + 5), pv(T0 + 6)], { ceiling: 1000, touches: [t] }),
        ]);
      }
      expect(await store.trafficRollup(site.id, "2025-06-01", "2025-06-02")).toEqual([
        { day: "2025-06-01", visitors: 1, pageviews: 4 },
      ]);
      expect(await store.newVisitorRollup(site.id, "2025-06-01", "2025-06-02")).toEqual([
        {
          channel: "Organic Search",
          source: "google",
          campaign: "spring",
          landingPage: "https://example.com/pricing",
          visitors: 1,
        },
      ]);
    });

    it("a late event lands on the day of its ts, and a better first touch moves the new visitor to its day", async () => {
      const { account, site } = await newSite();
      const now = T0 + 3 * DAY + 10;
      await store.commitEvents([
        group(
          account.id,
          [event(site.id, "pageview", { visitorId: "v1", ts: now, receivedAt: now })],
          { ceiling: 1000, touches: [touch(site.id, "v1", { ts: now, channel: "Direct" })] },
        ),
      ]);
      // Sent three days late: its ts is on the first day.
      await store.commitEvents([
        group(
          account.id,
          [event(site.id, "pageview", { visitorId: "v1", ts: T0 + 7, receivedAt: now + 1 })],
          { ceiling: 1000, touches: [touch(site.id, "v1", { ts: T0 + 7 })] },
        ),
      ]);
      expect(await store.trafficRollup(site.id, "2025-06-01", "2025-06-05")).toEqual([
        { day: "2025-06-01", visitors: 1, pageviews: 1 },
        { day: "2025-06-04", visitors: 1, pageviews: 1 },
      ]);
      expect(await store.newVisitorRollup(site.id, "2025-06-04", "2025-06-05")).toEqual([]);
      expect(await store.newVisitorRollup(site.id, "2025-06-01", "2025-06-02")).toEqual([
        {
          channel: "Organic Search",
          source: "google",
          campaign: "spring",
          landingPage: "https://example.com/pricing",
          visitors: 1,
        },
      ]);
    });

    it("a request refused for quota adds nothing to the rollups", async () => {
      const { account, site } = await newSite();
      const [result] = await store.commitEvents([
        group(account.id, [event(site.id, "pageview", { visitorId: "v1", ts: T0 })], {
          ceiling: 0,
        }),
      ]);
      expect(result?.ok).toBe(false);
      expect(await store.trafficRollup(site.id, "2025-06-01", "2025-06-02")).toEqual([]);
    });

    it("without rollups, the store has no visitor ids of days to prune", () => {
      expect(contract.store.pruneVisitorDaysStep === undefined).toBe(!keepsRollups);
    });

    it.runIf(keepsRollups)(
      "pruning the visitor ids of days before the horizon goes in bounded steps and keeps the counts",
      async () => {
        const { account, site } = await newSite();
        const prune = store.pruneVisitorDaysStep?.bind(store) as NonNullable<
          Store["pruneVisitorDaysStep"]
        >;
        const pv = (visitorId: string, ts: number) =>
          event(site.id, "pageview", { visitorId, ts, receivedAt: ts });
        // Three visitors on 2025-06-01, one on 2025-06-02 (T0 is 2025-06-01T00:00Z).
        await store.commitEvents([
          group(
            account.id,
            [pv("v1", T0 + 1), pv("v2", T0 + 2), pv("v3", T0 + 3), pv("v4", T0 + DAY + 1)],
            {
              ceiling: 1000,
            },
          ),
        ]);
        expect(await prune(site.id, "2025-06-02", 2)).toBe(2);
        expect(await prune(site.id, "2025-06-02", 2)).toBe(1);
        expect(await prune(site.id, "2025-06-02", 2)).toBe(0);
        const days = ["2025-06-01", "2025-06-03"] as const;
        const counts = [
          { day: "2025-06-01", visitors: 3, pageviews: 3 },
          { day: "2025-06-02", visitors: 1, pageviews: 1 },
        ];
        expect(await store.trafficRollup(site.id, ...days)).toEqual(counts);
        // 2025-06-02's set is kept: v4 seen again that day is not a new visitor.
        await store.commitEvents([group(account.id, [pv("v4", T0 + DAY + 2)], { ceiling: 1000 })]);
        expect((await store.trafficRollup(site.id, ...days))[1]).toEqual({
          day: "2025-06-02",
          visitors: 1,
          pageviews: 2,
        });
      },
    );

    it("erasing visitors moves their new-visitor counts to the neutral row: no row keeps a string only they brought", async () => {
      const { account, site } = await newSite();
      const EMAIL = "ada.lovelace@example.com";
      const mine = {
        channel: "Email",
        source: `news-${EMAIL}`,
        campaign: `c-${EMAIL}`,
        landingPage: `https://example.com/?email=${EMAIL}`,
      };
      const pv = (visitorId: string, ts: number) =>
        event(site.id, "pageview", { visitorId, ts, receivedAt: ts });
      await store.commitEvents([
        group(account.id, [pv("v_ada", T0 + 5), pv("v_bob", T0 + 6), pv("v_cy", T0 + 7)], {
          ceiling: 1000,
          touches: [
            // v_ada's internal touch, then a better one: the trigger leaves the first row at 0.
            touch(site.id, "v_ada", {
              ...mine,
              ts: T0 + 9,
              internal: true,
              landingPage: `https://example.com/first?${EMAIL}`,
            }),
            touch(site.id, "v_bob", { ts: T0 + 6 }),
            // A landing page v_ada shares with v_cy stays: it did not come only from v_ada.
            touch(site.id, "v_cy", {
              ...mine,
              ts: T0 + 7,
              source: undefined,
              campaign: undefined,
              landingPage: "https://example.com/shared",
            }),
          ],
        }),
      ]);
      await store.commitEvents([
        group(account.id, [pv("v_ada", T0 + 5)], {
          ceiling: 1000,
          touches: [touch(site.id, "v_ada", { ...mine, ts: T0 + 5 })],
        }),
      ]);
      const day = ["2025-06-01", "2025-06-02"] as const;
      const rows = async () => sortCounts(await store.newVisitorRollup(site.id, ...day));
      expect((await rows()).map((r) => r.landingPage)).toContain(mine.landingPage);
      await store.eraseVisitors(site.id, ["v_ada"], ["v_ada"]);
      expect(await rows()).toEqual(
        sortCounts([
          // Without rollups the erased visitor's touch is gone, and its count with it.
          ...(keepsRollups ? [{ channel: "Email", landingPage: "(erased)", visitors: 1 }] : []),
          { channel: "Email", landingPage: "https://example.com/shared", visitors: 1 },
          {
            channel: "Organic Search",
            source: "google",
            campaign: "spring",
            landingPage: "https://example.com/pricing",
            visitors: 1,
          },
        ]),
      );
      expect(
        JSON.stringify(await store.newVisitorRollup(site.id, "2000-01-01", "2100-01-01")),
      ).not.toContain(EMAIL);
      // The same visitor erased again moves nothing twice.
      await store.eraseVisitors(site.id, ["v_ada"], ["v_ada"]);
      expect((await rows()).reduce((n, r) => n + r.visitors, 0)).toBe(keepsRollups ? 3 : 2);
    });

    it("erasing a visitor removes its id from the rollup (a store with rollups keeps the counts, one without counts what is left)", async () => {
      const { account, site } = await newSite();
      const pv = (visitorId: string) =>
        event(site.id, "pageview", { visitorId, ts: T0 + 1, receivedAt: T0 + 1 });
      await store.commitEvents([
        group(account.id, [pv("v1"), pv("v2")], {
          ceiling: 1000,
          touches: [touch(site.id, "v1", { ts: T0 + 1 })],
        }),
      ]);
      await store.eraseVisitors(site.id, ["v1"], ["v1"]);
      const day = ["2025-06-01", "2025-06-02"] as const;
      expect(await store.trafficRollup(site.id, ...day)).toEqual([
        { day: "2025-06-01", visitors: keepsRollups ? 2 : 1, pageviews: keepsRollups ? 2 : 1 },
      ]);
      expect((await store.newVisitorRollup(site.id, ...day)).map((r) => r.visitors)).toEqual(
        keepsRollups ? [1] : [],
      );
      // The set no longer knows v1 that day: the same id seen again counts as a visitor again.
      await store.commitEvents([group(account.id, [pv("v1"), pv("v2")], { ceiling: 1000 })]);
      expect(await store.trafficRollup(site.id, ...day)).toEqual([
        { day: "2025-06-01", visitors: keepsRollups ? 3 : 2, pageviews: keepsRollups ? 4 : 3 },
      ]);
    });
  });
}
