/** The payments, customers and subscriptions part of the store port. */
import type { CustomerRecord, PaymentRecord, PaymentWrite, SubscriptionRecord } from "./records.js";

/** Where a page of payments starts: just after this payment in (paidAt, paymentId) order. */
export interface PaymentPosition {
  paidAt: number;
  paymentId: string;
}

/** Which page of a site's payments `pagePayments` reads. */
export interface PaymentPageQuery {
  /** Payments with `paidAt` in [from, to) only. */
  from: number;
  to: number;
  /** Only payments after this one (a previous page's `next`); from the oldest when absent. */
  after?: PaymentPosition;
  /** At most this many payments. */
  limit: number;
}

/** One page of payments, oldest first by (paidAt, paymentId), and where the next one starts. */
export interface PaymentPage {
  payments: PaymentRecord[];
  /** The position to pass as `after` for the next page; absent on the last page. */
  next?: PaymentPosition;
}

/** The payments, customers and subscriptions part of the store port. Every method may reject when the database is unreachable. */
export interface StorePaymentsPart {
  /**
   * Upserts payments with their customers and subscriptions, durably, in one
   * batch. A payment is unique per (site, payment id): re-sending replaces
   * its fields (keeping createdAt); concurrent sends never make two.
   */
  commitPayments(writes: PaymentWrite[]): Promise<void>;
  getPayment(siteId: string, paymentId: string): Promise<PaymentRecord | undefined>;
  /**
   * A customer's refunds and chargebacks, failed ones excepted, whose
   * metadata names a charge (`metadata[key] === chargeId`, as the
   * connectors record it): what the connectors hold a new one against.
   */
  refundsOfCharge(
    siteId: string,
    customerId: string,
    key: string,
    chargeId: string,
  ): Promise<PaymentRecord[]>;
  /**
   * A page of a site's payments with `paidAt` in [from, to), oldest first by
   * (paidAt, paymentId): a reader paging with `next` sees every payment of
   * the range that is not changed meanwhile exactly once.
   */
  pagePayments(siteId: string, query: PaymentPageQuery): Promise<PaymentPage>;
  getCustomer(siteId: string, customerId: string): Promise<CustomerRecord | undefined>;
  getSubscription(siteId: string, subscriptionId: string): Promise<SubscriptionRecord | undefined>;
}
