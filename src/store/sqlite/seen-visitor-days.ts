/**
 * The visitors this process knows are already in visitor_days, per (site,
 * day), so the traffic rollup does not insert them again. A visitor sends
 * many events a day (a pageview per page, custom events, re-sends), and each
 * insert into the set is a B-tree search even when it is ignored; with this
 * memory only a visitor's first batch of a day pays it (docs/dashboard.md,
 * Performance).
 *
 * A visitor is remembered only after the transaction that inserted (or
 * found) it committed, so a rolled-back batch leaves nothing behind; one the
 * memory lost is inserted again and ignored, so the count stays exact
 * whatever it forgets. Bounded: when full it forgets everything at once (a
 * Set per (site, day) looked up once per batch, then one Set.has per visitor
 * with the id string as it came: no key to build, unlike an LRU of composite
 * keys, which cost more in a profile than the inserts it saved). Emptied
 * when an erasure deletes visitor ids from the set, so an erased visitor who
 * comes back that day is counted again, as without it. Rows the retention
 * pruner deletes are of days no new event can fall in.
 */

/** At most this many visitors: about 10 MB, a day of 100,000 visitors' traffic. */
export const SEEN_VISITOR_DAYS_MAX = 100_000;

/** What the events' commit and the erasure share. */
export interface SeenVisitorDays {
  /** The visitors of a site's day known to be in the set (empty when none). */
  of(siteId: string, day: string): ReadonlySet<string>;
  /** Visitors of a committed transaction. */
  remember(siteId: string, day: string, visitorIds: readonly string[]): void;
  /** Forgets every visitor: an erasure deleted ids from the set. */
  clear(): void;
}

const NONE: ReadonlySet<string> = new Set();

/** An empty memory of at most `max` visitors. */
export function createSeenVisitorDays(max = SEEN_VISITOR_DAYS_MAX): SeenVisitorDays {
  let days = new Map<string, Set<string>>();
  let size = 0;
  const keyOf = (siteId: string, day: string) => `${siteId}\u0000${day}`;
  return {
    of: (siteId, day) => days.get(keyOf(siteId, day)) ?? NONE,
    remember(siteId, day, visitorIds) {
      if (visitorIds.length === 0) return;
      if (size + visitorIds.length > max) {
        days = new Map();
        size = 0;
      }
      const key = keyOf(siteId, day);
      let set = days.get(key);
      if (!set) {
        set = new Set();
        days.set(key, set);
      }
      for (const v of visitorIds) {
        if (size >= max) break;
        if (!set.has(v)) {
          set.add(v);
          size += 1;
        }
      }
    },
    clear() {
      days = new Map();
      size = 0;
    },
  };
}
