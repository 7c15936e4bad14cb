/**
 * Records a payment and a batch of events with the generated Connect types
 * (@connectrpc/connect-node), the way an internal Node service would.
 *
 *   INGEST_KEY=mk_live_… INGEST_SITE=site_… node --import tsx examples/node-connect/record.ts
 *
 * Optional: INGEST_URL (default http://127.0.0.1:8080), INGEST_HOST (a
 * hostname of the site, default example.com), INGEST_PAYMENT_ID. Retries
 * `unavailable`/`internal` and network errors (waiting Retry-After, else
 * exponential backoff), stops on `resource_exhausted` (quota), never retries
 * other codes. Exit codes: 0 done, 2 refused, 3 over quota, 4 gave up.
 */
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { EventsService } from "../../gen/ingest/v1/events_pb.js";
import { PaymentsService } from "../../gen/ingest/v1/payments_pb.js";

const BASE = process.env.INGEST_URL ?? "http://127.0.0.1:8080";
const KEY = required("INGEST_KEY");
const SITE = required("INGEST_SITE");
const HOST = process.env.INGEST_HOST ?? "example.com";
const MAX_ATTEMPTS = 5;

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`set ${name}`);
    process.exit(2);
  }
  return value;
}

class Stop extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

const RETRYABLE = new Set([Code.Unavailable, Code.Internal, Code.DeadlineExceeded, Code.Unknown]);

/** Calls `fn`, retrying what may succeed later; throws Stop for what will not. */
async function withRetry<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const ce = ConnectError.from(err);
      const reason = `${Code[ce.code]}: ${ce.rawMessage}`;
      const retryAfter = ce.metadata.get("retry-after");
      if (ce.code === Code.ResourceExhausted) {
        throw new Stop(`${reason}; retry after ${retryAfter} s`, 3);
      }
      if (!RETRYABLE.has(ce.code)) throw new Stop(reason, 2);
      if (attempt + 1 >= MAX_ATTEMPTS) throw new Stop(`gave up: ${reason}`, 4);
      console.error(`${reason}; retrying`);
      const wait =
        retryAfter !== null && Number.isFinite(Number(retryAfter))
          ? Number(retryAfter) * 1000
          : Math.min(30_000, 500 * 2 ** attempt) * (0.5 + Math.random() / 2);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

const transport = createConnectTransport({ baseUrl: BASE, httpVersion: "1.1" });
const payments: Client<typeof PaymentsService> = createClient(PaymentsService, transport);
const events: Client<typeof EventsService> = createClient(EventsService, transport);
const callOptions = { headers: { authorization: `Bearer ${KEY}` }, timeoutMs: 10_000 };
const visitor = {
  ip: "203.0.113.9",
  ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15",
};

try {
  // The payment id is the idempotency key: a retry updates, never duplicates.
  const paymentId = process.env.INGEST_PAYMENT_ID ?? `pay_example_${Date.now()}`;
  // Test data: this records a real 29.99 USD charge into the site INGEST_SITE points at (its
  // revenue counts it); metadata test=true and the pay_example_ id mark it as an example's.
  const payment = await withRetry(() =>
    payments.recordPayment(
      {
        paymentId,
        customer: { id: "cus_42", email: "ada@example.com", userId: "u_42" },
        amount: 29.99,
        currency: "USD",
        kind: "charge",
        paidAt: new Date().toISOString(),
        metadata: { test: "true" },
      },
      callOptions,
    ),
  );
  console.log(`payment ${payment.paymentId} recorded`);

  const result = await withRetry(() =>
    events.recordEvents(
      {
        s: SITE,
        b: [
          { e: "pageview", u: `https://${HOST}/pricing?utm_source=newsletter`, ...visitor },
          { e: "signup", u: `https://${HOST}/welcome`, p: { plan: "pro" }, ...visitor },
          { e: "$identify", u: `https://${HOST}/welcome`, uid: "u_42", ...visitor },
        ],
      },
      callOptions,
    ),
  );
  console.log(
    `${result.accepted} events recorded; quota remaining ${result.quotaRemaining.toString()}`,
  );
} catch (err) {
  if (!(err instanceof Stop)) throw err;
  console.error(err.message);
  process.exit(err.exitCode);
}
