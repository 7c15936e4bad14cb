/**
 * The cap on visitors linked to one user id, once for every store.
 *
 * `$identify` is not counted against the quota, so without a cap one caller
 * could link one user id to any number of visitors and make every payment of
 * that user (and every later identify) read and write all of them. Past the
 * cap a new visitor is linked only when its first touch, as known when the
 * link is written, beats the weakest linked visitor's, which it then
 * replaces. The set of kept visitors therefore always holds the user's best
 * first touch, so first-touch attribution stays correct, and attributing a
 * payment reads a bounded number of visitors.
 *
 * A store reads what the rule needs (the linked visitors, and their touches
 * only when a new visitor is past the cap), asks `planLinks`, and writes the
 * plan; it never decides itself.
 */
import { isBetterTouch, type TouchRank } from "./ranking.js";

/** Most visitors one user id (per site) is linked to. */
export const MAX_VISITORS_PER_USER = 100;

/**
 * The linked visitor a new visitor replaces when the user id is at the cap,
 * or undefined when the new one is not linked. A visitor without a touch is
 * weaker than any with one; ties keep what is linked.
 */
export function visitorToReplace(
  linked: readonly { visitorId: string; touch?: TouchRank }[],
  candidate: TouchRank | undefined,
): string | undefined {
  if (candidate === undefined || linked.length === 0) return undefined;
  let weakest = linked[0] as (typeof linked)[number];
  for (const l of linked) {
    if (weakest.touch === undefined) break;
    if (l.touch === undefined || isBetterTouch(weakest.touch, l.touch)) weakest = l;
  }
  return weakest.touch === undefined || isBetterTouch(candidate, weakest.touch)
    ? weakest.visitorId
    : undefined;
}

/** What to write for one user id: the visitors to link and the linked ones to unlink. */
export interface LinkPlan {
  /** Candidates that are (or stay) linked, each once, in first-seen order. */
  link: string[];
  /** Visitors linked before that the plan replaces. */
  unlink: string[];
}

/**
 * Plans the links of one user id, the candidates taken in order as if each
 * were written alone. `linked` is what is stored: the store reads at most
 * MAX_VISITORS_PER_USER + candidates.length of them, enough to see whether
 * the cap is reached. `touchOf` gives first touches (of linked visitors and
 * candidates); without it, the plan is undefined when it would need one (a
 * new visitor past the cap), so a store reads touches only then.
 */
export function planLinks(
  linked: Iterable<string>,
  candidates: readonly string[],
  touchOf?: (visitorId: string) => TouchRank | undefined,
): LinkPlan | undefined {
  const before = new Set(linked);
  const now = new Set(before);
  for (const v of candidates) {
    if (now.has(v) || now.size < MAX_VISITORS_PER_USER) {
      now.add(v);
      continue;
    }
    if (touchOf === undefined) return undefined;
    const replaced = visitorToReplace(
      [...now].map((visitorId) => ({ visitorId, touch: touchOf(visitorId) })),
      touchOf(v),
    );
    if (replaced === undefined) continue;
    now.delete(replaced);
    now.add(v);
  }
  return {
    link: [...new Set(candidates)].filter((v) => now.has(v)),
    unlink: [...before].filter((v) => !now.has(v)),
  };
}

/** Links grouped by (site, user id), in first-seen order: the unit the cap applies to. */
export function linksByUser<L extends { siteId: string; userId: string }>(
  links: readonly L[],
): L[][] {
  const byUser = new Map<string, L[]>();
  for (const l of links) {
    const key = `${l.siteId}\u0000${l.userId}`;
    const group = byUser.get(key);
    if (group) group.push(l);
    else byUser.set(key, [l]);
  }
  return [...byUser.values()];
}
