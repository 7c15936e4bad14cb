/** The payments, customers and subscriptions part of the store port. */
import type { CustomerRecord, PaymentRecord, PaymentWrite, SubscriptionRecord } from "./records.js";

/** The payments, customers and subscriptions part of the store port. Every method may reject when the database is unreachable. */
export interface StorePaymentsPart {
  /**
   * Upserts payments with their customers and subscriptions, durably, in one
   * batch. A payment is unique per (site, payment id): re-sending replaces
   * its fields (keeping createdAt); concurrent sends never make two.
   */
  commitPayments(writes: PaymentWrite[]): Promise<void>;
  getPayment(siteId: string, paymentId: string): Promise<PaymentRecord | undefined>;
  getCustomer(siteId: string, customerId: string): Promise<CustomerRecord | undefined>;
  getSubscription(siteId: string, subscriptionId: string): Promise<SubscriptionRecord | undefined>;
}
