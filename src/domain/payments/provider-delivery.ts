/**
 * Turns what a provider event says (in the Payment body's words) into the
 * store's delivery, through the payments endpoint's own validation: the same
 * field rules, messages and exact money.
 */
import type { ProviderDelivery, ProviderWrite } from "../store/store.js";
import type { ProviderChange, ProviderEventInput } from "./payments-app.js";
import { toPaymentWrite } from "./to-payment-write.js";
import { type FieldIssue, invalidPaymentInput, validatePayment } from "./validate-payment.js";

/** The store write of one change; throws the endpoint's 400 for invalid fields. */
function toWrite(siteId: string, change: ProviderChange, now: number): ProviderWrite {
  if ("payment" in change) {
    const v = validatePayment(change.payment);
    if (!v.ok) throw invalidPaymentInput(v.issues);
    return {
      object: change.object,
      version: change.version,
      ...toPaymentWrite(siteId, v.payment, now),
    };
  }
  // A customer, or a subscription with its customer, is checked as the subscription of a placeholder
  // payment: its customer and subscription rules (and money in its currency)
  // are the endpoint's, and only their issues are reported.
  const v = validatePayment({
    payment_id: "subscription-change",
    customer: change.customer,
    amount: 1,
    // Any currency will do when no subscription amount needs one.
    currency: change.currency ?? "USD",
    kind: "charge",
    paid_at: change.at,
    subscription: change.subscription,
  });
  if (!v.ok) throw invalidPaymentInput(v.issues.filter(isSubscriptionOrCustomer));
  const { customer, subscription } = toPaymentWrite(siteId, v.payment, now);
  return { object: change.object, version: change.version, customer, subscription };
}

const isSubscriptionOrCustomer = (i: FieldIssue) =>
  i.field.startsWith("customer.") ||
  i.field.startsWith("subscription.") ||
  i.field === "currency" ||
  i.field === "paid_at";

/** The store's delivery for an event received at `now`. */
export function toProviderDelivery(input: ProviderEventInput, now: number): ProviderDelivery {
  return {
    siteId: input.siteId,
    connectorId: input.connectorId,
    eventId: input.eventId,
    receivedAt: now,
    writes: input.changes.map((c) => toWrite(input.siteId, c, now)),
  };
}
