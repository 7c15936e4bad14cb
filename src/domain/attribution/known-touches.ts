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
 * entries simply stop being asked for; the map is bounded and drops its
 * oldest entries.
 */
import type { VisitorTouch } from "../../store/port.js";
import { isBetter } from "./touches.js";

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
  const known = new Map<string, VisitorTouch>();
  const keyOf = (t: VisitorTouch) => `${t.siteId}\u0000${t.visitorId}`;
  return {
    filter(touches) {
      if (known.size === 0) return touches;
      return touches.filter((t) => {
        const k = known.get(keyOf(t));
        return k === undefined || isBetter(t, k);
      });
    },
    remember(touches) {
      for (const t of touches) {
        const key = keyOf(t);
        const k = known.get(key);
        if (k !== undefined && !isBetter(t, k)) continue;
        if (k === undefined && known.size >= maxVisitors) {
          known.delete(known.keys().next().value as string);
        }
        known.set(key, t);
      }
    },
  };
}
