/** The erasure part of the store port: what a deletion request removes, store by store. */

/** What `eraseCustomer` changed. */
export interface CustomerErasure {
  /** Customer records deleted (0 or 1). */
  customers: number;
  /** Payments moved to the pseudonym, their metadata and attribution details removed. */
  payments: number;
  /** Subscriptions moved to the pseudonym. */
  subscriptions: number;
  /** Links from the customer to visitors deleted. */
  customerLinks: number;
}

/** What `eraseUserLinks` removed, and the customers that carry the user id. */
export interface UserLinksErasure {
  /** `$identify` links from visitors to the user id deleted. */
  identityLinks: number;
  /** `$identify` events carrying the user id deleted. */
  events: number;
  /** The customers whose user id it is (the caller erases them). */
  customers: string[];
}

/** What `eraseVisitors` removed, and the customers whose attribution it cleared. */
export interface VisitorsErasure {
  events: number;
  /** First touches deleted. */
  touches: number;
  identityLinks: number;
  /** Links from customers to these visitors deleted. */
  customerLinks: number;
  /** Stitches of daily ids to persistent ids deleted (either side among the visitors). */
  stitches: number;
  /** Customers that were linked to these visitors: their attribution is cleared, to be computed again. */
  customers: string[];
}

/** The erasure part of the store port. Every method may reject when the database is unreachable. */
export interface StoreErasurePart {
  /**
   * Removes a customer's personal data, durably and atomically where the
   * store can: the customer record and its links to visitors are deleted;
   * its payments and subscriptions move to `pseudonym`, payments losing
   * their metadata and their attribution details (the channel stays, so
   * revenue by channel is unchanged). Nothing to do is not an error.
   */
  eraseCustomer(siteId: string, customerId: string, pseudonym: string): Promise<CustomerErasure>;
  /** Deletes a user id's `$identify` links and events; returns the customers that carry it. */
  eraseUserLinks(siteId: string, userId: string): Promise<UserLinksErasure>;
  /**
   * Deletes these stored visitor ids' events, first touches, identify links,
   * customer links and stitches. Customers whose `visitorId` is one of
   * `names` (the ids as a payment may name them) lose it; customers linked
   * to the visitors get their attribution (and their payments') cleared,
   * channel `unattributed`, with any stored rank, and are returned.
   */
  eraseVisitors(siteId: string, visitorIds: string[], names: string[]): Promise<VisitorsErasure>;
  /**
   * The installation's key for the erasure audit line's keyed hash: 32
   * random bytes made on the first call and kept in the database, the same
   * for every later call and process on it. Concurrent first calls agree.
   */
  auditKey(): Promise<Uint8Array>;
}
