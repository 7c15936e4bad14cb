/**
 * Paddle, Lemon Squeezy and Polar webhooks through connectors, end to end
 * over HTTP, signed by each provider's documented scheme (Polar's through
 * Standard Webhooks' own `sign`), checked against the store exactly.
 */
import { Paddle, Webhooks } from "@paddle/paddle-node-sdk";
import { beforeAll, describe, expect, it } from "vitest";
import {
  lemonEvent,
  lemonInvoice,
  lemonOrder,
  lemonSubscription,
  paddleAdjustment,
  paddleEvent,
  paddleSubscription,
  paddleTransaction,
  polarCustomer,
  polarEvent,
  polarOrder,
  polarRefund,
  polarSubscription,
  signLemon,
  signPaddle,
  signPolar,
} from "../helpers/provider-events.js";
import { postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const NOW_S = 1773230400; // TEST_NOW in Unix seconds
const PADDLE_SECRET = "pdl_ntfset_01hv8x2acma2gz8he4ywsfmbrn_0123456789abcdef";
const LEMON_SECRET = "lemon-signing-secret-0123456789";
const POLAR_SECRET = "polar_whs_0123456789abcdefghijklmnopqrstuvwxyz";

type Res = Awaited<ReturnType<typeof postJson>>;
const outcome = (r: Res) => (r.body as { data: { outcome: string } }).data.outcome;
const error = (status: number, message: string) => ({
  status,
  body: { ok: false, error: { code: "invalid_input", message } },
});
const pick = (r: Res) => ({ status: r.status, body: r.body });

const paths: Record<string, string> = {};
const ctx = useTestServer();

beforeAll(async () => {
  for (const [provider, secret] of [
    ["paddle", PADDLE_SECRET],
    ["lemonsqueezy", LEMON_SECRET],
    ["polar", POLAR_SECRET],
  ]) {
    const c = await ctx.server.admin.createConnector({
      siteId: ctx.tenant.siteId,
      provider: provider as string,
      secret: secret as string,
      actorUserId: ctx.tenant.ownerUserId,
    });
    paths[provider as string] = `${ctx.server.url}${c.urlPath}`;
  }
});

const payment = (id: string) => ctx.server.store.getPayment(ctx.tenant.siteId, id);
const sub = (id: string) => ctx.server.store.getSubscription(ctx.tenant.siteId, id);
const customer = (id: string) => ctx.server.store.getCustomer(ctx.tenant.siteId, id);

describe("Paddle connector", () => {
  function deliver(event: Record<string, unknown>, options: { ts?: number; secret?: string } = {}) {
    const payload = JSON.stringify(event);
    const signature = signPaddle(payload, options.secret ?? PADDLE_SECRET, options.ts ?? NOW_S);
    return postJson(paths.paddle as string, payload, {
      headers: { "paddle-signature": signature },
    });
  }

  it("uses payloads Paddle's own SDK reads, and its documented signature, which the SDK accepts", async () => {
    const txn = Webhooks.fromJson(
      paddleEvent("transaction.completed", paddleTransaction(), "2026-03-11T11:00:02Z") as never,
    ) as unknown as {
      eventType: string;
      data: {
        customerId: string;
        billedAt: string;
        customData: unknown;
        details: { totals: { grandTotal: string; fee: string } };
      };
    };
    expect(txn.eventType).toBe("transaction.completed");
    expect(txn.data.details.totals).toMatchObject({ grandTotal: "3600", fee: "230" });
    expect(txn.data).toMatchObject({
      customerId: "ctm_01hv6y1jedq4p1n0yqn5ba3ky4",
      customData: { ingest_visitor_id: "v_paddle_1" },
    });
    const sub = Webhooks.fromJson(
      paddleEvent("subscription.updated", paddleSubscription(), "2026-03-11T11:00:03Z") as never,
    ) as unknown as {
      data: {
        items: { price: { unitPrice: { amount: string }; name: string } }[];
        currentBillingPeriod: { endsAt: string };
        billingCycle: { interval: string };
      };
    };
    expect(sub.data.items[0]?.price).toMatchObject({
      name: "Pro monthly",
      unitPrice: { amount: "3000" },
    });
    expect(sub.data.currentBillingPeriod.endsAt).toBe("2026-04-11T11:00:00.000000Z");
    expect(sub.data.billingCycle.interval).toBe("month");
    const adj = Webhooks.fromJson(
      paddleEvent("adjustment.created", paddleAdjustment("txn_1"), "2026-03-11T11:30:00Z") as never,
    ) as unknown as {
      data: { action: string; transactionId: string; totals: { total: string; fee: string } };
    };
    expect(adj.data).toMatchObject({
      action: "refund",
      transactionId: "txn_1",
      totals: { total: "1200", fee: "77" },
    });

    // The SDK checks the timestamp against the wall clock itself, so this one signature is made now.
    const payload = JSON.stringify(
      paddleEvent("transaction.completed", paddleTransaction(), "2026-03-11T11:00:02Z"),
    );
    const webhooks = new Paddle("pdl_sdbx_apikey_unused").webhooks;
    const now = Math.floor(Date.now() / 1000);
    expect(
      await webhooks.isSignatureValid(
        payload,
        PADDLE_SECRET,
        signPaddle(payload, PADDLE_SECRET, now),
      ),
    ).toBe(true);
    expect(
      await webhooks.isSignatureValid(
        `${payload} `,
        PADDLE_SECRET,
        signPaddle(payload, PADDLE_SECRET, now),
      ),
    ).toBe(false);
  });

  it("records transaction.completed with Paddle's fee, custom_data attribution and its subscription", async () => {
    const txn = paddleTransaction();
    const r = await deliver(paddleEvent("transaction.completed", txn, "2026-03-11T11:00:02.5Z"));
    expect(r.status).toBe(200);
    expect(await payment(txn.id as string)).toMatchObject({
      customerId: "ctm_01hv6y1jedq4p1n0yqn5ba3ky4",
      currency: "USD",
      amountMinor: 3600,
      feeMinor: 230,
      kind: "charge",
      status: "succeeded",
      paidAt: Date.parse("2026-03-11T11:00:01.635Z"),
      subscriptionId: "sub_01hv8x29kz0t586xy6zn1a62ny",
    });
    expect(await customer("ctm_01hv6y1jedq4p1n0yqn5ba3ky4")).toMatchObject({
      visitorId: "v_paddle_1",
      userId: "u_paddle_1",
    });
  });

  it("converts JPY and KWD totals by ISO minor units", async () => {
    const jpy = paddleTransaction({
      currency_code: "JPY",
      details: { totals: { grand_total: "4500", fee: "300" } },
    });
    await deliver(paddleEvent("transaction.completed", jpy, "2026-03-11T11:00:02Z"));
    expect(await payment(jpy.id as string)).toMatchObject({
      currency: "JPY",
      amountMinor: 4500,
      feeMinor: 300,
    });
    const kwd = paddleTransaction({
      currency_code: "KWD",
      details: { totals: { grand_total: "12345" } },
    });
    await deliver(paddleEvent("transaction.completed", kwd, "2026-03-11T11:00:02Z"));
    expect(await payment(kwd.id as string)).toMatchObject({
      currency: "KWD",
      amountMinor: 12345,
      feeMinor: undefined,
    });
  });

  it("records a refund adjustment and a chargeback adjustment as their own payments", async () => {
    const txn = paddleTransaction();
    await deliver(paddleEvent("transaction.completed", txn, "2026-03-11T11:00:02Z"));
    const refund = paddleAdjustment(txn.id as string);
    await deliver(paddleEvent("adjustment.created", refund, "2026-03-11T11:30:00Z"));
    expect(await payment(refund.id as string)).toMatchObject({
      kind: "refund",
      amountMinor: 1200,
      feeMinor: 77,
      status: "succeeded",
      metadata: { paddle_transaction: txn.id, paddle_reason: "error" },
    });
    // The rest of the 36.00 after the 12.00 refund (together they never exceed the charge).
    const chargeback = paddleAdjustment(txn.id as string, {
      action: "chargeback",
      totals: { total: "2400", currency_code: "USD" },
    });
    await deliver(paddleEvent("adjustment.created", chargeback, "2026-03-11T12:00:00Z"));
    expect(await payment(chargeback.id as string)).toMatchObject({
      kind: "chargeback",
      amountMinor: 2400,
    });
    // One cent more is refused, naming Paddle's field.
    const more = paddleAdjustment(txn.id as string, {
      action: "chargeback",
      totals: { total: "1", currency_code: "USD" },
    });
    expect(
      pick(await deliver(paddleEvent("adjustment.created", more, "2026-03-11T12:00:01Z"))),
    ).toEqual(
      error(
        400,
        `invalid provider event: data.totals.total: refunds and chargebacks of ${txn.id} would exceed its amount`,
      ),
    );
    expect(await payment(txn.id as string)).toMatchObject({ kind: "charge", amountMinor: 3600 });
  });

  it("keeps the subscription current and ignores an older update delivered late", async () => {
    const s = paddleSubscription({ id: "sub_01hvpaddle0000000000000001" });
    await deliver(paddleEvent("subscription.activated", s, "2026-03-11T11:00:03Z"));
    expect(await sub(s.id as string)).toMatchObject({
      customerId: "ctm_01hv6y1jedq4p1n0yqn5ba3ky4",
      plan: "Pro monthly",
      interval: "month",
      status: "active",
      amountMinor: 6000,
      currentPeriodEnd: Date.parse("2026-04-11T11:00:00Z"),
    });
    const canceled = {
      ...s,
      status: "canceled",
      canceled_at: "2026-03-20T00:00:00Z",
      updated_at: "2026-03-20T00:00:00Z",
    };
    await deliver(paddleEvent("subscription.canceled", canceled, "2026-03-20T00:00:01Z"));
    const late = { ...s, status: "past_due", updated_at: "2026-03-15T00:00:00Z" };
    expect(
      outcome(await deliver(paddleEvent("subscription.past_due", late, "2026-03-15T00:00:01Z"))),
    ).toBe("applied");
    expect(await sub(s.id as string)).toMatchObject({
      status: "canceled",
      canceledAt: Date.parse("2026-03-20T00:00:00Z"),
      endedAt: Date.parse("2026-03-20T00:00:00Z"),
    });
  });

  it("records a failed payment attempt, and a customer's email, name and custom_data", async () => {
    const txn = paddleTransaction({ status: "past_due" });
    await deliver(paddleEvent("transaction.payment_failed", txn, "2026-03-11T11:00:02Z"));
    expect((await payment(txn.id as string))?.status).toBe("failed");
    const ctm = {
      id: "ctm_01hvcustomer00000000000001",
      name: "Pat Paddle",
      email: "pat@example.com",
      marketing_consent: false,
      status: "active",
      custom_data: { ingest_user_id: "u_pat" },
      locale: "en",
      created_at: "2026-03-01T00:00:00.000000Z",
      updated_at: "2026-03-01T00:00:00.000000Z",
      import_meta: null,
    };
    await deliver(paddleEvent("customer.updated", ctm, "2026-03-01T00:00:01Z"));
    expect(await customer(ctm.id)).toMatchObject({
      email: "pat@example.com",
      name: "Pat Paddle",
      userId: "u_pat",
    });
  });

  it("applies a repeated notification once and ignores unused types", async () => {
    const event = paddleEvent("transaction.completed", paddleTransaction(), "2026-03-11T11:00:02Z");
    expect(outcome(await deliver(event))).toBe("applied");
    expect(outcome(await deliver(event))).toBe("duplicate");
    expect(
      outcome(
        await deliver(paddleEvent("product.created", { id: "pro_1" }, "2026-03-11T11:00:02Z")),
      ),
    ).toBe("ignored");
  });

  it("refuses a missing, malformed or wrong Paddle-Signature and one more than 5 seconds off", async () => {
    const event = paddleEvent("transaction.completed", paddleTransaction(), "2026-03-11T11:00:02Z");
    const payload = JSON.stringify(event);
    const post = (headers: Record<string, string>) =>
      postJson(paths.paddle as string, payload, { headers }).then(pick);
    expect(await post({})).toEqual(error(400, "missing Paddle-Signature header"));
    expect(await post({ "paddle-signature": "h1=abc" })).toEqual(
      error(400, "malformed Paddle-Signature header"),
    );
    expect(pick(await deliver(event, { secret: "pdl_other" }))).toEqual(
      error(400, "Paddle-Signature does not match the body"),
    );
    expect(pick(await deliver(event, { ts: NOW_S - 6 }))).toEqual(
      error(400, "Paddle-Signature timestamp is more than 5 seconds off"),
    );
    for (const ts of [NOW_S + 6, NOW_S + 365 * 86_400]) {
      expect(pick(await deliver(event, { ts }))).toEqual(
        error(400, "Paddle-Signature timestamp is more than 5 seconds off"),
      );
    }
    // Exactly a SHA-256 digest in hex: trailing junk is not dropped.
    const signed = signPaddle(payload, PADDLE_SECRET, NOW_S);
    expect(await post({ "paddle-signature": `${signed}zz` })).toEqual(
      error(400, "malformed Paddle-Signature header"),
    );
    expect(outcome(await deliver(event, { ts: NOW_S - 5 }))).toBe("applied");
  });
});

describe("provider times out of range", () => {
  const rfc = (field: string) =>
    error(400, `invalid provider event: ${field}: must be RFC 3339 within years 0000-9999`);

  it("Paddle: 400 naming the field, nothing stored", async () => {
    const txn = paddleTransaction({
      id: "txn_01time00000000000000000000",
      billed_at: "99999-01-01T00:00:00Z",
    });
    const payload = JSON.stringify(
      paddleEvent("transaction.completed", txn, "2026-03-11T11:00:02Z"),
    );
    const r = await postJson(paths.paddle as string, payload, {
      headers: { "paddle-signature": signPaddle(payload, PADDLE_SECRET, NOW_S) },
    });
    expect(pick(r)).toEqual(rfc("data.billed_at"));
    const late = paddleEvent(
      "transaction.completed",
      { ...txn, billed_at: null },
      "+275760-09-13T00:00:00Z",
    );
    const body = JSON.stringify({
      ...late,
      data: { ...txn, billed_at: null, updated_at: "10000-01-01T00:00:00Z" },
    });
    const r2 = await postJson(paths.paddle as string, body, {
      headers: { "paddle-signature": signPaddle(body, PADDLE_SECRET, NOW_S) },
    });
    expect(pick(r2)).toEqual(rfc("data.updated_at"));
    expect(await payment("txn_01time00000000000000000000")).toBeUndefined();
  });

  it("Lemon Squeezy: 400 naming the field, nothing stored", async () => {
    const event = lemonEvent(
      "order_created",
      "orders",
      "77",
      lemonOrder({ created_at: "0000-00-00T00:00:00Z" }),
    );
    const payload = JSON.stringify(event);
    const r = await postJson(paths.lemonsqueezy as string, payload, {
      headers: { "x-signature": signLemon(payload, LEMON_SECRET) },
    });
    expect(pick(r)).toEqual(rfc("data.attributes.created_at"));
    expect(await payment("ls_order_77")).toBeUndefined();
  });

  it("Polar: 400 naming the field, nothing stored", async () => {
    const order = polarOrder({
      id: "0f0e0d0c-0b0a-4909-8807-0605040302ff",
      created_at: "12026-03-11T11:00:00Z",
    });
    const payload = JSON.stringify(polarEvent("order.paid", order, "2026-03-11T11:00:01Z"));
    const r = await postJson(paths.polar as string, payload, {
      headers: signPolar(payload, POLAR_SECRET, "msg_time_1", NOW_S),
    });
    expect(pick(r)).toEqual(rfc("data.created_at"));
    expect(await payment(order.id as string)).toBeUndefined();
  });
});

describe("Lemon Squeezy connector", () => {
  function deliver(event: Record<string, unknown>, secret = LEMON_SECRET) {
    const payload = JSON.stringify(event);
    return postJson(paths.lemonsqueezy as string, payload, {
      headers: {
        "x-signature": signLemon(payload, secret),
        "x-event-name": String((event.meta as { event_name: string }).event_name),
      },
    });
  }

  it("records order_created with meta.custom_data attribution, and order_refunded as one refund", async () => {
    const order = lemonOrder();
    const r = await deliver(
      lemonEvent("order_created", "orders", "1", order, { ingest_visitor_id: "v_lemon_1" }),
    );
    expect(r.status).toBe(200);
    expect(await payment("ls_order_1")).toMatchObject({
      customerId: "ls_customer_7",
      currency: "EUR",
      amountMinor: 1199,
      kind: "charge",
      status: "succeeded",
      metadata: { lemonsqueezy_order_number: "1001" },
    });
    expect(await customer("ls_customer_7")).toMatchObject({
      email: "lin@example.com",
      name: "Lin Lemon",
      visitorId: "v_lemon_1",
    });
    const refunded = {
      ...order,
      status: "partial_refund",
      refunded: true,
      refunded_amount: 500,
      refunded_at: "2026-03-12T10:00:00.000000Z",
      updated_at: "2026-03-12T10:00:00.000000Z",
    };
    await deliver(lemonEvent("order_refunded", "orders", "1", refunded));
    expect(await payment("ls_order_refund_1")).toMatchObject({
      kind: "refund",
      amountMinor: 500,
      status: "succeeded",
    });
    expect(await payment("ls_order_1")).toMatchObject({ kind: "charge", amountMinor: 1199 });
  });

  it("refuses a refunded_amount larger than the order's total, naming the field", async () => {
    const order = lemonOrder({ total: 1999 });
    expect((await deliver(lemonEvent("order_created", "orders", "90", order))).status).toBe(200);
    const refunded = {
      ...order,
      status: "refunded",
      refunded: true,
      refunded_at: "2026-03-12T10:00:00.000000Z",
      refunded_amount: 99_999_900,
      updated_at: "2026-03-12T10:00:00.000000Z",
    };
    expect(pick(await deliver(lemonEvent("order_refunded", "orders", "90", refunded)))).toEqual(
      error(
        400,
        "invalid provider event: data.attributes.refunded_amount: refunds and chargebacks of ls_order_90 would exceed its amount",
      ),
    );
    expect(await payment("ls_order_refund_90")).toBeUndefined();
    const whole = { ...refunded, refunded_amount: 1999, updated_at: "2026-03-12T10:00:01.000000Z" };
    expect(outcome(await deliver(lemonEvent("order_refunded", "orders", "90", whole)))).toBe(
      "applied",
    );
    expect(await payment("ls_order_refund_90")).toMatchObject({
      kind: "refund",
      amountMinor: 1999,
    });
  });

  it("keeps the subscription current and takes the recurring amount from renewals", async () => {
    await deliver(lemonEvent("subscription_created", "subscriptions", "1", lemonSubscription()));
    expect(await sub("ls_sub_1")).toMatchObject({
      plan: "Pro – Monthly",
      status: "active",
      currentPeriodEnd: Date.parse("2026-04-11T11:00:00Z"),
    });
    await deliver(
      lemonEvent("subscription_payment_success", "subscription-invoices", "31", lemonInvoice()),
    );
    expect(await payment("ls_invoice_31")).toMatchObject({
      kind: "charge",
      amountMinor: 1199,
      subscriptionId: "ls_sub_1",
    });
    expect(await sub("ls_sub_1")).toMatchObject({ amountMinor: 999, currency: "EUR" });
    // The first invoice is also an order: not counted twice.
    await deliver(
      lemonEvent(
        "subscription_payment_success",
        "subscription-invoices",
        "30",
        lemonInvoice({ billing_reason: "initial" }),
      ),
    );
    expect(await payment("ls_invoice_30")).toBeUndefined();
    await deliver(
      lemonEvent(
        "subscription_expired",
        "subscriptions",
        "1",
        lemonSubscription({
          status: "expired",
          ends_at: "2026-05-11T11:00:00.000000Z",
          updated_at: "2026-05-11T11:00:00.000000Z",
        }),
      ),
    );
    expect(await sub("ls_sub_1")).toMatchObject({
      status: "ended",
      endedAt: Date.parse("2026-05-11T11:00:00Z"),
    });
  });

  it("records a refunded renewal as a refund of that invoice", async () => {
    const refunded = lemonInvoice({
      status: "refunded",
      refunded: true,
      refunded_amount: 1199,
      refunded_at: "2026-04-12T09:00:00.000000Z",
      updated_at: "2026-04-12T09:00:00.000000Z",
    });
    await deliver(
      lemonEvent("subscription_payment_refunded", "subscription-invoices", "41", refunded),
    );
    expect(await payment("ls_invoice_41")).toMatchObject({ kind: "charge", amountMinor: 1199 });
    expect(await payment("ls_invoice_refund_41")).toMatchObject({
      kind: "refund",
      amountMinor: 1199,
      paidAt: Date.parse("2026-04-12T09:00:00Z"),
    });
  });

  it("applies the same state once, and refuses a missing or wrong X-Signature", async () => {
    const event = lemonEvent("order_created", "orders", "2", lemonOrder());
    expect(outcome(await deliver(event))).toBe("applied");
    expect(outcome(await deliver(event))).toBe("duplicate");
    const payload = JSON.stringify(event);
    expect(pick(await postJson(paths.lemonsqueezy as string, payload))).toEqual(
      error(400, "missing X-Signature header"),
    );
    expect(pick(await deliver(event, "another-secret"))).toEqual(
      error(400, "X-Signature does not match the body"),
    );
    // Exactly a SHA-256 digest in hex: the valid digest with trailing junk is malformed.
    const fresh = JSON.stringify(lemonEvent("order_created", "orders", "3", lemonOrder()));
    const junk = await postJson(paths.lemonsqueezy as string, fresh, {
      headers: { "x-signature": `${signLemon(fresh, LEMON_SECRET)}zz` },
    });
    expect(pick(junk)).toEqual(error(400, "malformed X-Signature header"));
    expect(await payment("ls_order_3")).toBeUndefined();
  });
});

describe("Polar connector", () => {
  let msg = 0;
  function deliver(
    event: Record<string, unknown>,
    options: { ts?: number; id?: string; secret?: string } = {},
  ) {
    const payload = JSON.stringify(event);
    const id = options.id ?? `msg_2Lp0c1${(++msg).toString().padStart(6, "0")}`;
    const headers = signPolar(payload, options.secret ?? POLAR_SECRET, id, options.ts ?? NOW_S);
    return postJson(paths.polar as string, payload, { headers });
  }

  it("records order.paid with its customer and metadata attribution, and a refund under the order's customer", async () => {
    const order = polarOrder();
    const r = await deliver(polarEvent("order.paid", order, "2026-03-11T11:00:01Z"));
    expect(r.status).toBe(200);
    expect(await payment(order.id as string)).toMatchObject({
      customerId: "992fae2a-2a17-4b7a-8d9e-e287cf90131b",
      currency: "EUR",
      amountMinor: 2380,
      kind: "charge",
      status: "succeeded",
      subscriptionId: "e5149aae-e521-42b9-b24c-abb3d71eea2e",
    });
    expect(await customer("992fae2a-2a17-4b7a-8d9e-e287cf90131b")).toMatchObject({
      email: "pola@example.com",
      country: "DE",
      visitorId: "v_polar_1",
    });
    const refund = polarRefund(order.id as string);
    await deliver(polarEvent("refund.created", refund, "2026-03-12T09:00:00Z"));
    expect(await payment(refund.id as string)).toMatchObject({
      kind: "refund",
      amountMinor: 1190,
      status: "succeeded",
      customerId: "992fae2a-2a17-4b7a-8d9e-e287cf90131b",
    });
  });

  it("keeps the subscription current, never overwritten by an older state", async () => {
    const s = polarSubscription();
    await deliver(polarEvent("subscription.active", s, "2026-03-11T11:00:02Z"));
    expect(await sub(s.id as string)).toMatchObject({
      plan: "Polar Pro",
      interval: "month",
      status: "active",
      amountMinor: 2000,
      currency: "EUR",
      currentPeriodEnd: Date.parse("2026-04-11T11:00:00Z"),
    });
    const canceled = {
      ...s,
      status: "canceled",
      canceled_at: "2026-03-20T00:00:00Z",
      ended_at: "2026-03-20T00:00:00Z",
      modified_at: "2026-03-20T00:00:00Z",
    };
    await deliver(polarEvent("subscription.revoked", canceled, "2026-03-20T00:00:00Z"));
    await deliver(
      polarEvent(
        "subscription.updated",
        { ...s, status: "past_due", modified_at: "2026-03-15T00:00:00Z" },
        "2026-03-15T00:00:00Z",
      ),
    );
    expect(await sub(s.id as string)).toMatchObject({
      status: "canceled",
      endedAt: Date.parse("2026-03-20T00:00:00Z"),
    });
  });

  it("keeps a customer's email, name, country and metadata ids from customer.updated", async () => {
    await deliver(
      polarEvent(
        "customer.updated",
        {
          ...polarCustomer({ id: "5a1b2c3d-0000-4000-8000-000000000001" }),
          metadata: { ingest_user_id: "u_pola" },
        },
        "2026-03-02T00:00:00Z",
      ),
    );
    expect(await customer("5a1b2c3d-0000-4000-8000-000000000001")).toMatchObject({
      email: "pola@example.com",
      name: "Pola Polar",
      country: "DE",
      userId: "u_pola",
    });
  });

  it("applies a repeated webhook-id once and refuses missing, wrong and stale signatures", async () => {
    const event = polarEvent(
      "order.paid",
      polarOrder({ id: "0f0e0d0c-0b0a-4909-8807-060504030201" }),
      "2026-03-11T11:00:01Z",
    );
    expect(outcome(await deliver(event, { id: "msg_repeat" }))).toBe("applied");
    expect(outcome(await deliver(event, { id: "msg_repeat" }))).toBe("duplicate");
    const payload = JSON.stringify(event);
    expect(pick(await postJson(paths.polar as string, payload))).toEqual(
      error(400, "missing webhook-id, webhook-timestamp or webhook-signature header"),
    );
    expect(pick(await deliver(event, { secret: "polar_whs_other" }))).toEqual(
      error(400, "webhook-signature does not match the body"),
    );
    expect(pick(await deliver(event, { ts: NOW_S - 301 }))).toEqual(
      error(400, "webhook-timestamp is more than 300 seconds off"),
    );
    for (const ts of [NOW_S + 301, NOW_S + 365 * 86_400]) {
      expect(pick(await deliver(event, { ts }))).toEqual(
        error(400, "webhook-timestamp is more than 300 seconds off"),
      );
    }
  });
});
