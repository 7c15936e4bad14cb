// Records a payment and a batch of events with plain fetch (Node 20+, no dependencies).
//
//   INGEST_KEY=mk_live_… INGEST_SITE=site_… node examples/node-fetch/record.mjs
//
// Optional: INGEST_URL (default http://127.0.0.1:8080), INGEST_HOST (a hostname of the site,
// default example.com), INGEST_PAYMENT_ID (default pay_example_<time>).
// Retries 5xx and network errors (waiting Retry-After, else exponential backoff), stops on 429,
// never retries other 4xx. Exit codes: 0 done, 2 refused (4xx), 3 over quota, 4 gave up.

const BASE = process.env.INGEST_URL ?? "http://127.0.0.1:8080";
const KEY = required("INGEST_KEY");
const SITE = required("INGEST_SITE");
const HOST = process.env.INGEST_HOST ?? "example.com";
const MAX_ATTEMPTS = 5;

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`set ${name}`);
    process.exit(2);
  }
  return value;
}

class Stop extends Error {
  constructor(message, exitCode) {
    super(message);
    this.exitCode = exitCode;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long to wait before attempt `attempt + 1`: Retry-After when given, else 0.5 s × 2^n with jitter. */
function delayMs(attempt, retryAfter) {
  const seconds = Number(retryAfter);
  if (retryAfter !== null && Number.isFinite(seconds)) return seconds * 1000;
  return Math.min(30_000, 500 * 2 ** attempt) * (0.5 + Math.random() / 2);
}

/** POSTs JSON; retries what may succeed later and throws Stop for what will not. */
async function post(path, body) {
  for (let attempt = 0; ; attempt++) {
    let res;
    try {
      res = await fetch(`${BASE}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
    } catch (err) {
      if (attempt + 1 >= MAX_ATTEMPTS) throw new Stop(`gave up: ${err.message}`, 4);
      await sleep(delayMs(attempt, null));
      continue;
    }
    if (res.ok) return res;
    const { error } = await res
      .json()
      .catch(() => ({ error: { code: "?", message: res.statusText } }));
    const reason = `${res.status} ${error.code}: ${error.message}`;
    if (res.status === 429) {
      // Over the monthly quota: retrying before Retry-After is refused anyway.
      throw new Stop(`${reason}; retry after ${res.headers.get("retry-after")} s`, 3);
    }
    if (res.status < 500) throw new Stop(reason, 2);
    if (attempt + 1 >= MAX_ATTEMPTS) throw new Stop(`gave up: ${reason}`, 4);
    console.error(`${reason}; retrying`);
    await sleep(delayMs(attempt, res.headers.get("retry-after")));
  }
}

// The payment id is the idempotency key: a retry updates, never duplicates.
const paymentId = process.env.INGEST_PAYMENT_ID ?? `pay_example_${Date.now()}`;
const visitor = {
  ip: "203.0.113.9",
  ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15",
};

try {
  // Test data: this records a real 29.99 USD charge into the site INGEST_SITE points at (its
  // revenue counts it); metadata test=true and the pay_example_ id mark it as an example's.
  const payment = await post("/api/v1/payments", {
    payment_id: paymentId,
    customer: { id: "cus_42", email: "ada@example.com", user_id: "u_42" },
    amount: 29.99,
    currency: "USD",
    kind: "charge",
    paid_at: new Date().toISOString(),
    metadata: { test: "true" },
  });
  const { data } = await payment.json();
  console.log(`payment ${data.payment_id} recorded`);

  const events = await post("/api/v1/events", {
    s: SITE,
    b: [
      { e: "pageview", u: `https://${HOST}/pricing?utm_source=newsletter`, ...visitor },
      { e: "signup", u: `https://${HOST}/welcome`, p: { plan: "pro" }, ...visitor },
      { e: "$identify", u: `https://${HOST}/welcome`, uid: "u_42", ...visitor },
    ],
  });
  console.log(`3 events recorded; quota remaining ${events.headers.get("x-quota-remaining")}`);
} catch (err) {
  if (!(err instanceof Stop)) throw err;
  console.error(err.message);
  process.exit(err.exitCode);
}
