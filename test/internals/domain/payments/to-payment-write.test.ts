import { describe, expect, it } from "vitest";
import { toPaymentWrite } from "../../../../src/domain/payments/to-payment-write.js";
import { validatePayment } from "../../../../src/domain/payments/validate-payment.js";
import {
  FULL_PAYMENT_CUSTOMER,
  FULL_PAYMENT_SUBSCRIPTION,
  fullPayment,
  minimalPayment,
} from "../../../helpers/payment-fixtures.js";

const NOW = Date.UTC(2024, 5, 1, 12, 0, 0);

describe("toPaymentWrite", () => {
  it("builds the payment, customer patch and subscription patch of the key's site", () => {
    const v = validatePayment(fullPayment());
    if (!v.ok) throw new Error("fixture must be valid");
    expect(toPaymentWrite("site_1", v.payment, NOW)).toEqual({
      payment: {
        siteId: "site_1",
        paymentId: "pay_001",
        customerId: "cus_001",
        currency: "USD",
        amountMinor: 2999,
        feeMinor: 117,
        kind: "charge",
        status: "succeeded",
        paidAt: Date.UTC(2024, 0, 15, 10, 30),
        metadata: { order: "A-1", source: "stripe" },
        subscriptionId: "sub_001",
        createdAt: NOW,
        updatedAt: NOW,
      },
      customer: {
        siteId: "site_1",
        customerId: "cus_001",
        ...FULL_PAYMENT_CUSTOMER,
        at: NOW,
      },
      subscription: {
        siteId: "site_1",
        subscriptionId: "sub_001",
        customerId: "cus_001",
        currency: "USD",
        ...FULL_PAYMENT_SUBSCRIPTION,
        canceledAt: undefined,
        endedAt: undefined,
        defaults: { status: "active", startedAt: Date.UTC(2024, 0, 15, 10, 30) },
        at: NOW,
      },
    });
  });

  it("has no subscription when none is sent", () => {
    const v = validatePayment(minimalPayment());
    if (!v.ok) throw new Error("fixture must be valid");
    const w = toPaymentWrite("site_1", v.payment, NOW);
    expect(w.subscription).toBeUndefined();
    expect(w.payment.subscriptionId).toBeUndefined();
  });
});
