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
 * entries simply stop being asked for; the memory is bounded and starts
 * again empty when full.
 */
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
  const maxVisitors = options.maxVisitors ?? MAX_VISITORS;
  // Site → visitor → touch: no key string to build per event.
  const known = new Map<string, Map<string, VisitorTouch>>();
  let size = 0;
  return {
    filter(touches) {
      if (size === 0) return touches;
      return touches.filter((t) => {
        const k = known.get(t.siteId)?.get(t.visitorId);
        return k === undefined || isBetterTouch(t, k);
      });
    },
    remember(touches) {
      for (const t of touches) {
        let visitors = known.get(t.siteId);
        if (!visitors) {
          visitors = new Map();
          known.set(t.siteId, visitors);
        }
        const k = visitors.get(t.visitorId);
        if (k !== undefined && !isBetterTouch(t, k)) continue;
        if (k === undefined) {
          // Full: start again (the store stays right; only some upserts come back for a while).
          if (size >= maxVisitors) {
            known.clear();
            size = 0;
            visitors = new Map();
            known.set(t.siteId, visitors);
          }
          size += 1;
        }
        visitors.set(t.visitorId, t);
      }
    },
  };
}
