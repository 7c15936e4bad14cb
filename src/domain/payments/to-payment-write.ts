import type { PaymentWrite } from "../store/store.js";
import type { ValidPayment } from "./validate-payment.js";

/**
 * The store write for a valid payment of `siteId` received at `now`.
 * createdAt is `now` too: the store keeps the first one on updates.
 */
export function toPaymentWrite(siteId: string, p: ValidPayment, now: number): PaymentWrite {
  const c = p.customer;
  const s = p.subscription;
  return {
    payment: {
      siteId,
      paymentId: p.paymentId,
      customerId: c.id,
      currency: p.currency,
      amountMinor: p.amountMinor,
      feeMinor: p.feeMinor,
      kind: p.kind,
      status: p.status,
      paidAt: p.paidAt,
      metadata: p.metadata,
      subscriptionId: s?.id,
      createdAt: now,
      updatedAt: now,
    },
    customer: {
      siteId,
      customerId: c.id,
      email: c.email,
      userId: c.userId,
      name: c.name,
      country: c.country,
      visitorId: c.visitorId,
      metadata: c.metadata,
      at: now,
    },
    subscription: s && {
      siteId,
      subscriptionId: s.id,
      customerId: c.id,
      currency: p.currency,
      plan: s.plan,
      interval: s.interval,
      status: s.status,
      amountMinor: s.amountMinor,
      startedAt: s.startedAt,
      currentPeriodEnd: s.currentPeriodEnd,
      canceledAt: s.canceledAt,
      endedAt: s.endedAt,
      // Only used when the subscription is first stored; later payments keep what is known.
      defaults: { status: "active", startedAt: p.paidAt },
      at: now,
    },
  };
}
