/**
 * The values a traffic column takes in a period, kept across writes and
 * grown by the events appended since: before a breakdown counts visitors by
 * bitmaps, the engine bounds its groups by them (visitor-count.ts). Counting
 * them afresh took 20–40 ms of every breakdown at 10M events over 90 days
 * (`count(DISTINCT page)` over the events, `count(DISTINCT v_source)` over
 * the visits), as much again as a filtered one's own statement costs; once a
 * period's values are kept, the events appended since are read alone (about
 * 2 ms: the events are stored in the order of `seq`, so the scan skips every
 * block below the last one read).
 *
 * - An events column (`page`, `country`…): its values among the site's events
 *   in the period, then those of the events appended since in the period.
 * - A visit's column (`v_source`, `v_landing_page`…): its values among the
 *   visits the period reaches, then those of the events column it is taken
 *   from (visits-maintenance.ts: a visit's source is one of its events'
 *   sources, its landing and exit pages two of its pages) among all the
 *   site's events appended since, whatever their time: an appended event
 *   makes or changes visits in the same transaction, and only with its own
 *   values or those of visits already there.
 *
 * A bound, not an answer: it decides how visitors are counted, never what
 * the count is (both ways count exactly). It stays a bound through every
 * write: appended events have higher `seq` (SQLite's, never reused; the feed
 * moves them in order) and are read next time; an erasure or retention only
 * removes values, and every kept value is let go once it ends (`sweep`), so
 * no erased value stays in memory. A value it
 * could miss (an event appended below the highest `seq` read; two visits
 * joined by a late event into one that now reaches the period) would only
 * let one more group's bitmap be made than the memory budget planned.
 */
import type { DuckDBValue } from "@duckdb/node-api";
import type { Interval } from "../../domain/analytics/query-plan.js";
import { periodScope, type QueryReads } from "./read-memo.js";
import { ofSite } from "./site-numbers.js";

/** A traffic column's kept values in one period. */
interface Kept {
  /** Its values (NULL not among them), or undefined when there were more than a cap. */
  values?: Set<string>;
  /** How many past the cap, when there were more (a bound from then on: see `bound`). */
  many: number;
  /** The highest `seq` stored (any site's) when the values were last read: later ones are new. */
  seq: bigint;
}

export interface ValueSets {
  /**
   * At least as many values as `column` (an events column, or a visit's
   * `v_…` one) takes among `siteId`'s traffic in `period`, NULL not counted:
   * exact while nothing was removed since it was read. Past `cap` any number
   * above it: a period found with more values than the cap keeps that answer
   * until it leaves the kept periods (the least recently used go first), as
   * the values of a site with many pages are not worth listing on every query.
   * Within the cap but past {@link MAX_KEPT_VALUES}, read afresh each time.
   */
  bound(
    q: QueryReads,
    siteId: string,
    /** The site's number in the file (site-numbers.ts): its rows are read by it. */
    sn: number,
    column: string,
    period: Interval,
    cap: number,
  ): Promise<number>;
  /** Lets go of every kept value if events were removed since (a write's end calls it). */
  sweep(): void;
}

/** The events column a visit's column is taken from (visits-maintenance.ts). */
const eventColumn = (column: string) =>
  column === "v_landing_page" || column === "v_exit_page" ? "page" : column.replace(/^v_/, "");

/**
 * The statement reading a column's values in a period and the highest `seq`
 * stored, with its parameters: all of them, or (`since`) those of the events
 * appended past that seq.
 */
function valuesRead(
  column: string,
  sn: number,
  period: Interval,
  since: bigint | undefined,
): { sql: string; values: DuckDBValue[] } {
  // Any site's highest: read from the blocks' statistics, not scanned.
  const top = "(SELECT max(seq) FROM events)";
  const site = ofSite("", sn);
  const span: DuckDBValue[] = [BigInt(period.from), BigInt(period.to)];
  if (!column.startsWith("v_")) {
    return since === undefined
      ? {
          sql: `SELECT list(DISTINCT ${column}), ${top} FROM events WHERE ${site} AND ts >= $1 AND ts < $2`,
          values: span,
        }
      : {
          sql: `SELECT list(DISTINCT ${column}), ${top} FROM events
            WHERE ${site} AND ts >= $1 AND ts < $2 AND seq > $3`,
          values: [...span, since],
        };
  }
  return since === undefined
    ? {
        sql: `SELECT list(DISTINCT ${column}), ${top} FROM visits
          WHERE ${site} AND v_end >= $1 AND v_start < $2`,
        values: span,
      }
    : {
        sql: `SELECT list(DISTINCT ${eventColumn(column)}), ${top} FROM events WHERE ${site} AND seq > $1`,
        values: [since],
      };
}

/**
 * The most values kept for one period: at most `maxPeriods` times this many
 * strings are held (a small site's bitmaps may hold tens of thousands of
 * groups, whose values are not worth holding).
 */
const MAX_KEPT_VALUES = 1024;

export interface ValueSetsOptions {
  /** At most this many (site, column, period) kept, the least recently used out. */
  maxPeriods?: number;
  /**
   * The feed's count of event removals (erasures, retention, deletions, a
   * rebuild: AnalyticsFeed.removals). When it moves, every kept value goes
   * ({@link ValueSets.sweep}): an erased page or source does not stay in
   * memory, and the values are read afresh.
   */
  removals?: () => number;
}

/** Creates the kept value sets of an engine. */
export function createValueSets(options: ValueSetsOptions = {}): ValueSets {
  const maxPeriods = options.maxPeriods ?? 256;
  const kept = new Map<string, Kept>();
  let removals = options.removals?.() ?? 0;
  const sweep = () => {
    const now = options.removals?.() ?? 0;
    if (now === removals) return;
    removals = now;
    kept.clear();
  };
  return {
    sweep,
    async bound(q, siteId, sn, column, period, cap) {
      sweep();
      if (!/^[a-z_]+$/.test(column)) throw new Error(`not a traffic column: ${column}`);
      const key = JSON.stringify([siteId, column, period.from, period.to]);
      const known = kept.get(key);
      if (known) {
        kept.delete(key);
        kept.set(key, known);
        if (!known.values) return known.many;
      }
      // Kept only if no removal was committed while it read (it may hold removed values).
      const stamp = options.removals?.() ?? 0;
      const read = valuesRead(column, sn, period, known?.seq);
      // A visit's new values come from events of any time (an exit page from one
      // after the period's end): that statement's answer lasts one generation.
      const scope = known && column.startsWith("v_") ? undefined : periodScope(siteId, period);
      const [row] = await q.rows(read.sql, read.values, scope);
      const [list = null, top = null] = row ?? [];
      const seen = valuesOf(list);
      if ((options.removals?.() ?? 0) !== stamp) {
        return new Set([...(known?.values ?? []), ...seen]).size;
      }
      // Another query may have grown the set meanwhile: a union, and the higher seq, stay a bound.
      const now = kept.get(key) ?? known ?? { values: new Set<string>(), many: 0, seq: -1n };
      for (const v of seen) now.values?.add(v);
      if (typeof top === "bigint" && top > now.seq) now.seq = top;
      const size = now.values?.size ?? now.many;
      if (now.values && size > cap) {
        now.many = size;
        now.values = undefined;
      }
      if (now.values && size > MAX_KEPT_VALUES) {
        // Within the bitmaps' budget but too many to hold: read afresh each time.
        kept.delete(key);
        return size;
      }
      kept.set(key, now);
      if (kept.size > maxPeriods) kept.delete(kept.keys().next().value as string);
      return size;
    },
  };
}

/** The values of a `list(DISTINCT …)` answer as strings, NULL left out (a NULL list: none). */
function valuesOf(v: DuckDBValue): string[] {
  const items =
    v !== null && typeof v === "object" && "items" in v ? (v.items as DuckDBValue[]) : [];
  return items.filter((x) => x !== null).map(String);
}
