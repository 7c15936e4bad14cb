/** Valid request bodies for tests that need "a request that passes". */
import { toPaymentWrite } from "../../src/domain/payments/to-payment-write.js";
import { validatePayment } from "../../src/domain/payments/validate-payment.js";

export const BROWSER_UA =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

export function validPayment(paymentId = `pay_${Math.random().toString(16).slice(2)}`) {
  return {
    payment_id: paymentId,
    customer: { id: "cus_1", email: "Buyer@Example.com" },
    amount: 29.99,
    currency: "USD",
    kind: "charge",
    paid_at: "2024-01-15T10:30:00Z",
  };
}

export function validEvent(siteId: string) {
  return {
    s: siteId,
    e: "pageview",
    u: "https://example.com/pricing?utm_source=newsletter",
    ip: "203.0.113.9",
    ua: BROWSER_UA,
  };
}

/** The store's answer while it is down (503), exactly as the spec words it. */
export const STORE_UNAVAILABLE = {
  ok: false,
  error: { code: "unavailable", message: "the store is unavailable, retry later" },
};

/**
 * The store write the payments application builds from a valid payment body
 * (toPaymentWrite), for tests that write to a store directly.
 */
export function paymentWrite(siteId: string, body: Record<string, unknown>, now: number) {
  const v = validatePayment(body);
  if (!v.ok) throw new Error(`payment fixture is invalid: ${JSON.stringify(v.issues)}`);
  return toPaymentWrite(siteId, v.payment, now);
}
