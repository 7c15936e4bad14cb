/**
 * First touches this process knows to be stored, so a pageview that cannot
 * improve its visitor's touch skips the store's first-touch upsert (it was a
 * tenth of a batched event's CPU, docs/performance.md).
 *
 * What is remembered is a lower bound: after a group commits, its visitor's
 * stored touch is this touch or a better one. Stored touches only ever get
 * better (the store's upsert keeps the best, whatever process writes), so the
 * bound stays true across processes and for as long as the data exists; a
 * candidate that does not beat the bound cannot beat the stored touch and
 * changes nothing. After a restart the memory is empty and every candidate
 * is written, as before. Visitor ids change with each UTC day's salt, so old
 * entries simply stop being asked for and leave the bounded map
 * (src/lib/bounded-map.ts) first.
 */
import { createBoundedMap } from "../../lib/bounded-map.js";
import type { VisitorTouch } from "../store/records.js";
import { isBetterTouch } from "./ranking.js";

/** Most visitors remembered per process (~100 bytes each). */
const MAX_VISITORS = 50_000;

export interface KnownTouches {
  /** The candidates that may improve their visitor's stored touch (the others change nothing). */
  filter(touches: VisitorTouch[]): VisitorTouch[];
  /** Records touches of a group the store has durably committed. */
  remember(touches: VisitorTouch[]): void;
}

export function createKnownTouches(options: { maxVisitors?: number } = {}): KnownTouches {
  // By visitor id alone, so no key string is built per event: a visitor id is
  // a hash that includes its site, and a touch of another site with the same
  // id (a collision, or a test) is simply not a bound for this one.
  const known = createBoundedMap<string, VisitorTouch>(options.maxVisitors ?? MAX_VISITORS);
  let empty = true;
  return {
    filter(touches) {
      if (empty) return touches;
      return touches.filter((t) => {
        const k = known.get(t.visitorId);
        return k === undefined || k.siteId !== t.siteId || isBetterTouch(t, k);
      });
    },
    remember(touches) {
      for (const t of touches) {
        const k = known.get(t.visitorId);
        if (k !== undefined && k.siteId === t.siteId && !isBetterTouch(t, k)) continue;
        known.set(t.visitorId, t);
        empty = false;
      }
    },
  };
}
