/**
 * Erasure (the right to be forgotten): a customer, a user id or a visitor of
 * a site, removed on an owner's or admin's request. Used by AdminService and
 * the admin CLI. What each erasure removes and what remains is
 * docs/privacy.md; the stores do the removing (src/domain/store/erasure-port.ts).
 */

import { createHmac, randomBytes } from "node:crypto";
import type { StoredEventReads } from "./analytics/event-reads.js";
import type { Attributor } from "./attribution/attribute.js";
import { joinStitchedVisitors } from "./attribution/stitched-visitors.js";
import { errors } from "./errors.js";
import { publicVisitorId, visitorIdCandidates } from "./events/persistent-visitor.js";
import type { LinkKind, Store } from "./store/store.js";
import { KEY_MANAGERS } from "./vocabulary.js";

/** What a customer's erasure changed. */
export interface CustomerErased {
  customers: number;
  /** Payments kept under the pseudonym, without metadata. */
  payments: number;
  subscriptions: number;
  customerLinks: number;
}

/** What a user id's erasure removed (its customers' erasures included). */
export interface UserErased extends CustomerErased {
  identityLinks: number;
  events: number;
}

/** What a visitor's erasure removed, and how many customers were attributed again. */
export interface VisitorErased {
  events: number;
  touches: number;
  identityLinks: number;
  customerLinks: number;
  stitches: number;
  reattributedCustomers: number;
}

/**
 * The audit line of one erasure: which kind, the site, the acting user, the
 * keyed hash of the erased id (never the id) and the counts.
 */
export interface ErasureAudit {
  erasure: "customer" | "user" | "visitor";
  siteId: string;
  actorUserId: string;
  /** HMAC-SHA256 hex of the erased id under the installation's audit key ({@link auditIdHash}). */
  idHmac: string;
  counts: CustomerErased | UserErased | VisitorErased;
}

/** The audit line's fields as logged (snake_case, as the service's other log fields). */
export function erasureAuditFields(line: ErasureAudit): Record<string, unknown> {
  return {
    audit: "erasure",
    erasure: line.erasure,
    site_id: line.siteId,
    actor_user_id: line.actorUserId,
    id_hmac: line.idHmac,
    counts: line.counts,
  };
}

/**
 * The erased id as the audit line shows it: HMAC-SHA256 under the
 * installation's key (kept in the store, `Store.auditKey`). Whoever holds the
 * database can match a request's id against the line; whoever holds only
 * the logs cannot test guesses, as they could against a plain SHA-256.
 */
export function auditIdHash(key: Uint8Array, id: string): string {
  return createHmac("sha256", key).update(id).digest("hex");
}

/**
 * A customer id that stands for an erased customer: random, so nothing
 * (not even the service) can tell which customer it was.
 */
function pseudonym(): string {
  return `erased_${randomBytes(12).toString("hex")}`;
}

const NO_CUSTOMER: CustomerErased = {
  customers: 0,
  payments: 0,
  subscriptions: 0,
  customerLinks: 0,
};

/** The erasures, bound to a store, the attributor (re-credits customers) and the audit log. */
export function createErasure(deps: {
  store: Store;
  attributor: Pick<Attributor, "attributeCustomer">;
  /** Told of every erasure that ran, once, after it ran. */
  audit: (line: ErasureAudit) => void;
  /**
   * Counts the events the store no longer holds (the engine's, on SQLite:
   * analytics/event-reads.ts); the store's erasure logs their removal there.
   */
  countEvents?: StoredEventReads["countEvents"];
}) {
  const { store, attributor, audit, countEvents } = deps;

  /** The site exists and the actor is one of its account's owners or admins. */
  async function authorize(siteId: string, actorUserId: string): Promise<void> {
    if (!actorUserId) throw errors.invalid("the acting user id is required");
    const site = await store.getSite(siteId);
    if (!site) throw errors.siteNotFound(siteId);
    const role = await store.getRole(site.accountId, actorUserId);
    if (!role) throw errors.notMember(actorUserId, site.accountId);
    if (!KEY_MANAGERS.includes(role)) throw errors.notDataEraser(actorUserId, role);
    // The audit key is read before anything is erased: an erasure that ran is always logged.
    await auditKey();
  }

  function required(name: string, value: string): string {
    if (value === "") throw errors.invalid(`${name} is required`);
    return value;
  }

  // Read once per process; a failed read is tried again by the next erasure.
  let key: Promise<Uint8Array> | undefined;
  function auditKey(): Promise<Uint8Array> {
    key ??= store.auditKey().catch((err) => {
      key = undefined;
      throw err;
    });
    return key;
  }

  /** Logs the audit line of an erasure that ran, and hands its counts back. */
  async function audited<C extends ErasureAudit["counts"]>(
    erasure: ErasureAudit["erasure"],
    input: { siteId: string; actorUserId: string },
    id: string,
    counts: C,
  ): Promise<C> {
    audit({
      erasure,
      siteId: input.siteId,
      actorUserId: input.actorUserId,
      idHmac: auditIdHash(await auditKey(), id),
      counts,
    });
    return counts;
  }

  async function eraseCustomerIn(siteId: string, customerId: string): Promise<CustomerErased> {
    return store.eraseCustomer(siteId, customerId, pseudonym());
  }

  return {
    async eraseCustomer(input: {
      siteId: string;
      customerId: string;
      actorUserId: string;
    }): Promise<CustomerErased> {
      const customerId = required("customer_id", input.customerId);
      await authorize(input.siteId, input.actorUserId);
      return audited(
        "customer",
        input,
        customerId,
        await eraseCustomerIn(input.siteId, customerId),
      );
    },

    async eraseUser(input: {
      siteId: string;
      userId: string;
      actorUserId: string;
    }): Promise<UserErased> {
      const userId = required("user_id", input.userId);
      await authorize(input.siteId, input.actorUserId);
      // Counted before the erasure logs their removal (the engine applies it in order).
      const moved = countEvents ? await countEvents(input.siteId, { identifyUserId: userId }) : 0;
      const links = await store.eraseUserLinks(input.siteId, userId);
      const counts: UserErased = {
        identityLinks: links.identityLinks,
        events: moved + links.events,
        ...NO_CUSTOMER,
      };
      for (const customerId of links.customers) {
        const c = await eraseCustomerIn(input.siteId, customerId);
        counts.customers += c.customers;
        counts.payments += c.payments;
        counts.subscriptions += c.subscriptions;
        counts.customerLinks += c.customerLinks;
      }
      return audited("user", input, userId, counts);
    },

    async eraseVisitor(input: {
      siteId: string;
      visitorId: string;
      actorUserId: string;
    }): Promise<VisitorErased> {
      const visitorId = required("visitor_id", input.visitorId);
      await authorize(input.siteId, input.actorUserId);
      // A daily id, a vid or p:<vid>, with the ids stitched to it: attribution
      // takes them for one visitor (one browser), and so does erasure.
      const ids = new Map<string, LinkKind>(
        visitorIdCandidates(visitorId).map((id) => [id, "visitor_id"]),
      );
      await joinStitchedVisitors(store, input.siteId, ids);
      const stored = [...ids.keys()];
      // How a payment may have named them: the stored id, or a vid without its prefix.
      const names = [...new Set([visitorId, ...stored, ...stored.map(publicVisitorId)])];
      const moved = countEvents ? await countEvents(input.siteId, { visitorIds: stored }) : 0;
      const erased = await store.eraseVisitors(input.siteId, stored, names);
      const removed = { ...erased, events: moved + erased.events };
      for (const customerId of removed.customers) {
        await attributor.attributeCustomer(input.siteId, customerId);
      }
      const { customers, ...rest } = removed;
      return audited("visitor", input, visitorId, {
        ...rest,
        reattributedCustomers: customers.length,
      } satisfies VisitorErased);
    },
  };
}

export type Erasure = ReturnType<typeof createErasure>;
