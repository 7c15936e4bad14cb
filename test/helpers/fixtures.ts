/** Valid request bodies for tests that need "a request that passes". */
import { toPaymentWrite } from "../../src/domain/payments/to-payment-write.js";
import { validatePayment } from "../../src/domain/payments/validate-payment.js";

/** Real browsers' User-Agent strings: none is a bot, each names its device and browser. */
export const USER_AGENTS = {
  chromeWindows:
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
  safariIphone:
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
  safariIpad:
    "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
  firefoxLinux: "Mozilla/5.0 (X11; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/120.0",
  edge: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.0.0",
  chromeAndroid:
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
} as const;

export const BROWSER_UA = USER_AGENTS.chromeWindows;
export const IPHONE_UA = USER_AGENTS.safariIphone;

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
