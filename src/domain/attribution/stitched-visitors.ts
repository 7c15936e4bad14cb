/**
 * One browser, two kinds of visitor id: a persistent id (`p:<vid>`) and the
 * daily ids stitched to it (src/domain/events/persistent-visitor.ts). For
 * attribution they are one visitor: a customer linked to either is linked to
 * the others, with the same link kind, so a payment credited through a
 * server-side `$identify` under a daily id finds the persistent visitor's
 * first touch of days before, and one through a persistent id finds the
 * landing pageview sent before consent.
 */
import { visitorIdCandidates } from "../events/persistent-visitor.js";
import type { LinkKind, Store } from "../store/store.js";
import { linkRank } from "./ranking.js";

/**
 * The stored visitor ids a payment's `customer.visitor_id` names (see
 * visitorIdCandidates). A value that is both a daily id's shape and a vid's
 * (32 lowercase hex characters) is the daily id, and also the persistent id
 * once that persistent visitor has a first touch: one primary-key read, so a
 * daily id does not drag a persistent id nobody uses into the customer's links.
 */
export async function customerVisitorIds(
  store: Pick<Store, "getFirstTouches">,
  siteId: string,
  value: string | undefined,
): Promise<string[]> {
  const ids = visitorIdCandidates(value ?? "");
  if (ids.length < 2) return ids;
  const [daily, persistent] = ids as [string, string];
  const touches = await store.getFirstTouches(siteId, [persistent]);
  return touches.length > 0 ? [daily, persistent] : [daily];
}

/**
 * Adds to `links` the visitors stitched to those in it: a daily id's
 * persistent id, then the daily ids of every persistent id (at most the
 * store's cap each). Two indexed reads at most. Returns the ids it added.
 */
export async function joinStitchedVisitors(
  store: Pick<Store, "findStitches">,
  siteId: string,
  links: Map<string, LinkKind>,
): Promise<string[]> {
  if (links.size === 0) return [];
  const added: string[] = [];
  const add = (visitorId: string, via: LinkKind) => {
    const cur = links.get(visitorId);
    if (cur === undefined) added.push(visitorId);
    if (cur === undefined || linkRank(via) < linkRank(cur)) links.set(visitorId, via);
  };
  const reached: string[] = [];
  for (const s of await store.findStitches(siteId, [...links.keys()])) {
    const daily = links.get(s.visitorId);
    const persistent = links.get(s.persistentId);
    if (daily !== undefined) {
      if (persistent === undefined) reached.push(s.persistentId);
      add(s.persistentId, daily);
    }
    if (persistent !== undefined) add(s.visitorId, persistent);
  }
  // Persistent ids reached through a daily id bring their other daily ids.
  if (reached.length > 0) {
    for (const s of await store.findStitches(siteId, reached)) {
      add(s.visitorId, links.get(s.persistentId) as LinkKind);
    }
  }
  return added;
}
