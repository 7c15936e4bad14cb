/**
 * Revenue attribution: a paying customer is credited to the first touch of
 * the visitors linked to it, and re-credited when a link or an earlier touch
 * arrives later.
 */

import type { Clock } from "../clock.js";
import type {
  Attribution,
  CustomerVisitorLink,
  EventGroup,
  EventGroupResult,
  LinkKind,
  Store,
  VisitorTouch,
} from "../store/store.js";
import { attributionRank, creditedTouch, linkRank, UNATTRIBUTED_RANK } from "./ranking.js";
import { customerVisitorIds, joinStitchedVisitors } from "./stitched-visitors.js";

export interface Attributor {
  /**
   * Recomputes and stores the attribution of a customer and all its
   * payments. Idempotent: the same links and touches give the same result.
   */
  attributeCustomer(siteId: string, customerId: string): Promise<Attribution | undefined>;
  /** Re-attributes the customers a batch of events may change (new links, new first touches). */
  afterEvents(groups: EventGroup[], results: EventGroupResult[]): Promise<void>;
  /** Attributes the customers of a batch of payments. */
  afterPayments(customers: { siteId: string; customerId: string }[]): Promise<void>;
}

/** The attribution a touch gives, found through a link of kind `via`. */
function attributionOf(t: VisitorTouch, via: LinkKind): Attribution {
  return {
    channel: t.channel,
    landingPage: t.landingPage,
    visitorId: t.visitorId,
    via,
    touchedAt: t.ts,
    ...(t.source !== undefined ? { source: t.source } : {}),
    ...(t.medium !== undefined ? { medium: t.medium } : {}),
    ...(t.campaign !== undefined ? { campaign: t.campaign } : {}),
  };
}

export function createAttributor(deps: { store: Store; clock: Clock }): Attributor {
  const { store, clock } = deps;

  async function attributeCustomer(siteId: string, customerId: string) {
    const customer = await store.getCustomer(siteId, customerId);
    if (!customer) return undefined;

    // Links, strongest first: the visitors `$identify` tied to the customer's
    // user_id, the customer's visitor_id, then what earlier payments linked.
    const links = new Map<string, LinkKind>();
    const add = (visitorId: string, via: LinkKind) => {
      const cur = links.get(visitorId);
      if (cur === undefined || linkRank(via) < linkRank(cur)) links.set(visitorId, via);
    };
    if (customer.userId) {
      for (const l of await store.findVisitorsByUser(siteId, customer.userId)) {
        add(l.visitorId, "user_id");
      }
    }
    // A daily id, a vid from the ingest_vid cookie or its stored form p:<vid>.
    for (const id of await customerVisitorIds(store, siteId, customer.visitorId)) {
      add(id, "visitor_id");
    }
    const fresh: CustomerVisitorLink[] = [...links].map(([visitorId, via]) => ({
      visitorId,
      via,
      linkedAt: clock.now(),
    }));
    for (const known of await store.getCustomerVisitors(siteId, customerId)) {
      add(known.visitorId, "customer");
    }
    // Persistent and daily ids of one browser are one visitor; remembered like the others.
    for (const visitorId of await joinStitchedVisitors(store, siteId, links)) {
      fresh.push({ visitorId, via: links.get(visitorId) as LinkKind, linkedAt: clock.now() });
    }
    // Nothing to write: links are only ever added, so a customer with none was never
    // attributed, and its payments were stored unattributed. Most server-side payments
    // (a webhook naming no visitor) end here, without a write transaction of their own.
    if (links.size === 0 && customer.attribution === undefined) return undefined;

    const credited = creditedTouch(
      await store.getFirstTouches(siteId, [...links.keys()]),
      (visitorId) => links.get(visitorId) as LinkKind,
    );
    const best = credited && attributionOf(credited.touch, credited.via);
    // Conditional: a writer that read older links and touches cannot replace
    // a better attribution another process stored meanwhile.
    const rank = credited
      ? attributionRank(credited.touch, credited.via, credited.touch.visitorId)
      : UNATTRIBUTED_RANK;
    await store.setAttribution(siteId, customerId, best, rank);
    // Remembered so a later payment that names another visitor keeps this one. Written after
    // the attribution: a write may wait for its disk sync (SQLite), and a wait between the
    // reads above and the attribution they give would widen the window in which another
    // process stores a better attribution that this one then replaces.
    await store.linkCustomerVisitors(siteId, customerId, fresh);
    return best;
  }

  return {
    attributeCustomer,

    async afterEvents(groups, results) {
      const bySite = new Map<string, { visitorIds: string[]; userIds: string[] }>();
      const entry = (siteId: string) => {
        let e = bySite.get(siteId);
        if (!e) {
          e = { visitorIds: [], userIds: [] };
          bySite.set(siteId, e);
        }
        return e;
      };
      groups.forEach((g, i) => {
        const r = results[i];
        if (!r?.ok) return;
        for (const l of g.links) {
          entry(l.siteId).userIds.push(l.userId);
        }
        // A new stitch joins two visitors: customers of either may have a better touch now.
        for (const st of g.stitches ?? []) {
          entry(st.siteId).visitorIds.push(st.visitorId, st.persistentId);
        }
        const siteId = g.events[0]?.siteId;
        if (siteId && r.firstTouches) entry(siteId).visitorIds.push(...r.firstTouches);
      });
      for (const [siteId, query] of bySite) {
        for (const customerId of await store.findCustomersToReattribute(siteId, query)) {
          await attributeCustomer(siteId, customerId);
        }
      }
    },

    async afterPayments(customers) {
      const seen = new Set<string>();
      for (const c of customers) {
        const k = `${c.siteId}\u0000${c.customerId}`;
        if (seen.has(k)) continue;
        seen.add(k);
        await attributeCustomer(c.siteId, c.customerId);
      }
    },
  };
}
