/**
 * Request bodies of the benchmark: pre-built once, so the load generator
 * spends its time sending, not building JSON.
 */

/** Real browser user agents (short ones, so a batch of 50 fits in 8 KB). */
export const BROWSER_UAS = [
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
  "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
];
/** Short ones for batch elements. */
const SHORT_UAS = [
  "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
  "Mozilla/5.0 (Windows NT 10.0; rv:125.0) Gecko/20100101 Firefox/125.0",
];
const BATCH_PAGES = ["https://example.com/", "https://example.com/pricing"];
/** The User-Agent header every bench request carries (a browser, so a missing `ua` is no bot). */
export const HEADER_UA = BROWSER_UAS[0];

const PAGES = [
  "https://example.com/",
  "https://example.com/pricing?utm_source=newsletter&utm_medium=email",
  "https://example.com/blog/launch",
  "https://example.com/docs/start?gclid=abc123",
];
const REFERRERS = [undefined, "https://www.google.com/", "https://news.ycombinator.com/"];

/** A public-looking IPv4 address per index (distinct for the first 16M). */
export function ipOf(i) {
  return `${11 + ((i >> 16) & 0x7f)}.${(i >> 8) & 255}.${i & 255}.${1 + (i % 250)}`;
}

/** One pageview as the REST body carries it. */
export function pageview(site, i) {
  const ev = {
    s: site,
    e: "pageview",
    u: PAGES[i % PAGES.length],
    t: "Example page",
    w: 1440,
    l: "en-US",
    ip: ipOf(i),
    ua: BROWSER_UAS[i % BROWSER_UAS.length],
  };
  const r = REFERRERS[i % REFERRERS.length];
  if (r) ev.r = r;
  return ev;
}

/** `n` distinct single-pageview bodies (distinct ip, so distinct visitors). */
export function singleEventBodies(site, n) {
  return Array.from({ length: n }, (_, i) => JSON.stringify(pageview(site, i)));
}

/**
 * `n` single pageviews for the public collect endpoint: the same bodies
 * without `ip`/`ua`, which that endpoint takes from the connection.
 */
export function collectBodies(site, n) {
  return Array.from({ length: n }, (_, i) => {
    const { ip: _ip, ua: _ua, ...ev } = pageview(site, i);
    return JSON.stringify(ev);
  });
}

/** One batch element: small, so 50 fit in the 8 KB body limit. */
function batchElement(i) {
  return {
    e: "pageview",
    u: BATCH_PAGES[i % 2],
    ip: ipOf(i),
    ua: SHORT_UAS[i % SHORT_UAS.length],
  };
}

/** `n` batch bodies of `size` events each, every event with its own ip. */
export function batchBodies(site, n, size = 50) {
  const out = [];
  for (let j = 0; j < n; j++) {
    const b = Array.from({ length: size }, (_, k) => batchElement(j * size + k));
    const body = JSON.stringify({ s: site, b });
    if (Buffer.byteLength(body) > 8192) {
      throw new Error(`batch body of ${Buffer.byteLength(body)} bytes exceeds the 8 KB limit`);
    }
    out.push(body);
  }
  return out;
}

/** The batch elements as protobuf-init objects (for the gRPC client). */
export function batchMessages(site, n, size = 50) {
  return Array.from({ length: n }, (_, j) => ({
    s: site,
    b: Array.from({ length: size }, (_, k) => batchElement(j * size + k)),
  }));
}

/**
 * A payment body. `paymentId` may be autocannon's `[<id>]` placeholder,
 * replaced by a unique id in every request.
 */
export function paymentBody(paymentId, customer) {
  return JSON.stringify({
    payment_id: paymentId,
    customer: { id: customer, email: `${customer}@example.com` },
    amount: 29.99,
    currency: "USD",
    kind: "charge",
    paid_at: "2024-01-15T10:30:00Z",
  });
}
