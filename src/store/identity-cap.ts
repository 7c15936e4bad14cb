/**
 * The cap on visitors linked to one user id, shared by both adapters.
 *
 * `$identify` is not counted against the quota, so without a cap one caller
 * could link one user id to any number of visitors and make every payment of
 * that user (and every later identify) read and write all of them. Past the
 * cap a new visitor is linked only when its first touch, as known when the
 * link is written, beats the weakest linked visitor's, which it then
 * replaces. The set of kept visitors therefore always holds the user's best
 * first touch, so first-touch attribution stays correct, and attributing a
 * payment reads a bounded number of visitors.
 */
import type { VisitorTouch } from "./port.js";

/** Most visitors one user id (per site) is linked to. */
export const MAX_VISITORS_PER_USER = 100;

type Touch = Pick<VisitorTouch, "internal" | "ts">;

/** Whether touch `a` beats `b` for first-touch attribution: non-internal first, then earlier. */
function beats(a: Touch, b: Touch): boolean {
  if (a.internal !== b.internal) return !a.internal;
  return a.ts < b.ts;
}

/**
 * The linked visitor a new visitor replaces when the user id is at the cap,
 * or undefined when the new one is not linked. A visitor without a touch is
 * weaker than any with one; ties keep what is linked.
 */
export function visitorToReplace(
  linked: readonly { visitorId: string; touch?: Touch }[],
  candidate: Touch | undefined,
): string | undefined {
  if (candidate === undefined || linked.length === 0) return undefined;
  let weakest = linked[0] as (typeof linked)[number];
  for (const l of linked) {
    if (weakest.touch === undefined) break;
    if (l.touch === undefined || beats(weakest.touch, l.touch)) weakest = l;
  }
  return weakest.touch === undefined || beats(candidate, weakest.touch)
    ? weakest.visitorId
    : undefined;
}
