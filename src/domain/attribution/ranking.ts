/**
 * The ranking rules of attribution, once: which touch of a visitor is its
 * first touch, which link to a customer is stronger, and the rank of a whole
 * attribution. Stores that must apply a rule inside the database (SQLite's
 * upsert condition, MongoDB's update pipeline) translate it there; their
 * tests check the translation against these functions.
 */
import type { VisitorTouch } from "../store/records.js";
import { LINK_KINDS, type LinkKind } from "../vocabulary.js";

export { LINK_KINDS };

/** The rank of a link kind: lower is stronger. */
export function linkRank(kind: LinkKind): number {
  return LINK_KINDS.indexOf(kind);
}

/** What decides between two touches of a visitor. */
export type TouchRank = Pick<VisitorTouch, "internal" | "ts">;

/** Whether `a` replaces `b`: non-internal beats internal, then the earlier wins (ties keep `b`). */
export function isBetterTouch(a: TouchRank, b: TouchRank | undefined): boolean {
  if (b === undefined) return true;
  if (a.internal !== b.internal) return !a.internal;
  return a.ts < b.ts;
}

/**
 * The order of first touches: earliest first, then by visitor id. Stores
 * return a visitor's touches in any order; the domain sorts them.
 */
export function byTimeThenVisitor(
  a: Pick<VisitorTouch, "ts" | "visitorId">,
  b: Pick<VisitorTouch, "ts" | "visitorId">,
): number {
  return a.ts - b.ts || (a.visitorId < b.visitorId ? -1 : a.visitorId > b.visitorId ? 1 : 0);
}

/**
 * The touch a customer is credited to, among the first touches of its
 * linked visitors (`via` says how each visitor is linked): a non-internal
 * touch first, then the earlier one, then the stronger link, then the
 * visitor id; undefined when there is none.
 */
export function creditedTouch<T extends VisitorTouch>(
  touches: readonly T[],
  via: (visitorId: string) => LinkKind,
): { touch: T; via: LinkKind } | undefined {
  let best: { touch: T; via: LinkKind } | undefined;
  for (const touch of [...touches].sort(byTimeThenVisitor)) {
    const v = via(touch.visitorId);
    const better =
      best === undefined ||
      isBetterTouch(touch, best.touch) ||
      (touch.internal === best.touch.internal &&
        touch.ts === best.touch.ts &&
        linkRank(v) < linkRank(best.via));
    if (better) best = { touch, via: v };
  }
  return best;
}

/** The rank of "unattributed": after every attribution. */
export const UNATTRIBUTED_RANK = "~";

/**
 * The rank of an attribution as a string that sorts like the rule that
 * chose it (lower is better): a non-internal touch first, then the earlier
 * touch, then the stronger link, then the visitor id (getFirstTouches'
 * order, which decides between equals). A store compares ranks to refuse a
 * stale writer: links and touches only ever get better, so an attribution
 * computed from newer data never ranks worse than one from older data.
 */
export function attributionRank(
  touch: Pick<VisitorTouch, "internal" | "ts">,
  via: LinkKind,
  visitorId: string,
): string {
  // 16 digits hold every millisecond time up to the year 318857.
  const ts = String(Math.max(0, Math.trunc(touch.ts))).padStart(16, "0");
  return `${touch.internal ? 1 : 0}:${ts}:${linkRank(via)}:${visitorId}`;
}
