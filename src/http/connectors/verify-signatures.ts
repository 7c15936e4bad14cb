/**
 * Webhook signature checks, one per provider, each by the provider's
 * documented scheme and tolerance, with its official SDK where one exists.
 * A refusal is a 400 `invalid_input` whose message says which check failed
 * (missing, malformed or wrong signature, stale timestamp) and never quotes
 * the secret, the signature or the body. Every time check reads the
 * service's clock, not the SDK's wall clock.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { Webhook as StandardWebhook } from "standardwebhooks";
import Stripe from "stripe";
import { errors } from "../../domain/errors.js";
import type { Provider } from "../../domain/vocabulary.js";

/** Stripe's SDK default: a signed timestamp older than 5 minutes is refused. */
export const STRIPE_TOLERANCE_SECONDS = 300;
/** Paddle's documented tolerance (its SDK's MAX_VALID_TIME_DIFFERENCE): 5 seconds. */
export const PADDLE_TOLERANCE_SECONDS = 5;
/** Standard Webhooks' (Polar's) tolerance, either way: 5 minutes. */
export const POLAR_TOLERANCE_SECONDS = 300;
/** Hex characters of an HMAC-SHA256 digest: what Paddle's h1 and Lemon Squeezy's X-Signature are. */
const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

/** Checks the raw body's signature; throws the 400 saying why it is refused. */
export type Verifier = (
  raw: Buffer,
  headers: IncomingHttpHeaders,
  secret: string,
  nowMs: number,
) => void;

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** Only the webhooks helpers are used: no API key, no network. */
const stripeSignature = new Stripe("sk_test_unused_only_webhooks").webhooks.signature;

/**
 * The SDK's check behind `stripe.webhooks.constructEvent` (which then only
 * parses the JSON, the door's job), with the service's clock as `receivedAt`.
 */
function verifyStripe(raw: Buffer, headers: IncomingHttpHeaders, secret: string, nowMs: number) {
  const signature = header(headers, "stripe-signature");
  if (!signature) throw errors.signatureMissing("Stripe-Signature");
  // Never skipped: without the SDK's helper the request fails (500), it is not let through.
  if (!stripeSignature) throw new Error("the stripe SDK has no webhook signature helper");
  try {
    stripeSignature.verifyHeader(
      raw,
      signature,
      secret,
      STRIPE_TOLERANCE_SECONDS,
      undefined,
      nowMs,
    );
  } catch (err) {
    const message = err instanceof Error ? err.message : "";
    if (message.startsWith("Timestamp outside the tolerance zone")) {
      throw errors.signatureStale("Stripe-Signature timestamp", STRIPE_TOLERANCE_SECONDS, "old");
    }
    if (message.startsWith("No signatures found matching")) {
      throw errors.signatureMismatch("Stripe-Signature");
    }
    throw errors.signatureMalformed("Stripe-Signature");
  }
  // The SDK bounds only the past (a signature older than the tolerance); a
  // timestamp ahead of the clock by more than the tolerance is refused as
  // Paddle's and Polar's are. The header parsed: the SDK accepted one `t=`.
  const t = /(?:^|,)\s*t=(\d{1,12})\s*(?:,|$)/.exec(signature)?.[1];
  if (t === undefined) throw errors.signatureMalformed("Stripe-Signature");
  if (Number(t) - nowMs / 1000 > STRIPE_TOLERANCE_SECONDS) {
    throw errors.signatureStale("Stripe-Signature timestamp", STRIPE_TOLERANCE_SECONDS, "ahead");
  }
}

/**
 * Paddle's documented scheme: `Paddle-Signature: ts=<unix>;h1=<hex>` (h1 may
 * repeat while a secret is rotated), h1 = HMAC-SHA256(secret, `ts:body`).
 * Not the SDK's `isSignatureValid`: it reads the wall clock and compares the
 * signature with `===`; this compares in constant time.
 */
function verifyPaddle(raw: Buffer, headers: IncomingHttpHeaders, secret: string, nowMs: number) {
  const signature = header(headers, "paddle-signature");
  if (!signature) throw errors.signatureMissing("Paddle-Signature");
  let ts: string | undefined;
  const h1: string[] = [];
  for (const part of signature.split(";")) {
    const [k, v] = part.split("=", 2).map((x) => x.trim());
    if (k === "ts" && v && /^\d{1,12}$/.test(v)) ts = v;
    else if (k === "h1" && v) h1.push(v);
  }
  // Exactly a SHA-256 digest in hex: Buffer.from(…, "hex") would drop trailing junk.
  if (!ts || h1.length === 0 || !h1.every((h) => SHA256_HEX.test(h))) {
    throw errors.signatureMalformed("Paddle-Signature");
  }
  const expected = createHmac("sha256", secret).update(`${ts}:`).update(raw).digest();
  if (!h1.some((h) => sameBytes(Buffer.from(h, "hex"), expected))) {
    throw errors.signatureMismatch("Paddle-Signature");
  }
  if (Math.abs(nowMs / 1000 - Number(ts)) > PADDLE_TOLERANCE_SECONDS) {
    throw errors.signatureStale("Paddle-Signature timestamp", PADDLE_TOLERANCE_SECONDS, "off");
  }
}

/**
 * Lemon Squeezy's documented scheme: `X-Signature` is the hex HMAC-SHA256 of
 * the raw body under the signing secret. It signs no timestamp, so there is
 * no tolerance to apply; repeats are caught by the event id.
 */
function verifyLemonSqueezy(raw: Buffer, headers: IncomingHttpHeaders, secret: string) {
  const signature = header(headers, "x-signature");
  if (!signature) throw errors.signatureMissing("X-Signature");
  // Exactly a SHA-256 digest in hex: Buffer.from(…, "hex") would drop trailing junk.
  if (!SHA256_HEX.test(signature)) throw errors.signatureMalformed("X-Signature");
  const expected = createHmac("sha256", secret).update(raw).digest();
  if (!sameBytes(Buffer.from(signature, "hex"), expected)) {
    throw errors.signatureMismatch("X-Signature");
  }
}

/**
 * Polar signs with Standard Webhooks (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`), its secret used as raw bytes, as Polar's SDK
 * `validateEvent` does (base64 of the secret's UTF-8). The library checks
 * the signature in constant time; its timestamp check reads the wall clock,
 * so the service's clock is given to it instead.
 */
function verifyPolar(raw: Buffer, headers: IncomingHttpHeaders, secret: string, nowMs: number) {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signature = header(headers, "webhook-signature");
  if (!id || !timestamp || !signature) {
    throw errors.signatureMissing("webhook-id, webhook-timestamp or webhook-signature");
  }
  if (!/^\d{1,12}$/.test(timestamp)) throw errors.signatureMalformed("webhook-timestamp");
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > POLAR_TOLERANCE_SECONDS) {
    throw errors.signatureStale("webhook-timestamp", POLAR_TOLERANCE_SECONDS, "off");
  }
  const headersToCheck = {
    "webhook-id": id,
    "webhook-timestamp": timestamp,
    "webhook-signature": signature,
  };
  for (const key of polarKeys(secret)) {
    try {
      const wh = new StandardWebhook(key);
      // The tolerance was checked above against the service's clock.
      Object.assign(wh, { verifyTimestamp: (t: string) => new Date(Number(t) * 1000) });
      wh.verify(raw.toString("utf8"), headersToCheck);
      return;
    } catch (err) {
      if (err instanceof SyntaxError) return; // Signed, not JSON: the door reports that.
    }
  }
  throw errors.signatureMismatch("webhook-signature");
}

/**
 * The Standard Webhooks keys a Polar secret may stand for: Polar's SDK
 * base64-encodes the secret's UTF-8 before handing it to the library (so
 * the key is the secret's bytes); a secret in the standard `whsec_<base64>`
 * form is also tried as the standard says.
 */
function polarKeys(secret: string): string[] {
  const legacy = Buffer.from(secret, "utf8").toString("base64");
  return secret.startsWith("whsec_") ? [secret, legacy] : [legacy];
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export const VERIFIERS: Record<Provider, Verifier> = {
  stripe: verifyStripe,
  paddle: verifyPaddle,
  lemonsqueezy: verifyLemonSqueezy,
  polar: verifyPolar,
};
