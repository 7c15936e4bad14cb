/** Valid request bodies for tests that need "a request that passes". */

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
