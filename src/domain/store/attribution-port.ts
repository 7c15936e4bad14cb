/** The attribution and reports part of the store port. */
import type { Attribution, CustomerVisitorLink, MrrRow, VisitorTouch } from "./records.js";

/** The attribution and reports part of the store port. Every method may reject when the database is unreachable. */
export interface StoreAttributionPart {
  /** The first touches of these visitors (those that have one), in any order: the domain sorts them (ranking.ts). */
  getFirstTouches(siteId: string, visitorIds: string[]): Promise<VisitorTouch[]>;
  /**
   * Remembers links from a customer to visitors. A link already known keeps
   * its earliest `linkedAt` and the strongest `via`.
   */
  linkCustomerVisitors(
    siteId: string,
    customerId: string,
    links: CustomerVisitorLink[],
  ): Promise<void>;
  getCustomerVisitors(siteId: string, customerId: string): Promise<CustomerVisitorLink[]>;
  /** Customers linked to any of these visitors, or whose user_id is one of `userIds`. */
  findCustomersToReattribute(
    siteId: string,
    query: { visitorIds: string[]; userIds: string[] },
  ): Promise<string[]>;
  /**
   * Sets the attribution of a customer and of all its payments (undefined:
   * unattributed). Idempotent. With `rank` (the domain's attributionRank,
   * lower is better), a stored attribution of a better rank is kept: a stale
   * writer cannot replace a newer attribution (MongoDB; SQLite writes in one
   * process-wide transaction and ignores it).
   */
  setAttribution(
    siteId: string,
    customerId: string,
    attribution: Attribution | undefined,
    rank?: string,
  ): Promise<void>;
  /**
   * Subscriptions with an amount and an interval that are `active` or
   * `past_due`, started at or before `at` and not ended by then, summed by
   * currency and interval.
   */
  mrrTotals(siteId: string, at: number): Promise<MrrRow[]>;
}
