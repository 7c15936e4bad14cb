import { describe, expect, it } from "vitest";
import { DomainError } from "../../../../src/domain/errors.js";
import { createPaymentsApp } from "../../../../src/domain/payments/payments-app.js";
import { httpErrorOf } from "../../../../src/edge/http-errors.js";
import type { KeyPrincipal, PaymentWrite, Store } from "../../../../src/store/port.js";
import { minimalPayment } from "../../../helpers/payment-fixtures.js";

const NOW = Date.UTC(2024, 5, 1, 12, 0, 0);
const principal = { siteId: "site_1", accountId: "acc_1" } as KeyPrincipal;

/** A store that records commitPayments calls and can be made slow or failing; its account is on `plan`. */
function fakeStore(behaviour: { fail?: boolean; gate?: Promise<void>; plan?: string } = {}) {
  const batches: PaymentWrite[][] = [];
  const store = {
    async getAccount(id: string) {
      return id === "acc_1"
        ? { id, name: "A", plan: behaviour.plan ?? "scale", createdAt: NOW }
        : undefined;
    },
    async commitPayments(writes: PaymentWrite[]) {
      await behaviour.gate;
      if (behaviour.fail) throw new Error("connection refused");
      batches.push(writes);
    },
  } as unknown as Store;
  return { store, batches };
}

function app(store: Store, queue = { capacity: 100, batchMax: 50, flushMs: 5 }) {
  return createPaymentsApp({ store, clock: { now: () => NOW }, queue });
}

async function domainError(p: Promise<unknown>): Promise<DomainError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(err)}`);
  return err;
}

describe("createPaymentsApp", () => {
  it("answers with the payment_id once the write is committed", async () => {
    const { store, batches } = fakeStore();
    await expect(app(store).record(principal, minimalPayment())).resolves.toEqual({
      paymentId: "pay_min",
    });
    expect(batches).toHaveLength(1);
    expect(batches[0]?.[0]?.payment).toMatchObject({
      siteId: "site_1",
      paymentId: "pay_min",
      amountMinor: 1000,
    });
  });

  it("refuses a payment of an account below scale with plan_required, before validating, and writes nothing", async () => {
    for (const plan of ["free", "starter", "growth"]) {
      const { store, batches } = fakeStore({ plan });
      const err = await domainError(app(store).record(principal, minimalPayment({ amount: 0 })));
      expect({ kind: err.kind, message: err.message }).toEqual({
        kind: "plan_required",
        message: `recording payments requires the scale plan; account acc_1 is on the ${plan} plan`,
      });
      expect(httpErrorOf(err)).toMatchObject({ status: 403, code: "forbidden" });
      expect(batches).toHaveLength(0);
    }
  });

  it("refuses invalid input with one invalid_input error and writes nothing", async () => {
    const { store, batches } = fakeStore();
    const err = await domainError(
      app(store).record(principal, minimalPayment({ amount: 0, kind: "x" })),
    );
    expect(err.kind).toBe("invalid_input");
    expect(err.message).toBe(
      "invalid payment input: amount: must be greater than 0; kind: must be one of charge, refund, chargeback",
    );
    expect(batches).toHaveLength(0);
  });

  it("shares one store write among concurrent payments", async () => {
    const { store, batches } = fakeStore();
    const a = app(store);
    const ids = Array.from({ length: 30 }, (_, i) => `pay_${i}`);
    const results = await Promise.all(
      ids.map((id) => a.record(principal, minimalPayment({ payment_id: id }))),
    );
    expect(results.map((r) => r.paymentId)).toEqual(ids);
    expect(batches).toHaveLength(1);
    expect(batches[0]?.map((w) => w.payment.paymentId)).toEqual(ids);
  });

  it("answers 503 rate_limited with Retry-After 2 when the queue is full", async () => {
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const { store } = fakeStore({ gate });
    const a = app(store, { capacity: 2, batchMax: 1, flushMs: 0 });
    const first = a.record(principal, minimalPayment({ payment_id: "a" }));
    const second = a.record(principal, minimalPayment({ payment_id: "b" }));
    const err = await domainError(a.record(principal, minimalPayment({ payment_id: "c" })));
    expect(err.kind).toBe("rate_limited");
    expect(httpErrorOf(err)).toEqual({ status: 503, code: "rate_limited" });
    expect(err.retryAfterSeconds).toBe(2);
    open();
    await expect(Promise.all([first, second])).resolves.toHaveLength(2);
  });

  it("answers 503 unavailable when the store fails, never the cause", async () => {
    const { store } = fakeStore({ fail: true });
    const err = await domainError(app(store).record(principal, minimalPayment()));
    expect(err.kind).toBe("unavailable");
    expect(httpErrorOf(err)).toEqual({ status: 503, code: "unavailable" });
    expect(err.message).toBe("the store is unavailable, retry later");
  });

  it("drain waits for queued writes", async () => {
    const { store, batches } = fakeStore();
    const a = app(store, { capacity: 100, batchMax: 50, flushMs: 50 });
    const pending = a.record(principal, minimalPayment());
    // The plan check's read resolves in microtasks; by the next macrotask the write is queued
    // (waiting for its 50 ms flush), which is what drain must wait for.
    await new Promise((resolve) => setImmediate(resolve));
    await a.drain();
    expect(batches).toHaveLength(1);
    await pending;
  });
});
