/**
 * The traffic side of SiteOverview (visitors and pageviews per day, new
 * visitors by first touch) read exactly for any period: the whole UTC days
 * of the period from the daily rollups the ingestion keeps, and what is left
 * at either end (at most two partial days) from the stored rows. The
 * dashboard's periods are whole days, so they read rollups only.
 */
import type { DailyTraffic, NewVisitorCount, Store } from "./store/store.js";

const DAY_MS = 86_400_000;
/** 0001-01-01 and 9999-12-31, UTC: the first and last days with a four-digit year. */
const FIRST_DATED = -62_135_596_800_000;
const END_DATED = 253_402_214_400_000;

/** A period [from, to) in Unix milliseconds. */
export interface Span {
  from: number;
  to: number;
}

/** How a period is read: whole UTC days from the rollups, the rest from the stored rows. */
export interface PeriodSplit {
  /** Whole UTC days, `YYYY-MM-DD`: [fromDay, toDay). Absent when the period holds none. */
  days?: { fromDay: string; toDay: string };
  /** The parts of partial days (at most two), read raw. */
  edges: Span[];
}

/** The last day converted: the rows of one write are mostly of one day, and the conversion costs a µs. */
let lastDay = { n: Number.NaN, day: "" };

/** The UTC day (YYYY-MM-DD) of a Unix-millisecond time: the day rollups and reports count on. */
export function utcDay(ts: number): string {
  const n = Math.floor(ts / DAY_MS);
  if (n !== lastDay.n) lastDay = { n, day: new Date(n * DAY_MS).toISOString().slice(0, 10) };
  return lastDay.day;
}

/** Splits [from, to) into its whole UTC days and the partial days at its ends. */
export function splitPeriod(from: number, to: number): PeriodSplit {
  // Days have a YYYY-MM-DD only in years 1 to 9999: beyond, the edges are read raw.
  const clamp = (ms: number) => Math.min(Math.max(ms, FIRST_DATED), END_DATED);
  const firstWhole = clamp(Math.ceil(from / DAY_MS) * DAY_MS);
  const endWhole = clamp(Math.floor(to / DAY_MS) * DAY_MS);
  // No whole day inside: one raw read covers the one or two partial days.
  if (firstWhole >= endWhole) return { edges: to > from ? [{ from, to }] : [] };
  const edges: Span[] = [];
  if (from < firstWhole) edges.push({ from, to: firstWhole });
  if (endWhole < to) edges.push({ from: endWhole, to });
  return { days: { fromDay: utcDay(firstWhole), toDay: utcDay(endWhole) }, edges };
}

/** Visitors and pageviews per UTC day of [from, to), oldest first; days without events are absent. */
export async function trafficOfPeriod(
  store: Store,
  siteId: string,
  from: number,
  to: number,
  /** Where the stored events are (the engine on SQLite: analytics/event-reads.ts). */
  events: Pick<Store, "trafficByDay" | "trafficRollup"> = store,
): Promise<DailyTraffic[]> {
  const { days, edges } = splitPeriod(from, to);
  const parts = await Promise.all([
    days ? events.trafficRollup(siteId, days.fromDay, days.toDay) : [],
    ...edges.map((e) => events.trafficByDay(siteId, e.from, e.to)),
  ]);
  // The parts cover distinct days: a day is whole (rollup) or an edge (raw), never both.
  return parts.flat().sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
}

const dimensions = (v: NewVisitorCount) =>
  JSON.stringify([v.channel, v.source ?? null, v.campaign ?? null, v.landingPage]);

/** New visitors (first touches) of [from, to), per first-touch channel, source, campaign and landing page. */
export async function newVisitorsOfPeriod(
  store: Store,
  siteId: string,
  from: number,
  to: number,
): Promise<NewVisitorCount[]> {
  const { days, edges } = splitPeriod(from, to);
  const parts = await Promise.all([
    days ? store.newVisitorRollup(siteId, days.fromDay, days.toDay) : [],
    ...edges.map((e) => store.newVisitorCounts(siteId, e.from, e.to)),
  ]);
  // The same first-touch dimensions appear in several parts: their counts add up.
  const merged = new Map<string, NewVisitorCount>();
  for (const v of parts.flat()) {
    const key = dimensions(v);
    const seen = merged.get(key);
    if (seen) seen.visitors += v.visitors;
    else merged.set(key, { ...v });
  }
  return [...merged.values()].filter((v) => v.visitors > 0);
}
