/**
 * Stripe's webhooks through a connector, end to end over HTTP: signed with
 * the SDK's own test helper, in Stripe's documented shapes, checked against
 * what the store holds, exactly.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { beforeAll, describe, expect, it } from "vitest";
import { createMetrics, type Metrics } from "../../src/metrics/metrics.js";
import { STORE_UNAVAILABLE } from "../helpers/fixtures.js";
import {
  charge,
  checkoutSession,
  dispute,
  invoice,
  OLD_API,
  price,
  refund,
  signStripe,
  customer as stripeCustomer,
  stripeEvent,
  subscription,
} from "../helpers/stripe-events.js";
import { postJson, type TestServer } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const SECRET = "whsec_test_stripe_signing_secret_0123456789";
const NOW_S = 1773230400; // TEST_NOW in Unix seconds

describe("Stripe connector", () => {
  const metrics: Metrics = createMetrics();
  let path: string;
  const ctx = useTestServer({ metrics, env: { SQLITE_BUSY_TIMEOUT_MS: "300" } });

  beforeAll(async () => {
    const c = await ctx.server.admin.createConnector({
      siteId: ctx.tenant.siteId,
      provider: "stripe",
      secret: SECRET,
      actorUserId: ctx.tenant.ownerUserId,
    });
    path = c.urlPath;
  });

  /** Delivers `event` as Stripe does: raw JSON, signed now (or at `at`). */
  function deliver(event: Record<string, unknown>, options: { at?: number; secret?: string } = {}) {
    const { payload, header } = signStripe(event, options.secret ?? SECRET, options.at ?? NOW_S);
    return postJson(`${ctx.server.url}${path}`, payload, {
      headers: { "stripe-signature": header },
    });
  }

  const payment = (id: string) => ctx.server.store.getPayment(ctx.tenant.siteId, id);

  it("records charge.succeeded as a charge with its customer, amount, status and metadata", async () => {
    const ch = charge({ metadata: { order: "A-1" } });
    const event = stripeEvent("charge.succeeded", ch, NOW_S - 5);
    const res = await deliver(event);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      data: { event_id: event.id, type: "charge.succeeded", outcome: "applied" },
    });
    expect(await payment(ch.id as string)).toMatchObject({
      paymentId: ch.id,
      customerId: "cus_NffrFeUfNV2Hib",
      currency: "USD",
      amountMinor: 2999,
      feeMinor: undefined,
      kind: "charge",
      status: "succeeded",
      paidAt: 1773230000_000,
      metadata: { order: "A-1" },
    });
  });

  it("records failed and pending charges with their status", async () => {
    for (const status of ["failed", "pending"] as const) {
      const ch = charge({ status, paid: status !== "failed" });
      expect((await deliver(stripeEvent(`charge.${status}`, ch, NOW_S))).status).toBe(200);
      expect((await payment(ch.id as string))?.status).toBe(status);
    }
  });

  it("gives a guest checkout a stable id from its PaymentIntent and keeps billing email, name and country", async () => {
    const ch = charge({ customer: null, payment_intent: "pi_guest_1" });
    await deliver(stripeEvent("charge.succeeded", ch, NOW_S));
    expect((await payment(ch.id as string))?.customerId).toBe("guest_pi_guest_1");
    expect(await ctx.server.store.getCustomer(ctx.tenant.siteId, "guest_pi_guest_1")).toMatchObject(
      {
        email: "ada@example.com",
        name: "Ada Lovelace",
        country: "GB",
      },
    );
  });

  it("stores the fee of an expanded balance transaction in the charge's currency, none otherwise", async () => {
    const ch = charge({
      balance_transaction: {
        id: "txn_1",
        object: "balance_transaction",
        currency: "usd",
        fee: 117,
        amount: 2999,
      },
    });
    await deliver(stripeEvent("charge.succeeded", ch, NOW_S));
    expect((await payment(ch.id as string))?.feeMinor).toBe(117);
    const settledInEur = charge({
      balance_transaction: { id: "txn_2", object: "balance_transaction", currency: "eur", fee: 99 },
    });
    await deliver(stripeEvent("charge.succeeded", settledInEur, NOW_S));
    expect((await payment(settledInEur.id as string))?.feeMinor).toBeUndefined();
  });

  it.each([
    ["usd", 2999, "USD", 2999],
    ["jpy", 5000, "JPY", 5000],
    // Stripe: MGA is zero-decimal; ISO 4217 gives it 2 decimals.
    ["mga", 10000, "MGA", 1000000],
    // Stripe: ISK keeps two decimals in the API (divisible by 100); ISO gives it 0.
    ["isk", 50000, "ISK", 500],
    ["kwd", 12345, "KWD", 12345],
  ])(
    "converts %s %i by Stripe's rules into exact ISO minor units",
    async (cur, amount, code, minor) => {
      const ch = charge({ currency: cur, amount });
      expect((await deliver(stripeEvent("charge.succeeded", ch, NOW_S))).status).toBe(200);
      const p = await payment(ch.id as string);
      expect([p?.currency, p?.amountMinor]).toEqual([code, minor]);
    },
  );

  it("refuses an ISK amount ISO cannot hold with the payments endpoint's message", async () => {
    const res = await deliver(
      stripeEvent("charge.succeeded", charge({ currency: "isk", amount: 12345 }), NOW_S),
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      ok: false,
      error: {
        code: "invalid_input",
        message: "invalid payment input: amount: must have at most 0 decimal places for ISK",
      },
    });
  });

  it("records each refund listed on charge.refunded (older API versions) as its own refund, never a second charge", async () => {
    const ch = charge({ amount_refunded: 1500, refunded: false });
    const r1 = refund(ch.id as string, { amount: 1000 });
    const r2 = refund(ch.id as string, { amount: 500, created: 1773230300 });
    ch.refunds = { object: "list", data: [r1, r2], has_more: false, total_count: 2 };
    await deliver(stripeEvent("charge.refunded", ch, NOW_S, { apiVersion: OLD_API }));
    expect(await payment(ch.id as string)).toMatchObject({ kind: "charge", amountMinor: 2999 });
    expect(await payment(r1.id as string)).toMatchObject({
      kind: "refund",
      amountMinor: 1000,
      status: "succeeded",
      customerId: "cus_NffrFeUfNV2Hib",
      metadata: { stripe_charge: ch.id },
    });
    expect(await payment(r2.id as string)).toMatchObject({ kind: "refund", amountMinor: 500 });
  });

  it("records refund.created (newer API versions) under the recorded charge's customer", async () => {
    const ch = charge({ customer: "cus_refunded" });
    await deliver(stripeEvent("charge.succeeded", ch, NOW_S));
    const re = refund(ch.id as string, { amount: 700, status: "pending" });
    await deliver(stripeEvent("refund.created", re, NOW_S));
    expect(await payment(re.id as string)).toMatchObject({
      kind: "refund",
      amountMinor: 700,
      status: "pending",
      customerId: "cus_refunded",
    });
    await deliver(stripeEvent("refund.updated", { ...re, status: "succeeded" }, NOW_S + 1));
    expect((await payment(re.id as string))?.status).toBe("succeeded");
  });

  it("turns a dispute into a chargeback: pending while open, counted when lost, void when won", async () => {
    const lostCh = charge();
    await deliver(stripeEvent("charge.succeeded", lostCh, NOW_S));
    const lost = dispute(lostCh.id as string);
    await deliver(stripeEvent("charge.dispute.created", lost, NOW_S));
    expect(await payment(lost.id as string)).toMatchObject({
      kind: "chargeback",
      status: "pending",
      amountMinor: 2999,
      customerId: "cus_NffrFeUfNV2Hib",
    });
    await deliver(stripeEvent("charge.dispute.closed", { ...lost, status: "lost" }, NOW_S + 10));
    expect((await payment(lost.id as string))?.status).toBe("succeeded");

    // Another charge's dispute: one charge's disputes and refunds never exceed it.
    const wonCh = charge();
    await deliver(stripeEvent("charge.succeeded", wonCh, NOW_S));
    const won = dispute(wonCh.id as string);
    expect((await deliver(stripeEvent("charge.dispute.created", won, NOW_S))).status).toBe(200);
    expect((await payment(won.id as string))?.status).toBe("pending");
    await deliver(stripeEvent("charge.dispute.closed", { ...won, status: "won" }, NOW_S + 10));
    expect((await payment(won.id as string))?.status).toBe("failed");
    // The charge itself is untouched by either.
    expect(await payment(lostCh.id as string)).toMatchObject({
      kind: "charge",
      status: "succeeded",
    });
  });

  it("keeps subscriptions current: plan, interval, price × quantity, status, start, period end, cancel and end", async () => {
    const sub = subscription({
      items: [
        { price: price({ unit_amount: 1000, nickname: "Seats" }), quantity: 3 },
        { price: price({ unit_amount: 500, nickname: "Add-on" }), quantity: 1 },
      ],
      metadata: { ingest_visitor_id: "v_sub_1" },
    });
    await deliver(stripeEvent("customer.subscription.created", sub, NOW_S));
    expect(
      await ctx.server.store.getSubscription(ctx.tenant.siteId, sub.id as string),
    ).toMatchObject({
      customerId: "cus_NffrFeUfNV2Hib",
      currency: "USD",
      plan: "Seats",
      interval: "month",
      status: "active",
      amountMinor: 3500,
      startedAt: 1773230000_000,
      currentPeriodEnd: 1775908400_000,
    });
    expect(
      (await ctx.server.store.getCustomer(ctx.tenant.siteId, "cus_NffrFeUfNV2Hib"))?.visitorId,
    ).toBe("v_sub_1");

    await deliver(
      stripeEvent(
        "customer.subscription.deleted",
        { ...sub, status: "canceled", canceled_at: 1773300000, ended_at: 1773300000 },
        NOW_S + 60,
      ),
    );
    expect(
      await ctx.server.store.getSubscription(ctx.tenant.siteId, sub.id as string),
    ).toMatchObject({
      status: "canceled",
      canceledAt: 1773300000_000,
      endedAt: 1773300000_000,
    });
  });

  it.each([
    ["unpaid", "past_due"],
    ["incomplete", "paused"],
    ["incomplete_expired", "ended"],
    ["trialing", "trialing"],
    ["past_due", "past_due"],
    ["paused", "paused"],
  ])("maps Stripe's %s subscription status to %s", async (stripeStatus, status) => {
    const sub = subscription({ status: stripeStatus });
    await deliver(stripeEvent("customer.subscription.updated", sub, NOW_S));
    expect(
      (await ctx.server.store.getSubscription(ctx.tenant.siteId, sub.id as string))?.status,
    ).toBe(status);
  });

  it("reads the current period from the subscription itself in API versions before basil", async () => {
    const sub = subscription({ basil: false });
    await deliver(
      stripeEvent("customer.subscription.created", sub, NOW_S, { apiVersion: OLD_API }),
    );
    expect(
      (await ctx.server.store.getSubscription(ctx.tenant.siteId, sub.id as string))
        ?.currentPeriodEnd,
    ).toBe(1775908400_000);
  });

  it.each([
    ["before basil: invoice.subscription", false],
    ["since basil: invoice.parent.subscription_details.subscription", true],
  ])("invoice.paid renews the subscription (%s)", async (_label, basil) => {
    const sub = subscription({ status: "past_due" });
    await deliver(stripeEvent("customer.subscription.updated", sub, NOW_S - 100));
    const inv = invoice(sub.id as string, { basil, period_end: 1778500000 });
    const res = await deliver(
      stripeEvent("invoice.paid", inv, NOW_S, { apiVersion: basil ? undefined : OLD_API }),
    );
    expect(res.status).toBe(200);
    expect(
      await ctx.server.store.getSubscription(ctx.tenant.siteId, sub.id as string),
    ).toMatchObject({
      status: "active",
      currentPeriodEnd: 1778500000_000,
      amountMinor: 2900,
    });
  });

  it("keeps a customer's email, name, country and ingest ids from customer.created/updated", async () => {
    const customer = stripeCustomer({
      id: "cus_profile_1",
      metadata: { ingest_visitor_id: "v_cus_1", ingest_user_id: "u_cus_1" },
    });
    await deliver(stripeEvent("customer.created", customer, NOW_S - 10));
    await deliver(stripeEvent("customer.updated", { ...customer, name: "Marie S. Curie" }, NOW_S));
    expect(await ctx.server.store.getCustomer(ctx.tenant.siteId, "cus_profile_1")).toMatchObject({
      email: "marie@example.com",
      name: "Marie S. Curie",
      country: "FR",
      visitorId: "v_cus_1",
      userId: "u_cus_1",
    });
  });

  it("records refund.failed and charge.refund.updated, and a dispute's update, on their own payments", async () => {
    const ch = charge();
    await deliver(stripeEvent("charge.succeeded", ch, NOW_S));
    const re = refund(ch.id as string, { status: "failed" });
    await deliver(stripeEvent("refund.failed", re, NOW_S));
    expect((await payment(re.id as string))?.status).toBe("failed");
    const re2 = refund(ch.id as string, { status: "succeeded" });
    await deliver(stripeEvent("charge.refund.updated", re2, NOW_S));
    expect(await payment(re2.id as string)).toMatchObject({ kind: "refund", status: "succeeded" });
    // Disputed after the 10.00 refund: the rest of the 29.99 (refunds and disputes never exceed the charge).
    const dp = dispute(ch.id as string, { status: "under_review", amount: 1999 });
    await deliver(stripeEvent("charge.dispute.updated", dp, NOW_S));
    expect(await payment(dp.id as string)).toMatchObject({
      kind: "chargeback",
      status: "pending",
      metadata: {
        stripe_charge: ch.id,
        stripe_dispute_status: "under_review",
        stripe_dispute_reason: "fraudulent",
      },
    });
  });

  it("applies a repeated event once: the second delivery answers duplicate and changes nothing", async () => {
    const ch = charge();
    const event = stripeEvent("charge.succeeded", ch, NOW_S);
    expect(((await deliver(event)).body as { data: { outcome: string } }).data.outcome).toBe(
      "applied",
    );
    const first = await payment(ch.id as string);
    const again = await deliver(event);
    expect(again.status).toBe(200);
    expect((again.body as { data: { outcome: string } }).data.outcome).toBe("duplicate");
    expect(await payment(ch.id as string)).toEqual(first);
  });

  it("never lets an older state overwrite a newer one delivered first", async () => {
    const ch = charge({ status: "succeeded" });
    await deliver(stripeEvent("charge.succeeded", ch, NOW_S));
    // charge.pending was sent first by Stripe (older `created`) but arrives last.
    const late = await deliver(
      stripeEvent("charge.pending", { ...ch, status: "pending" }, NOW_S - 30),
    );
    expect(late.status).toBe(200);
    expect((await payment(ch.id as string))?.status).toBe("succeeded");
  });

  it("refuses refunds and chargebacks that together would exceed their charge, naming the field, and counts it", async () => {
    const refused = {
      status: 400,
      body: {
        ok: false,
        error: {
          code: "invalid_input",
          message: "",
        },
      },
    };
    const excess = (chargeId: string, field = "data.object.amount") => ({
      ...refused,
      body: {
        ok: false,
        error: {
          code: "invalid_input",
          message: `invalid provider event: ${field}: refunds and chargebacks of ${chargeId} would exceed its amount`,
        },
      },
    });
    const pick = (r: { status: number; body: unknown }) => ({ status: r.status, body: r.body });
    const ch = charge({ amount: 1000 });
    await deliver(stripeEvent("charge.succeeded", ch, NOW_S));
    const huge = refund(ch.id as string, { amount: 99_999_999 });
    expect(pick(await deliver(stripeEvent("refund.created", huge, NOW_S)))).toEqual(
      excess(ch.id as string),
    );
    expect(await payment(huge.id as string)).toBeUndefined();
    // 6.00 then 3.00 fit the 10.00; a 2.00 dispute on top does not; the 6.00 re-sent as 7.00 still fits.
    const r1 = refund(ch.id as string, { amount: 600 });
    const r2 = refund(ch.id as string, { amount: 300 });
    expect((await deliver(stripeEvent("refund.created", r1, NOW_S))).status).toBe(200);
    expect((await deliver(stripeEvent("refund.created", r2, NOW_S))).status).toBe(200);
    const dp = dispute(ch.id as string, { amount: 200 });
    expect(pick(await deliver(stripeEvent("charge.dispute.created", dp, NOW_S)))).toEqual(
      excess(ch.id as string),
    );
    expect(await payment(dp.id as string)).toBeUndefined();
    expect(
      (await deliver(stripeEvent("refund.updated", { ...r1, amount: 700 }, NOW_S + 1))).status,
    ).toBe(200);
    // A failed refund holds nothing back: then the dispute fits.
    expect(
      (await deliver(stripeEvent("refund.failed", { ...r2, status: "failed" }, NOW_S + 2))).status,
    ).toBe(200);
    expect((await deliver(stripeEvent("charge.dispute.created", dp, NOW_S + 3))).status).toBe(200);
    // Refunds listed on charge.refunded are held to the charge in the same event.
    const listed = charge({ amount: 1000 });
    listed.refunds = {
      object: "list",
      data: [
        refund(listed.id as string, { amount: 800 }),
        refund(listed.id as string, { amount: 300 }),
      ],
      has_more: false,
      total_count: 2,
    };
    expect(
      pick(await deliver(stripeEvent("charge.refunded", listed, NOW_S, { apiVersion: OLD_API }))),
    ).toEqual(excess(listed.id as string, "data.object.refunds.data.amount"));
    expect(
      (await metrics.registry.metrics())
        .split("\n")
        .filter((l) => l.startsWith("ingest_connector") && l.includes("refund_exceeds_charge")),
    ).toEqual([
      'ingest_connector_events_total{provider="stripe",outcome="refund_exceeds_charge"} 3',
    ]);
  });

  it("answers 2xx to an event type the connector does not use, stores nothing and counts it", async () => {
    const event = stripeEvent(
      "product.created",
      { id: "prod_1", object: "product", name: "Pro" },
      NOW_S,
    );
    const res = await deliver(event);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      data: { event_id: event.id, type: "product.created", outcome: "ignored" },
    });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(
      /ingest_connector_events_total\{provider="stripe",outcome="ignored"\} 1\b/,
    );
    expect(text).toMatch(
      /ingest_connector_events_total\{provider="stripe",outcome="duplicate"\} 1\b/,
    );
  });

  describe("refusals", () => {
    const event = () => stripeEvent("charge.succeeded", charge(), NOW_S);
    const error = (status: number, code: string, message: string) => ({
      status,
      body: { ok: false, error: { code, message } },
    });
    const pick = (r: { status: number; body: unknown }) => ({ status: r.status, body: r.body });

    it("answers 404 for an unknown or deleted connector", async () => {
      const { payload, header } = signStripe(event(), SECRET, NOW_S);
      for (const id of ["conn_000000000000000000000000", "nope", "conn_%2e%2e"]) {
        const r = await postJson(`${ctx.server.url}/api/v1/connectors/${id}`, payload, {
          headers: { "stripe-signature": header },
        });
        expect(pick(r)).toEqual(error(404, "not_found", "unknown connector"));
      }
    });

    it("answers 400 for a missing, malformed or wrong signature and a stale timestamp, saying which", async () => {
      const e = event();
      const { payload } = signStripe(e, SECRET, NOW_S);
      const post = (headers: Record<string, string>) =>
        postJson(`${ctx.server.url}${path}`, payload, { headers }).then(pick);
      expect(await post({})).toEqual(
        error(400, "invalid_input", "missing Stripe-Signature header"),
      );
      expect(await post({ "stripe-signature": "garbage" })).toEqual(
        error(400, "invalid_input", "malformed Stripe-Signature header"),
      );
      expect(pick(await deliver(e, { secret: "whsec_another_secret" }))).toEqual(
        error(400, "invalid_input", "Stripe-Signature does not match the body"),
      );
      expect(pick(await deliver(e, { at: NOW_S - 301 }))).toEqual(
        error(400, "invalid_input", "Stripe-Signature timestamp is more than 300 seconds old"),
      );
      // The future is bounded as Paddle's and Polar's are: a year ahead, or 301 seconds.
      for (const at of [NOW_S + 365 * 86_400, NOW_S + 301]) {
        expect(pick(await deliver(e, { at }))).toEqual(
          error(400, "invalid_input", "Stripe-Signature timestamp is more than 300 seconds ahead"),
        );
      }
      // A body altered after signing.
      const { header } = signStripe(e, SECRET, NOW_S);
      const altered = await postJson(`${ctx.server.url}${path}`, payload.replace("2999", "1"), {
        headers: { "stripe-signature": header },
      });
      expect(pick(altered)).toEqual(
        error(400, "invalid_input", "Stripe-Signature does not match the body"),
      );
      expect(await payment((e.data as { object: { id: string } }).object.id)).toBeUndefined();
    });

    it("answers 400 naming the field for a signed event whose time is out of range, and stores nothing", async () => {
      const unix = (field: string) =>
        error(
          400,
          "invalid_input",
          `invalid provider event: ${field}: must be Unix seconds within years 0000-9999`,
        );
      const ch = charge({ created: 1e17 });
      expect(pick(await deliver(stripeEvent("charge.succeeded", ch, NOW_S)))).toEqual(
        unix("data.object.created"),
      );
      expect(await payment(ch.id as string)).toBeUndefined();
      const late = charge();
      expect(pick(await deliver(stripeEvent("charge.succeeded", late, 1e17)))).toEqual(
        unix("created"),
      );
      const re = refund(late.id as string, { created: -1e15 });
      expect(pick(await deliver(stripeEvent("refund.created", re, NOW_S)))).toEqual(
        unix("data.object.created"),
      );
      const sub = subscription({ canceled_at: 253_402_300_800 });
      expect(pick(await deliver(stripeEvent("customer.subscription.updated", sub, NOW_S)))).toEqual(
        unix("data.object.canceled_at"),
      );
      expect(await payment(late.id as string)).toBeUndefined();
      expect(await payment(re.id as string)).toBeUndefined();
      expect(
        await ctx.server.store.getSubscription(ctx.tenant.siteId, sub.id as string),
      ).toBeUndefined();
    });

    it("holds what an event stores to the 64 KB of a Payment body: 20,000 metadata keys are refused, 1,000 are kept", async () => {
      const many = (n: number) =>
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, `value ${i}`]));
      const ch = charge({ metadata: many(20_000) });
      expect(pick(await deliver(stripeEvent("charge.succeeded", ch, NOW_S)))).toEqual(
        error(
          400,
          "invalid_input",
          "invalid provider event: metadata: must fit the 64 KB of a Payment body",
        ),
      );
      expect(await payment(ch.id as string)).toBeUndefined();
      const fits = charge({ metadata: many(1_000) });
      expect((await deliver(stripeEvent("charge.succeeded", fits, NOW_S))).status).toBe(200);
      expect(Object.keys((await payment(fits.id as string))?.metadata ?? {})).toHaveLength(1_000);
    });

    it("answers 400 for a signed body that is not a JSON object", async () => {
      const payload = "[1,2]";
      const header = (await import("stripe")).default.webhooks.generateTestHeaderString({
        payload,
        secret: SECRET,
        timestamp: NOW_S,
      });
      const r = await postJson(`${ctx.server.url}${path}`, payload, {
        headers: { "stripe-signature": header },
      });
      expect(pick(r)).toEqual(
        error(400, "invalid_input", "invalid JSON: the body must be a JSON object"),
      );
    });

    it("answers 413 for a body over 1 MB, and 405 for another method", async () => {
      const big = JSON.stringify({ pad: "x".repeat(1024 * 1024) });
      const r = await postJson(`${ctx.server.url}${path}`, big, {
        headers: { "stripe-signature": "t=1,v1=0" },
      });
      expect(pick(r)).toEqual(error(413, "invalid_input", "request body larger than 1024 KB"));
      const get = await fetch(`${ctx.server.url}${path}`);
      expect(get.status).toBe(405);
      expect(get.headers.get("allow")).toBe("POST");
    });
  });

  it("answers 503 while the store is unavailable, and applies the provider's retry afterwards", async () => {
    const ch = charge();
    const event = stripeEvent("charge.succeeded", ch, NOW_S);
    const other = new Database(join(ctx.server.dir, "ingest.sqlite"));
    other.exec("BEGIN IMMEDIATE");
    try {
      const r = await deliver(event);
      expect(r.status).toBe(503);
      expect(r.headers.get("retry-after")).toBe("2");
      expect(r.body).toEqual(STORE_UNAVAILABLE);
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    const retry = await deliver(event);
    expect((retry.body as { data: { outcome: string } }).data.outcome).toBe("applied");
    expect((await payment(ch.id as string))?.amountMinor).toBe(2999);
  });

  it("credits a payment to the campaign its visitor landed from, through the Checkout Session's client_reference_id", async () => {
    // The visitor lands from a campaign (the tracker's pageview, sent server-side here).
    const landing = await postJson(
      `${ctx.server.url}/api/v1/events`,
      {
        s: ctx.tenant.siteId,
        e: "pageview",
        u: "https://example.com/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=spring",
        ip: "203.0.113.7",
        ua: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
      },
      { key: ctx.tenant.key },
    );
    expect(landing.status).toBe(204);
    const visitorId = await firstVisitorId(ctx.server, ctx.tenant.siteId);
    const session = checkoutSession({
      client_reference_id: visitorId,
      payment_intent: "pi_campaign",
    });
    await deliver(stripeEvent("checkout.session.completed", session, NOW_S));
    const ch = charge({ customer: null, payment_intent: "pi_campaign" });
    await deliver(stripeEvent("charge.succeeded", ch, NOW_S + 1));
    const p = await payment(ch.id as string);
    expect(p?.customerId).toBe("guest_pi_campaign");
    expect(p?.attribution).toMatchObject({
      channel: expect.any(String),
      source: "newsletter",
      medium: "email",
      campaign: "spring",
      visitorId,
      via: "visitor_id",
    });
  });
});

/** The visitor id the service gave the site's only visitor so far (its first stored event's). */
async function firstVisitorId(server: TestServer, siteId: string): Promise<string> {
  // Read back as ListEvents does: the feed moves events out of SQLite's outbox.
  const first = (await server.store.listEvents(siteId, 1000)).at(-1);
  if (!first) throw new Error(`no event stored for ${siteId}`);
  return first.visitorId;
}
