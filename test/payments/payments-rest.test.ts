/**
 * POST /api/v1/payments over real HTTP against a listening server with a
 * fresh SQLite store: the success envelope, every validation message,
 * strict JSON, the 64 KB limit, idempotent re-sends, concurrency and exact
 * money (read back through ReportsService.GetPayment and the store).
 */
import { describe, expect, it } from "vitest";
import type { PaymentWrite, Store } from "../../src/store/port.js";
import { countPaymentRows, getPayment, postPayment } from "../helpers/payment-clients.js";
import {
  FULL_PAYMENT_CUSTOMER,
  FULL_PAYMENT_SUBSCRIPTION,
  fullPayment,
  MESSAGE_TABLE,
  minimalPayment,
  withField,
} from "../helpers/payment-fixtures.js";
import { createTenant, createTestClock } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const clock = createTestClock(Date.UTC(2024, 5, 1, 12, 0, 0));
/** Every batch the store was asked to commit, in order. */
const committed: PaymentWrite[] = [];

const ctx = useTestServer({
  clock,
  wrapStore: (store: Store) =>
    Object.assign(Object.create(store) as Store, {
      async commitPayments(writes: PaymentWrite[]) {
        await store.commitPayments(writes);
        committed.push(...writes);
      },
    }),
});

function expectInvalid(res: { status: number; body: unknown }, message: string) {
  expect(res.body).toEqual({ ok: false, error: { code: "invalid_input", message } });
  expect(res.status).toBe(400);
}

describe("success", () => {
  it("records a payment and answers the success envelope", async () => {
    const res = await postPayment(ctx.server, fullPayment(), ctx.key);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.text).toBe('{"ok":true,"data":{"payment_id":"pay_001"}}');

    const p = await getPayment(ctx.server, ctx.siteId, "pay_001");
    expect(p).toMatchObject({
      siteId: ctx.siteId,
      paymentId: "pay_001",
      customerId: "cus_001",
      amount: { currency: "USD", minorUnits: 2999n, decimal: "29.99" },
      fee: { currency: "USD", minorUnits: 117n, decimal: "1.17" },
      kind: "charge",
      status: "succeeded",
      paidAt: "2024-01-15T10:30:00.000Z",
      metadata: { order: "A-1", source: "stripe" },
      subscriptionId: "sub_001",
    });
  });

  it("upserts the customer with a lower-case email", async () => {
    await postPayment(ctx.server, fullPayment({ payment_id: "pay_cust" }), ctx.key);
    expect(await ctx.store.getCustomer(ctx.siteId, "cus_001")).toMatchObject({
      customerId: "cus_001",
      ...FULL_PAYMENT_CUSTOMER,
    });
  });

  it("upserts the subscription linked to the customer, in the payment's currency", async () => {
    await postPayment(ctx.server, fullPayment({ payment_id: "pay_sub" }), ctx.key);
    expect(await ctx.store.getSubscription(ctx.siteId, "sub_001")).toMatchObject({
      subscriptionId: "sub_001",
      customerId: "cus_001",
      currency: "USD",
      ...FULL_PAYMENT_SUBSCRIPTION,
    });
  });

  it("defaults a payment's status to succeeded and a new subscription to active from paid_at", async () => {
    const body = minimalPayment({
      payment_id: "pay_defaults",
      paid_at: "2024-03-10T08:00:00+02:00",
      subscription: { id: "sub_defaults" },
    });
    expect((await postPayment(ctx.server, body, ctx.key)).status).toBe(200);
    expect((await getPayment(ctx.server, ctx.siteId, "pay_defaults"))?.status).toBe("succeeded");
    expect(await ctx.store.getSubscription(ctx.siteId, "sub_defaults")).toMatchObject({
      status: "active",
      startedAt: Date.UTC(2024, 2, 10, 6, 0),
      customerId: "cus_min",
    });
  });

  it("keeps kind and status: a refund is a positive amount with kind refund", async () => {
    const body = minimalPayment({
      payment_id: "pay_refund",
      kind: "refund",
      amount: 12.5,
      status: "pending",
    });
    expect((await postPayment(ctx.server, body, ctx.key)).status).toBe(200);
    expect(await getPayment(ctx.server, ctx.siteId, "pay_refund")).toMatchObject({
      kind: "refund",
      status: "pending",
      amount: { minorUnits: 1250n, decimal: "12.50" },
    });
    const negative = await postPayment(ctx.server, { ...body, amount: -12.5 }, ctx.key);
    expectInvalid(negative, "invalid payment input: amount: must be greater than 0");
  });

  it.each([
    ["chargeback", "failed"],
    ["charge", "failed"],
  ])("keeps kind %s with status %s", async (kind, status) => {
    const id = `pay_${kind}_${status}`;
    await postPayment(ctx.server, minimalPayment({ payment_id: id, kind, status }), ctx.key);
    expect(await getPayment(ctx.server, ctx.siteId, id)).toMatchObject({ kind, status });
  });
});

describe("exact money", () => {
  it.each([
    ["JPY", 3000, 3000n, "3000", 90, 90n],
    ["JPY", 1, 1n, "1", 0, 0n],
    ["KWD", 12.345, 12345n, "12.345", 0.005, 5n],
    ["KWD", 0.001, 1n, "0.001", 0, 0n],
    ["USD", 0.29, 29n, "0.29", 0.01, 1n],
    ["USD", 1.1, 110n, "1.10", 0.07, 7n],
    ["BHD", 9999999999.999, 9999999999999n, "9999999999.999", 0, 0n],
    ["USD", 9999999999999.99, 999999999999999n, "9999999999999.99", 0, 0n],
  ])("%s %d round-trips exactly", async (currency, amount, minor, decimal, fee, feeMinor) => {
    const id = `pay_money_${currency}_${minor}`;
    const res = await postPayment(
      ctx.server,
      minimalPayment({ payment_id: id, currency, amount, fee }),
      ctx.key,
    );
    expect(res.status).toBe(200);
    expect(await getPayment(ctx.server, ctx.siteId, id)).toMatchObject({
      amount: { currency, minorUnits: minor, decimal },
      fee: { currency, minorUnits: feeMinor },
    });
  });

  it("stores the subscription amount in minor units of the payment currency", async () => {
    const body = minimalPayment({
      payment_id: "pay_sub_kwd",
      currency: "KWD",
      amount: 3.5,
      subscription: { id: "sub_kwd", amount: 3.5, interval: "month" },
    });
    expect((await postPayment(ctx.server, body, ctx.key)).status).toBe(200);
    expect(await ctx.store.getSubscription(ctx.siteId, "sub_kwd")).toMatchObject({
      currency: "KWD",
      amountMinor: 3500,
    });
  });

  it.each([
    [{ amount: 29.999 }, "amount: must have at most 2 decimal places for USD"],
    [{ amount: 1000.5, currency: "JPY" }, "amount: must have at most 0 decimal places for JPY"],
    [{ amount: 1.2345, currency: "KWD" }, "amount: must have at most 3 decimal places for KWD"],
    [{ fee: 0.125 }, "fee: must have at most 2 decimal places for USD"],
    [{ amount: 1e13 }, "amount: must be at most 9999999999999.99 for USD"],
  ])("refuses %j", async (overrides, message) => {
    const res = await postPayment(ctx.server, minimalPayment(overrides), ctx.key);
    expectInvalid(res, `invalid payment input: ${message}`);
  });
});

describe("validation messages", () => {
  it.each(MESSAGE_TABLE)("$field ($note)", async ({ field, value, message }) => {
    const res = await postPayment(ctx.server, withField(fullPayment(), field, value), ctx.key);
    expectInvalid(res, `invalid payment input: ${field}: ${message}`);
  });

  it("lists three mistakes in one 400, in field order", async () => {
    const body = minimalPayment({
      paid_at: "2024-01-15",
      currency: "usd",
      customer: { id: "c", email: "nope" },
    });
    expectInvalid(
      await postPayment(ctx.server, body, ctx.key),
      "invalid payment input: currency: must be a 3-letter ISO 4217 code; " +
        "customer.email: must be an email address; " +
        "paid_at: must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
    );
  });

  it("sorts by full field path, subscription fields last", async () => {
    const body = fullPayment({
      status: "done",
      fee: -1,
      subscription: { id: "s", interval: "hourly", amount: -3 },
      payment_id: "bad id",
    });
    expectInvalid(
      await postPayment(ctx.server, body, ctx.key),
      "invalid payment input: fee: must not be negative; " +
        "payment_id: required, 1-128 chars of [A-Za-z0-9_-:.]; " +
        "status: must be one of succeeded, pending, failed; " +
        "subscription.amount: must not be negative; " +
        "subscription.interval: must be one of day, week, month, year",
    );
  });

  it("stores nothing for a refused payment", async () => {
    await postPayment(
      ctx.server,
      minimalPayment({ payment_id: "pay_refused", kind: "sale" }),
      ctx.key,
    );
    expect(await getPayment(ctx.server, ctx.siteId, "pay_refused")).toBeUndefined();
  });
});

describe("strict JSON", () => {
  it.each([
    ["ammount", { ...minimalPayment(), ammount: 5 }, 'invalid JSON: unknown field "ammount"'],
    [
      "customer.ammount",
      withField(minimalPayment(), "customer.ammount", 5),
      'invalid JSON: unknown field "customer.ammount"',
    ],
    [
      "subscription.plann",
      minimalPayment({ subscription: { id: "s", plann: "pro" } }),
      'invalid JSON: unknown field "subscription.plann"',
    ],
    [
      "camelCase paymentId",
      { ...minimalPayment(), paymentId: "x" },
      'invalid JSON: unknown field "paymentId"',
    ],
  ])("refuses the unknown field %s", async (_name, body, message) => {
    expectInvalid(await postPayment(ctx.server, body, ctx.key), message);
  });

  it("refuses a misspelled field even when everything else is wrong too", async () => {
    const res = await postPayment(ctx.server, { ammount: 5, currency: "usd" }, ctx.key);
    expectInvalid(res, 'invalid JSON: unknown field "ammount"');
  });

  it.each([
    ["amount as a string", { amount: "29" }, "invalid JSON: amount must be a number, got string"],
    [
      "currency as a number",
      { currency: 840 },
      "invalid JSON: currency must be a string, got number",
    ],
    [
      "customer as a string",
      { customer: "cus_1" },
      "invalid JSON: customer must be an object, got string",
    ],
    [
      "metadata value 3",
      { metadata: { a: 3 } },
      "invalid JSON: metadata.a must be a string, got number",
    ],
    [
      "customer.metadata value true",
      { customer: { id: "c", metadata: { vip: true } } },
      "invalid JSON: customer.metadata.vip must be a string, got boolean",
    ],
    [
      "metadata as an array",
      { metadata: ["a"] },
      "invalid JSON: metadata must be an object, got array",
    ],
    [
      "subscription.amount as a string",
      { subscription: { id: "s", amount: "9.99" } },
      "invalid JSON: subscription.amount must be a number, got string",
    ],
  ])("refuses %s, naming the field", async (_name, overrides, message) => {
    expectInvalid(await postPayment(ctx.server, minimalPayment(overrides), ctx.key), message);
  });

  it.each([
    ["an unclosed object", '{"payment_id": "p"'],
    ["a syntax error", "{payment_id: 1}"],
    ["a trailing comma", '{"payment_id": "p",}'],
    ["an empty body", ""],
  ])("refuses %s as invalid JSON", async (_name, text) => {
    const res = await postPayment(ctx.server, text, ctx.key);
    expect(res.status).toBe(400);
    const body = res.body as { ok: boolean; error: { code: string; message: string } };
    expect(body.ok).toBe(false);
    expect(body.error.code).toBe("invalid_input");
    expect(body.error.message).toMatch(/^invalid JSON: .+/);
  });

  it("refuses a JSON array as the body", async () => {
    expectInvalid(
      await postPayment(ctx.server, "[]", ctx.key),
      "invalid JSON: the body must be a JSON object",
    );
  });

  it("takes null as an absent field", async () => {
    const body = minimalPayment({
      payment_id: "pay_nulls",
      fee: null,
      status: null,
      subscription: null,
    });
    expect((await postPayment(ctx.server, body, ctx.key)).status).toBe(200);
    const p = await getPayment(ctx.server, ctx.siteId, "pay_nulls");
    expect(p?.fee).toBeUndefined();
    expect(p?.status).toBe("succeeded");
    expect(p?.subscriptionId).toBeUndefined();
  });
});

describe("the 64 KB body limit", () => {
  /** A valid body padded through metadata to exactly `bytes` bytes (ASCII, so bytes = chars). */
  function paddedBody(id: string, bytes: number): string {
    const base = JSON.stringify(minimalPayment({ payment_id: id, metadata: { pad: "" } }));
    const text = JSON.stringify(
      minimalPayment({ payment_id: id, metadata: { pad: "x".repeat(bytes - base.length) } }),
    );
    expect(Buffer.byteLength(text)).toBe(bytes);
    return text;
  }

  it("accepts a valid body of exactly 65536 bytes", async () => {
    const res = await postPayment(ctx.server, paddedBody("pay_64k", 65536), ctx.key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, data: { payment_id: "pay_64k" } });
    const base = JSON.stringify(minimalPayment({ payment_id: "pay_64k", metadata: { pad: "" } }));
    const p = await getPayment(ctx.server, ctx.siteId, "pay_64k");
    expect(p?.metadata.pad).toBe("x".repeat(65536 - base.length));
  });

  it("refuses 65537 bytes with 413 invalid_input, without storing it", async () => {
    const res = await postPayment(ctx.server, paddedBody("pay_64k_plus", 65537), ctx.key);
    expect(res.status).toBe(413);
    expect(res.body).toEqual({
      ok: false,
      error: { code: "invalid_input", message: "request body larger than 64 KB" },
    });
    expect(await getPayment(ctx.server, ctx.siteId, "pay_64k_plus")).toBeUndefined();
  });

  it("does not parse a body over the limit", async () => {
    const res = await postPayment(ctx.server, `{${"x".repeat(70_000)}`, ctx.key);
    expect(res.status).toBe(413);
    expect((res.body as { error: { message: string } }).error.message).toBe(
      "request body larger than 64 KB",
    );
  });
});

describe("idempotency", () => {
  it("re-sending a payment_id updates every field as sent and keeps created_at", async () => {
    const first = minimalPayment({
      payment_id: "pay_resend",
      amount: 10,
      fee: 0.3,
      metadata: { v: "1" },
      subscription: { id: "sub_resend" },
    });
    expect((await postPayment(ctx.server, first, ctx.key)).status).toBe(200);
    const before = await getPayment(ctx.server, ctx.siteId, "pay_resend");

    clock.advance(60_000);
    const second = minimalPayment({
      payment_id: "pay_resend",
      amount: 25.5,
      currency: "EUR",
      kind: "chargeback",
      status: "failed",
      paid_at: "2024-01-16T09:00:00Z",
      metadata: { v: "2" },
    });
    const res = await postPayment(ctx.server, second, ctx.key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, data: { payment_id: "pay_resend" } });

    const after = await getPayment(ctx.server, ctx.siteId, "pay_resend");
    expect(after).toMatchObject({
      amount: { currency: "EUR", minorUnits: 2550n, decimal: "25.50" },
      kind: "chargeback",
      status: "failed",
      paidAt: "2024-01-16T09:00:00.000Z",
      metadata: { v: "2" },
      createdAt: before?.createdAt,
    });
    // Sent without fee and subscription: the payment no longer has them.
    expect(after?.fee).toBeUndefined();
    expect(after?.subscriptionId).toBeUndefined();
    expect(after?.updatedAt).toBe(
      new Date(Date.parse(before?.createdAt ?? "") + 60_000).toISOString(),
    );
    expect(countPaymentRows(ctx.server, ctx.siteId, "pay_resend")).toBe(1);
  });

  it("a payment_id is unique per site, not across sites", async () => {
    const other = await createTenant(ctx.server);
    await postPayment(ctx.server, minimalPayment({ payment_id: "pay_shared", amount: 1 }), ctx.key);
    await postPayment(
      ctx.server,
      minimalPayment({ payment_id: "pay_shared", amount: 2 }),
      other.key,
    );
    expect((await getPayment(ctx.server, ctx.siteId, "pay_shared"))?.amount?.minorUnits).toBe(100n);
    expect((await getPayment(ctx.server, other.siteId, "pay_shared"))?.amount?.minorUnits).toBe(
      200n,
    );
  });

  it("20 concurrent sends of one new payment_id store one payment with the last-written values", async () => {
    const id = "pay_race";
    const bodies = Array.from({ length: 20 }, (_, i) =>
      minimalPayment({ payment_id: id, amount: i + 1, metadata: { attempt: String(i) } }),
    );
    const results = await Promise.all(bodies.map((b) => postPayment(ctx.server, b, ctx.key)));
    for (const r of results) expect(r.body).toEqual({ ok: true, data: { payment_id: id } });

    expect(countPaymentRows(ctx.server, ctx.siteId, id)).toBe(1);
    const writes = committed.filter(
      (w) => w.payment.siteId === ctx.siteId && w.payment.paymentId === id,
    );
    expect(writes).toHaveLength(20);
    const last = writes.at(-1)?.payment;
    const stored = await getPayment(ctx.server, ctx.siteId, id);
    expect(stored?.amount?.minorUnits).toBe(BigInt(last?.amountMinor ?? -1));
    expect(stored?.metadata).toEqual(last?.metadata);
  });
});

describe("customer and subscription upserts", () => {
  it("a later payment updates the customer fields it carries and keeps the others", async () => {
    const full = fullPayment({
      payment_id: "pay_c1",
      customer: { ...(fullPayment().customer as object), id: "cus_merge" },
    });
    await postPayment(ctx.server, full, ctx.key);
    await postPayment(
      ctx.server,
      minimalPayment({
        payment_id: "pay_c2",
        customer: { id: "cus_merge", name: "Ada King", email: "ADA@king.org" },
      }),
      ctx.key,
    );
    await postPayment(
      ctx.server,
      minimalPayment({ payment_id: "pay_c3", customer: { id: "cus_merge" } }),
      ctx.key,
    );
    expect(await ctx.store.getCustomer(ctx.siteId, "cus_merge")).toMatchObject({
      email: "ada@king.org",
      userId: "user-42",
      name: "Ada King",
      country: "GB",
      visitorId: "v_abc123",
      metadata: { tier: "gold" },
    });
  });

  it("an empty string does not erase a known customer field", async () => {
    await postPayment(
      ctx.server,
      minimalPayment({
        payment_id: "pay_e1",
        customer: { id: "cus_empty", name: "Grace", user_id: "u1" },
      }),
      ctx.key,
    );
    await postPayment(
      ctx.server,
      minimalPayment({
        payment_id: "pay_e2",
        customer: { id: "cus_empty", name: "", user_id: "", metadata: {} },
      }),
      ctx.key,
    );
    expect(await ctx.store.getCustomer(ctx.siteId, "cus_empty")).toMatchObject({
      name: "Grace",
      userId: "u1",
    });
  });

  it("customer metadata is replaced as a whole when sent", async () => {
    const send = (id: string, metadata?: Record<string, string>) =>
      postPayment(
        ctx.server,
        minimalPayment({ payment_id: id, customer: { id: "cus_meta", metadata } }),
        ctx.key,
      );
    await send("pay_m1", { a: "1", b: "2" });
    await send("pay_m2", { c: "3" });
    expect((await ctx.store.getCustomer(ctx.siteId, "cus_meta"))?.metadata).toEqual({
      c: "3",
    });
    await send("pay_m3");
    expect((await ctx.store.getCustomer(ctx.siteId, "cus_meta"))?.metadata).toEqual({
      c: "3",
    });
  });

  it("a later payment updates the subscription; status and started_at defaults apply only on first insert", async () => {
    await postPayment(
      ctx.server,
      minimalPayment({
        payment_id: "pay_s1",
        paid_at: "2024-01-01T00:00:00Z",
        subscription: { id: "sub_life", plan: "basic", interval: "month", amount: 10 },
      }),
      ctx.key,
    );
    await postPayment(
      ctx.server,
      minimalPayment({
        payment_id: "pay_s2",
        paid_at: "2024-02-01T00:00:00Z",
        subscription: { id: "sub_life", plan: "pro", amount: 20, status: "past_due" },
      }),
      ctx.key,
    );
    await postPayment(
      ctx.server,
      minimalPayment({
        payment_id: "pay_s3",
        paid_at: "2024-03-01T00:00:00Z",
        subscription: {
          id: "sub_life",
          status: "canceled",
          canceled_at: "2024-03-05T00:00:00Z",
          ended_at: "2024-04-01T00:00:00Z",
        },
      }),
      ctx.key,
    );
    expect(await ctx.store.getSubscription(ctx.siteId, "sub_life")).toMatchObject({
      plan: "pro",
      interval: "month",
      amountMinor: 2000,
      status: "canceled",
      startedAt: Date.UTC(2024, 0, 1),
      canceledAt: Date.UTC(2024, 2, 5),
      endedAt: Date.UTC(2024, 3, 1),
    });
    expect((await getPayment(ctx.server, ctx.siteId, "pay_s3"))?.subscriptionId).toBe("sub_life");
  });
});

describe("authentication comes first", () => {
  it("401 without a key, before the body is looked at", async () => {
    const res = await postPayment(ctx.server, { ammount: 1 }, "");
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      ok: false,
      error: { code: "unauthorized", message: "missing or malformed API key" },
    });
  });

  it("403 for a key without the payments scope", async () => {
    const eventsOnly = await createTenant(ctx.server, { scopes: ["events"] });
    const res = await postPayment(ctx.server, minimalPayment(), eventsOnly.key);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      ok: false,
      error: { code: "forbidden", message: "API key lacks the payments scope" },
    });
  });
});

describe("times at the edge of the four-digit-year range", () => {
  it.each([
    ["9999-12-31T23:59:60Z", "9999-12-31T23:59:59.999Z"],
    ["2016-12-31T23:59:60Z", "2016-12-31T23:59:59.999Z"],
    ["9999-12-31T19:59:59-04:00", "9999-12-31T23:59:59.000Z"],
    ["0000-01-01T00:00:00Z", "0000-01-01T00:00:00.000Z"],
  ])("paid_at %s is stored and read back as %s", async (paidAt, stored) => {
    const id = `pay_edge_${paidAt.replace(/\W/g, "")}`;
    const res = await postPayment(
      ctx.server,
      minimalPayment({ payment_id: id, paid_at: paidAt }),
      ctx.key,
    );
    expect(res.status).toBe(200);
    expect((await getPayment(ctx.server, ctx.siteId, id))?.paidAt).toBe(stored);
  });

  it.each(["9999-12-31T23:59:59-00:01", "0000-01-01T00:00:00+00:01", "10000-01-01T00:00:00Z"])(
    "paid_at %s, outside years 0000-9999 in UTC, is refused",
    async (paidAt) => {
      const res = await postPayment(ctx.server, minimalPayment({ paid_at: paidAt }), ctx.key);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        ok: false,
        error: {
          code: "invalid_input",
          message: "invalid payment input: paid_at: must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
        },
      });
    },
  );
});
