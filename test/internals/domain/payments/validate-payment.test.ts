import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ISO_COUNTRIES, isCountry } from "../../../../src/domain/payments/iso-countries.js";
import {
  formatIssues,
  invalidPaymentInput,
  type PaymentValidation,
  validatePayment,
} from "../../../../src/domain/payments/validate-payment.js";
import { httpErrorOf } from "../../../../src/edge/http-errors.js";
import { connectCodeOf } from "../../../../src/rpc/connect-errors.js";
import {
  FULL_PAYMENT_CUSTOMER,
  FULL_PAYMENT_SUBSCRIPTION,
  fullPayment,
  MESSAGE_TABLE,
  minimalPayment,
  withField,
} from "../../../helpers/payment-fixtures.js";

/** The error message validation gives for `body`, or undefined when it is valid. */
function messageOf(body: Record<string, unknown>): string | undefined {
  const v = validatePayment(body);
  return v.ok ? undefined : formatIssues(v.issues);
}

function valid(body: Record<string, unknown>) {
  const v: PaymentValidation = validatePayment(body);
  if (!v.ok) throw new Error(`expected valid, got ${formatIssues(v.issues)}`);
  return v.payment;
}

describe("validatePayment: one row of the spec's message table at a time", () => {
  it.each(MESSAGE_TABLE)("$field ($note)", ({ field, value, message }) => {
    expect(messageOf(withField(fullPayment(), field, value))).toBe(
      `invalid payment input: ${field}: ${message}`,
    );
  });

  it("accepts the full and the minimal bodies", () => {
    expect(messageOf(fullPayment())).toBeUndefined();
    expect(messageOf(minimalPayment())).toBeUndefined();
  });

  it("reports a missing customer under customer.id", () => {
    expect(messageOf(withField(fullPayment(), "customer", undefined))).toBe(
      "invalid payment input: customer.id: required, 1-128 chars of [A-Za-z0-9_-:.]",
    );
  });

  it("reports an empty subscription under subscription.id", () => {
    expect(messageOf(fullPayment({ subscription: {} }))).toBe(
      "invalid payment input: subscription.id: required when subscription is set",
    );
  });

  it("accepts ids of exactly 1 and 128 characters from the whole character set", () => {
    const id = "Az09_-:.".repeat(16);
    expect(id).toHaveLength(128);
    expect(messageOf(minimalPayment({ payment_id: id, customer: { id } }))).toBeUndefined();
    expect(messageOf(minimalPayment({ payment_id: "p", customer: { id: "c" } }))).toBeUndefined();
  });

  it("says what is wrong with a malformed subscription.id", () => {
    expect(messageOf(withField(fullPayment(), "subscription.id", "sub 1"))).toBe(
      "invalid payment input: subscription.id: must be 1-128 chars of [A-Za-z0-9_-:.]",
    );
  });
});

describe("validatePayment: several invalid fields", () => {
  it("sorts them by field name and joins them with '; '", () => {
    const body = fullPayment({ currency: "usd", amount: 0 });
    expect(messageOf(body)).toBe(
      "invalid payment input: amount: must be greater than 0; currency: must be a 3-letter ISO 4217 code",
    );
  });

  it("reports three mistakes in field order, whatever order they were sent in", () => {
    const body = {
      paid_at: "yesterday",
      kind: "sale",
      payment_id: "pay_3",
      customer: { id: "cus_3", email: "nobody" },
      amount: 5,
      currency: "EUR",
    };
    expect(messageOf(body)).toBe(
      "invalid payment input: customer.email: must be an email address; " +
        "kind: must be one of charge, refund, chargeback; " +
        "paid_at: must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
    );
  });

  it("reports every field of the table at once, in code-unit order", () => {
    const body = {
      payment_id: "",
      customer: { id: "", email: "x", country: "ZZ" },
      amount: -1,
      currency: "EURO",
      fee: -1,
      kind: "x",
      paid_at: "x",
      status: "x",
      subscription: {
        interval: "x",
        status: "x",
        amount: -1,
        started_at: "x",
        current_period_end: "x",
        canceled_at: "x",
        ended_at: "x",
      },
    };
    expect(messageOf(body)).toBe(
      [
        "invalid payment input: amount: must be greater than 0",
        "currency: must be a 3-letter ISO 4217 code",
        "customer.country: must be ISO 3166-1 alpha-2",
        "customer.email: must be an email address",
        "customer.id: required, 1-128 chars of [A-Za-z0-9_-:.]",
        "fee: must not be negative",
        "kind: must be one of charge, refund, chargeback",
        "paid_at: must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
        "payment_id: required, 1-128 chars of [A-Za-z0-9_-:.]",
        "status: must be one of succeeded, pending, failed",
        "subscription.amount: must not be negative",
        "subscription.canceled_at: must be RFC 3339",
        "subscription.current_period_end: must be RFC 3339",
        "subscription.ended_at: must be RFC 3339",
        "subscription.id: required when subscription is set",
        "subscription.interval: must be one of day, week, month, year",
        "subscription.started_at: must be RFC 3339",
        "subscription.status: must be one of active, trialing, past_due, paused, canceled, ended",
      ].join("; "),
    );
  });

  it("reports an empty body as every required field", () => {
    expect(messageOf({})).toBe(
      "invalid payment input: amount: must be greater than 0; " +
        "currency: must be a 3-letter ISO 4217 code; " +
        "customer.id: required, 1-128 chars of [A-Za-z0-9_-:.]; " +
        "kind: must be one of charge, refund, chargeback; " +
        "paid_at: must be RFC 3339, e.g. 2024-01-15T10:30:00Z; " +
        "payment_id: required, 1-128 chars of [A-Za-z0-9_-:.]",
    );
  });

  it("is a 400 invalid_input DomainError", () => {
    const v = validatePayment({});
    if (v.ok) throw new Error("expected issues");
    const err = invalidPaymentInput(v.issues);
    expect(err.kind).toBe("invalid_input");
    expect(httpErrorOf(err)).toEqual({ status: 400, code: "invalid_input" });
    expect(connectCodeOf(err)).toBe(Code.InvalidArgument);
  });
});

describe("validatePayment: exact money", () => {
  it.each([
    ["amount", 29.999, "USD", "amount: must have at most 2 decimal places for USD"],
    ["amount", 1000.5, "JPY", "amount: must have at most 0 decimal places for JPY"],
    ["amount", 1.0005, "KWD", "amount: must have at most 3 decimal places for KWD"],
    ["fee", 0.001, "USD", "fee: must have at most 2 decimal places for USD"],
    [
      "subscription.amount",
      9.999,
      "USD",
      "subscription.amount: must have at most 2 decimal places for USD",
    ],
    ["amount", 1e13, "USD", "amount: must be at most 9999999999999.99 for USD"],
    ["amount", 1e15, "JPY", "amount: must be at most 999999999999999 for JPY"],
    ["fee", 1e300, "USD", "fee: must be at most 9999999999999.99 for USD"],
  ])("%s %d %s", (field, value, currency, message) => {
    const body = withField(minimalPayment({ currency, subscription: { id: "s" } }), field, value);
    expect(messageOf(body)).toBe(`invalid payment input: ${message}`);
  });

  it("does not report precision when the currency itself is invalid", () => {
    expect(messageOf(fullPayment({ currency: "XYZ", amount: 1.23456, fee: 0.0001 }))).toBe(
      "invalid payment input: currency: must be a 3-letter ISO 4217 code",
    );
  });

  it("reports the sign rule, not precision, for a negative amount with many decimals", () => {
    expect(messageOf(fullPayment({ amount: -1.234 }))).toBe(
      "invalid payment input: amount: must be greater than 0",
    );
  });

  it("converts to minor units by the currency's exponent", () => {
    expect(valid(fullPayment({ amount: 29.99, fee: 1.17 }))).toMatchObject({
      amountMinor: 2999,
      feeMinor: 117,
      currency: "USD",
    });
    expect(
      valid(
        fullPayment({
          currency: "JPY",
          amount: 3000,
          fee: 90,
          subscription: { id: "s", amount: 3000 },
        }),
      ),
    ).toMatchObject({ amountMinor: 3000, feeMinor: 90, subscription: { amountMinor: 3000 } });
    expect(valid(fullPayment({ currency: "KWD", amount: 12.345, fee: 0.005 }))).toMatchObject({
      amountMinor: 12345,
      feeMinor: 5,
    });
  });

  it("accepts a zero fee and a zero subscription amount", () => {
    const p = valid(fullPayment({ fee: 0, subscription: { id: "s", amount: 0 } }));
    expect(p.feeMinor).toBe(0);
    expect(p.subscription?.amountMinor).toBe(0);
  });
});

describe("validatePayment: values of the wrong type (Connect sends NaN as a string)", () => {
  it.each([
    ["amount", "29", "amount: must be greater than 0"],
    ["amount", "NaN", "amount: must be greater than 0"],
    ["amount", "Infinity", "amount: must be greater than 0"],
    ["amount", Number.NaN, "amount: must be greater than 0"],
    ["fee", "NaN", "fee: must not be negative"],
    ["subscription.amount", "-Infinity", "subscription.amount: must not be negative"],
    ["currency", 840, "currency: must be a 3-letter ISO 4217 code"],
    ["payment_id", 42, "payment_id: required, 1-128 chars of [A-Za-z0-9_-:.]"],
    ["kind", ["charge"], "kind: must be one of charge, refund, chargeback"],
    ["paid_at", 1705314600000, "paid_at: must be RFC 3339, e.g. 2024-01-15T10:30:00Z"],
    ["customer", "cus_1", "customer.id: required, 1-128 chars of [A-Za-z0-9_-:.]"],
    ["customer.email", true, "customer.email: must be an email address"],
    ["metadata", { a: 3 }, "metadata: must be an object of string values"],
    ["metadata", ["a"], "metadata: must be an object of string values"],
    ["customer.metadata", { a: null }, "customer.metadata: must be an object of string values"],
    ["customer.name", 7, "customer.name: must be a string"],
    ["subscription", "sub_1", "subscription.id: required when subscription is set"],
  ])("%s = %j", (field, value, message) => {
    expect(messageOf(withField(fullPayment(), field, value))).toBe(
      `invalid payment input: ${message}`,
    );
  });

  it("takes JSON null as an absent field", () => {
    const p = valid(
      fullPayment({
        fee: null,
        status: null,
        metadata: null,
        subscription: null,
        customer: { id: "c", email: null },
      }),
    );
    expect(p.feeMinor).toBeUndefined();
    expect(p.status).toBe("succeeded");
    expect(p.metadata).toEqual({});
    expect(p.subscription).toBeUndefined();
    expect(p.customer).toEqual({ id: "c" });
  });
});

describe("validatePayment: normalisation", () => {
  it("keeps every field of the full body", () => {
    expect(valid(fullPayment())).toEqual({
      paymentId: "pay_001",
      customer: {
        id: "cus_001",
        ...FULL_PAYMENT_CUSTOMER,
      },
      currency: "USD",
      amountMinor: 2999,
      feeMinor: 117,
      kind: "charge",
      status: "succeeded",
      paidAt: Date.UTC(2024, 0, 15, 10, 30),
      metadata: { order: "A-1", source: "stripe" },
      subscription: {
        id: "sub_001",
        ...FULL_PAYMENT_SUBSCRIPTION,
      },
    });
  });

  it("defaults status to succeeded and metadata to {}; leaves the subscription's defaults to the store", () => {
    const p = valid(minimalPayment({ subscription: { id: "sub_x" } }));
    expect(p.status).toBe("succeeded");
    expect(p.metadata).toEqual({});
    expect(p.subscription).toEqual({ id: "sub_x" });
  });

  it.each(["charge", "refund", "chargeback"])("accepts kind %s", (kind) => {
    expect(valid(minimalPayment({ kind })).kind).toBe(kind);
  });

  it.each(["succeeded", "pending", "failed"])("accepts status %s", (status) => {
    expect(valid(minimalPayment({ status })).status).toBe(status);
  });

  it.each(["day", "week", "month", "year"])("accepts interval %s", (interval) => {
    expect(
      valid(minimalPayment({ subscription: { id: "s", interval } })).subscription?.interval,
    ).toBe(interval);
  });

  it.each(["active", "trialing", "past_due", "paused", "canceled", "ended"])(
    "accepts subscription status %s",
    (status) => {
      expect(
        valid(minimalPayment({ subscription: { id: "s", status } })).subscription?.status,
      ).toBe(status);
    },
  );

  it("treats empty free-text fields and empty customer metadata as not sent", () => {
    const p = valid(
      minimalPayment({
        customer: { id: "c", user_id: "", name: "", visitor_id: "", metadata: {} },
        subscription: { id: "s", plan: "" },
      }),
    );
    expect(p.customer).toEqual({ id: "c" });
    expect(p.subscription).toEqual({ id: "s" });
  });

  it("converts every time to Unix ms", () => {
    const p = valid(
      minimalPayment({
        paid_at: "2024-03-01T01:00:00+01:00",
        subscription: {
          id: "s",
          started_at: "2024-03-01T00:00:00Z",
          current_period_end: "2024-04-01T00:00:00Z",
          canceled_at: "2024-03-15T12:00:00.250Z",
          ended_at: "2024-04-01T00:00:00-00:00",
        },
      }),
    );
    expect(p.paidAt).toBe(Date.UTC(2024, 2, 1));
    expect(p.subscription).toEqual({
      id: "s",
      startedAt: Date.UTC(2024, 2, 1),
      currentPeriodEnd: Date.UTC(2024, 3, 1),
      canceledAt: Date.UTC(2024, 2, 15, 12, 0, 0, 250),
      endedAt: Date.UTC(2024, 3, 1),
    });
  });
});

describe("ISO 3166-1 alpha-2", () => {
  it("has the 249 officially assigned codes, each a named region", () => {
    expect(ISO_COUNTRIES.size).toBe(249);
    const names = new Intl.DisplayNames(["en"], { type: "region" });
    for (const code of ISO_COUNTRIES) {
      expect(code).toMatch(/^[A-Z]{2}$/);
      expect(names.of(code)).not.toBe(code);
    }
  });

  it.each(["US", "GB", "DE", "JP", "AX", "BQ", "CW", "SS", "SX", "AQ", "UM"])(
    "accepts %s",
    (code) => {
      expect(isCountry(code)).toBe(true);
    },
  );

  it.each(["UK", "EU", "XK", "ZZ", "AN", "YU", "us", "Us", "USA", ""])("refuses %s", (code) => {
    expect(isCountry(code)).toBe(false);
  });
});
