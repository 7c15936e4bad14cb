/**
 * How the engine counts a traffic statement's distinct visitors: by bitmaps
 * of their dense numbers (visitor-numbers.ts) or by a hash of their keys
 * (semantic-layer.ts, `VisitorCount`), chosen per statement before it runs.
 */
import type {
  DimensionName,
  Interval,
  QueryPlan,
  TimeGrain,
} from "../../domain/analytics/query-plan.js";
import { CHANNELS } from "../../domain/attribution/channels.js";
import type { QueryReads } from "./read-memo.js";
import {
  bitmapsInParts,
  bitmapVisitors,
  DIMENSIONS,
  HASHED_VISITORS,
  type VisitorCount,
} from "./semantic-layer.js";
import { ofSite, type WithSiteNumber } from "./site-numbers.js";

/**
 * Bits a traffic statement's visitor bitmaps may take in all, per thread
 * (DuckDB counts them against its memory limit; each thread aggregates its
 * own groups): 32 MiB, e.g. 266 groups at 1M visitors, 26 at 10M. The
 * engine's option `bitmaps` changes it (tests make it small).
 */
export const BITMAP_BITS = 32 * 1024 * 1024 * 8;

/**
 * At most how many parts a breakdown's bitmaps are split in, each counting a
 * range of the numbers in a statement of its own (semantic-layer.ts,
 * `bitmapsInParts`): each part scans the period's rows again, but counts
 * only its range's. Top pages over 90 days at 100M events (10M visitors, 151
 * pages: 6 parts) took 2.2 s in 7 parts by raw SQL, against 11.5 s by key.
 */
export const MAX_BITMAP_PARTS = 8;

/**
 * Numbers past the site's highest when the statement was made that its
 * bitmaps still cover (1 KiB a group): the feed may number new visitors
 * between the read of the highest and the statement's snapshot. Past them
 * the statement fails and is counted by key (the engine's runPeriod).
 */
export const BITMAP_HEADROOM = 8_192;

/** The shortest bucket of each time grain, in ms (a day of 23 hours, a month of 28 days). */
const GRAIN_MIN_MS: Record<TimeGrain, number> = {
  hour: 3_600_000,
  day: 82_800_000,
  week: 7 * 82_800_000,
  month: 28 * 86_400_000,
};

/**
 * Dimensions whose values are few by rule, so no count is needed: the
 * channels and the device types (src/domain/events/user-agent.ts); `(none)`
 * one more. (Countries are two letters, but 677 of them bound at 1M visitors
 * is past the bits: they are counted, about 20 in a site's period.)
 */
const FEW_VALUES: Partial<Record<DimensionName, number>> = {
  channel: CHANNELS.length + 1,
  device: 9,
};

/**
 * How a traffic statement over `dims` counts distinct visitors: by bitmaps of
 * the visitors' dense numbers (visitor-numbers.ts) when the groups times the
 * site's numbers fit {@link BITMAP_BITS}; by such bitmaps in parts when they
 * fit it in at most {@link MAX_BITMAP_PARTS} (each part a range of the
 * numbers: the statement then runs once per part, and the engine counts by
 * parts only where its metrics add up across them, else by key); else by a
 * hash of their keys.
 * Measured at 10M events (docs/performance.md, "Dense visitor numbers"):
 * the bitmaps win where many (group, visitor) pairs are hashed (top pages
 * over 90 days 1.15 s → 0.65 s, channels 0.70 → 0.40), filtered ones too
 * (countries where the page is /pricing: 170 ms → 105; browsers where the
 * country is DE paid the count of their values, 60 → 85 ms, until the
 * values were kept: 56–66 ms). A total alone over events keeps
 * the hash (one group: the bitmap is no
 * faster over 30 or 90 days, slower over 7; over whole visits it is faster,
 * `wholeVisits`). The groups are bounded before the statement runs: a time grain's
 * buckets in the period; {@link FEW_VALUES}; else a column's distinct values
 * in the period, kept across writes and grown by the events since
 * (value-sets.ts); a property's
 * are not bounded (a hash).
 */
export async function visitorCount(
  q: QueryReads,
  plan: WithSiteNumber<QueryPlan>,
  period: Interval,
  dims: DimensionName[],
  /**
   * The statement reads the period's whole visits from `visits` (a row per
   * visit, not per event): there a total alone wins by bitmap too (the
   * summary's visitors and converted visitors over 30 days at 10M events:
   * 93 ms → 60 by raw SQL), as the visits are fewer rows than the events.
   */
  wholeVisits = false,
): Promise<VisitorCount> {
  if (dims.length === 0 && !wholeVisits) return HASHED_VISITORS;
  const top = await highestNumber(q, plan.siteId);
  if (top === undefined) return HASHED_VISITORS;
  // Rounded up to a multiple of the headroom: the statement's text (the
  // bitmaps' width) stays the same while the site numbers new visitors, so a
  // statement whose answer outlives a write (read-memo.ts) is found again.
  const headroom = q.bitmaps?.headroom ?? BITMAP_HEADROOM;
  const highest = Math.ceil((top + headroom + 1) / headroom) * headroom - 1;
  const bits = highest + 1;
  const budget = q.bitmaps?.bits ?? BITMAP_BITS;
  // The grand total's group beside the rows' (grouping sets).
  let groups = 1;
  for (const d of dims) {
    const n = FEW_VALUES[d] ?? (await dimensionBound(q, plan, period, d, bits, budget));
    if (n === undefined) return HASHED_VISITORS;
    groups *= n;
    if (groups * bits > budget * MAX_BITMAP_PARTS) return HASHED_VISITORS;
  }
  const parts = Math.ceil(((groups + 1) * bits) / budget);
  if (parts <= 1) return bitmapVisitors(highest);
  // A total alone is one group: it always fits.
  return parts <= MAX_BITMAP_PARTS ? bitmapsInParts(highest, parts) : HASHED_VISITORS;
}

/** The site's highest visitor number (visitor-numbers.ts), read through the memo; undefined when it has none. */
export async function highestNumber(q: QueryReads, siteId: string): Promise<number | undefined> {
  const [top] = (
    await q.rows("SELECT max(dv) FROM visitor_numbers WHERE site_id = $1", [siteId])
  )[0] ?? [null];
  return top === null || top === undefined ? undefined : Number(top);
}

/** At most how many values a traffic dimension takes in the period; undefined when unknown. */
async function dimensionBound(
  q: QueryReads,
  plan: WithSiteNumber<QueryPlan>,
  period: Interval,
  d: DimensionName,
  /** The bits of each group's bitmap: past that many parts of the budget, the count no longer matters. */
  bits: number,
  /** The bits a statement's bitmaps may take. */
  budget: number,
): Promise<number | undefined> {
  if (d.startsWith("time:")) {
    return Math.ceil((period.to - period.from) / GRAIN_MIN_MS[d.slice(5) as TimeGrain]) + 2;
  }
  const traffic = DIMENSIONS[d as keyof typeof DIMENSIONS]?.traffic;
  if (traffic === "NULL") return 1;
  const column = /^x\.(\w+)$/.exec(traffic ?? "")?.[1];
  if (column === undefined) return undefined;
  // The values kept for the period, grown by the events since (value-sets.ts); `(none)` one more.
  if (q.valueSets) {
    const cap = Math.floor((budget * MAX_BITMAP_PARTS) / bits);
    return (await q.valueSets.bound(q, plan.siteId, plan.sn, column, period, cap)) + 1;
  }
  // Without a memo (a test's stand-in store): counted each time, a visit's
  // column from the visits the period reaches, an event's from its events.
  const sql = column.startsWith("v_")
    ? `SELECT count(DISTINCT ${column}) FROM visits WHERE ${ofSite("", plan.sn)} AND v_end >= $1 AND v_start < $2`
    : `SELECT count(DISTINCT ${column}) FROM events WHERE ${ofSite("", plan.sn)} AND ts >= $1 AND ts < $2`;
  const [n] = (await q.rows(sql, [BigInt(period.from), BigInt(period.to)]))[0] ?? [0];
  return Number(n) + 1;
}
