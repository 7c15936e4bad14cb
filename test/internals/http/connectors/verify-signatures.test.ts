/**
 * The webhook signature checks on their own: each provider's documented
 * scheme, its exact digest length, and its time bounds both ways, against a
 * clock the test gives (never the wall clock).
 */
import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { describe, expect, it } from "vitest";
import { DomainError } from "../../../../src/domain/errors.js";
import { VERIFIERS } from "../../../../src/http/connectors/verify-signatures.js";
import { signLemon, signPaddle, signPolar } from "../../../helpers/provider-events.js";

const NOW_S = 1_773_230_400;
const NOW_MS = NOW_S * 1000;
const BODY = '{"id":"evt_1","type":"charge.succeeded"}';
const raw = Buffer.from(BODY);

/** What a verifier throws, as `kind: message`, or "accepted". */
function check(provider: keyof typeof VERIFIERS, headers: Record<string, string>, secret: string) {
  try {
    VERIFIERS[provider](raw, headers, secret, NOW_MS);
    return "accepted";
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    return `${err.kind}: ${err.message}`;
  }
}

describe("Stripe", () => {
  const secret = "whsec_test_0123456789";
  const header = (t: number, s = secret) =>
    Stripe.webhooks.generateTestHeaderString({ payload: BODY, secret: s, timestamp: t });
  const stripe = (t: number, s?: string) =>
    check("stripe", { "stripe-signature": header(t, s) }, secret);

  it("accepts a signature within 300 seconds either way", () => {
    expect(stripe(NOW_S)).toBe("accepted");
    expect(stripe(NOW_S - 300)).toBe("accepted");
    expect(stripe(NOW_S + 300)).toBe("accepted");
  });

  it("refuses one dated more than 300 seconds ago or ahead", () => {
    expect(stripe(NOW_S - 301)).toBe(
      "invalid_input: Stripe-Signature timestamp is more than 300 seconds old",
    );
    expect(stripe(NOW_S + 301)).toBe(
      "invalid_input: Stripe-Signature timestamp is more than 300 seconds ahead",
    );
    expect(stripe(NOW_S + 365 * 86_400)).toBe(
      "invalid_input: Stripe-Signature timestamp is more than 300 seconds ahead",
    );
  });

  it("refuses a wrong secret and a missing header", () => {
    expect(stripe(NOW_S, "whsec_other")).toBe(
      "invalid_input: Stripe-Signature does not match the body",
    );
    expect(check("stripe", {}, secret)).toBe("invalid_input: missing Stripe-Signature header");
  });
});

describe("Paddle", () => {
  const secret = "pdl_ntfset_01hv8x2acma2gz8he4ywsfmbrn_0123456789abcdef";
  const paddle = (signature: string) => check("paddle", { "paddle-signature": signature }, secret);

  it("accepts its documented signature within 5 seconds either way", () => {
    expect(paddle(signPaddle(BODY, secret, NOW_S))).toBe("accepted");
    expect(paddle(signPaddle(BODY, secret, NOW_S - 5))).toBe("accepted");
    expect(paddle(signPaddle(BODY, secret, NOW_S + 5))).toBe("accepted");
  });

  it("refuses a timestamp more than 5 seconds in the past or in the future", () => {
    const off = "invalid_input: Paddle-Signature timestamp is more than 5 seconds off";
    expect(paddle(signPaddle(BODY, secret, NOW_S - 6))).toBe(off);
    expect(paddle(signPaddle(BODY, secret, NOW_S + 6))).toBe(off);
    expect(paddle(signPaddle(BODY, secret, NOW_S + 365 * 86_400))).toBe(off);
  });

  it("accepts exactly 64 hex characters in h1: trailing junk, a short digest or a non-hex one is malformed", () => {
    const good = signPaddle(BODY, secret, NOW_S);
    const malformed = "invalid_input: malformed Paddle-Signature header";
    expect(paddle(`${good}zz`)).toBe(malformed);
    expect(paddle(`${good}00`)).toBe(malformed);
    expect(paddle(good.slice(0, -2))).toBe(malformed);
    expect(paddle(`${good.slice(0, -1)}g`)).toBe(malformed);
    expect(paddle(good.toUpperCase().replace("TS=", "ts=").replace("H1=", "h1="))).toBe("accepted");
    expect(paddle(signPaddle(BODY, "other", NOW_S))).toBe(
      "invalid_input: Paddle-Signature does not match the body",
    );
  });
});

describe("Lemon Squeezy", () => {
  const secret = "lemon-signing-secret-0123456789";
  const lemon = (signature: string) => check("lemonsqueezy", { "x-signature": signature }, secret);

  it("accepts the hex HMAC-SHA256 of the body, and exactly that many hex characters", () => {
    const good = signLemon(BODY, secret);
    const malformed = "invalid_input: malformed X-Signature header";
    expect(lemon(good)).toBe("accepted");
    expect(lemon(good.toUpperCase())).toBe("accepted");
    expect(lemon(`${good}zz`)).toBe(malformed);
    expect(lemon(`${good}z`)).toBe(malformed);
    expect(lemon(`${good}00`)).toBe(malformed);
    expect(lemon(good.slice(0, 62))).toBe(malformed);
    expect(lemon(createHmac("sha256", "other").update(BODY).digest("hex"))).toBe(
      "invalid_input: X-Signature does not match the body",
    );
  });
});

describe("Polar (Standard Webhooks)", () => {
  const secret = "polar_whs_0123456789abcdefghijklmnopqrstuvwxyz";
  const polar = (headers: Record<string, string>, s = secret) => check("polar", headers, s);

  it("accepts Polar's form of the secret within 300 seconds either way", () => {
    expect(polar(signPolar(BODY, secret, "msg_1", NOW_S))).toBe("accepted");
    expect(polar(signPolar(BODY, secret, "msg_1", NOW_S - 300))).toBe("accepted");
    expect(polar(signPolar(BODY, secret, "msg_1", NOW_S + 300))).toBe("accepted");
  });

  it("refuses a timestamp more than 300 seconds in the past or in the future", () => {
    const off = "invalid_input: webhook-timestamp is more than 300 seconds off";
    expect(polar(signPolar(BODY, secret, "msg_1", NOW_S - 301))).toBe(off);
    expect(polar(signPolar(BODY, secret, "msg_1", NOW_S + 301))).toBe(off);
    expect(polar(signPolar(BODY, secret, "msg_1", NOW_S + 365 * 86_400))).toBe(off);
  });

  it("verifies a secret in the standard whsec_<base64> form as the standard reads it", () => {
    const key = `whsec_${Buffer.from("a standard webhooks key, 24+").toString("base64")}`;
    const wh = new Webhook(key);
    const headers = {
      "webhook-id": "msg_2",
      "webhook-timestamp": String(NOW_S),
      "webhook-signature": wh.sign("msg_2", new Date(NOW_MS), BODY),
    };
    expect(polar(headers, key)).toBe("accepted");
    // The same signature under another standard key is a mismatch.
    const other = `whsec_${Buffer.from("another key of the same form").toString("base64")}`;
    expect(polar(headers, other)).toBe("invalid_input: webhook-signature does not match the body");
  });

  it("refuses missing headers and a malformed timestamp", () => {
    expect(polar({})).toBe(
      "invalid_input: missing webhook-id, webhook-timestamp or webhook-signature header",
    );
    const h = signPolar(BODY, secret, "msg_1", NOW_S);
    expect(polar({ ...h, "webhook-timestamp": "12x" })).toBe(
      "invalid_input: malformed webhook-timestamp header",
    );
  });
});
