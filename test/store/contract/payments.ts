/** The store contract, the payments part: payments, customers and subscriptions. */
import { beforeEach, describe, expect, it } from "vitest";
import type { CustomerPatch, Store, SubscriptionPatch } from "../../../src/store/port.js";
import { checkPatchesProperty } from "../../helpers/patches-property.js";
import {
  MAX_SAFE,
  payment,
  type StoreContract,
  T0,
  uid,
  write,
} from "../../helpers/store-contract.js";

export function describePaymentsContract(contract: StoreContract): void {
  const { newSite } = contract;
  let store: Store;
  beforeEach(() => {
    store = contract.store;
  });

  describe("payments", () => {
    it("inserts a payment with its customer and subscription", async () => {
      const { site } = await newSite();
      const p = payment(site.id, uid("pay"), { subscriptionId: "sub_1" });
      const subscription: SubscriptionPatch = {
        siteId: site.id,
        subscriptionId: "sub_1",
        customerId: "cus_1",
        currency: "USD",
        plan: "pro",
        interval: "month",
        amountMinor: 4900,
        defaults: { status: "active", startedAt: T0 },
        at: T0 + 10,
      };
      await store.commitPayments([
        {
          payment: p,
          customer: {
            siteId: site.id,
            customerId: "cus_1",
            email: "buyer@example.com",
            at: T0 + 10,
          },
          subscription,
        },
      ]);
      expect(await store.getPayment(site.id, p.paymentId)).toEqual(p);
      expect(await store.getCustomer(site.id, "cus_1")).toEqual({
        siteId: site.id,
        customerId: "cus_1",
        email: "buyer@example.com",
        metadata: {},
        createdAt: T0 + 10,
        updatedAt: T0 + 10,
      });
      expect(await store.getSubscription(site.id, "sub_1")).toEqual({
        siteId: site.id,
        subscriptionId: "sub_1",
        customerId: "cus_1",
        currency: "USD",
        plan: "pro",
        interval: "month",
        status: "active",
        amountMinor: 4900,
        startedAt: T0,
        createdAt: T0 + 10,
        updatedAt: T0 + 10,
      });
      expect(await store.getPayment(site.id, uid("pay"))).toBeUndefined();
      expect(await store.getPayment(uid("site"), p.paymentId)).toBeUndefined();
      expect(await store.getCustomer(site.id, uid("cus"))).toBeUndefined();
      expect(await store.getSubscription(site.id, uid("sub"))).toBeUndefined();
    });

    it("finds a customer's refunds and chargebacks of a charge by their metadata, failed ones excepted", async () => {
      const { site } = await newSite();
      const of = (id: string, over: Parameters<typeof payment>[2]) =>
        write(payment(site.id, id, { metadata: { stripe_charge: "ch_1" }, ...over }));
      await store.commitPayments([
        write(payment(site.id, "ch_1", { metadata: {} })),
        of("re_1", { kind: "refund", amountMinor: 500 }),
        of("dp_1", { kind: "chargeback", amountMinor: 300, status: "pending" }),
        of("re_failed", { kind: "refund", status: "failed" }),
        of("re_other_customer", { kind: "refund", customerId: "cus_2" }),
        of("ch_not_a_refund", { kind: "charge" }),
        write(
          payment(site.id, "re_other_charge", {
            kind: "refund",
            metadata: { stripe_charge: "ch_2" },
          }),
        ),
        write(
          payment(site.id, "re_other_key", { kind: "refund", metadata: { polar_order: "ch_1" } }),
        ),
      ]);
      const found = await store.refundsOfCharge(site.id, "cus_1", "stripe_charge", "ch_1");
      expect(found.map((p) => [p.paymentId, p.kind, p.amountMinor]).sort()).toEqual([
        ["dp_1", "chargeback", 300],
        ["re_1", "refund", 500],
      ]);
      expect(await store.refundsOfCharge(site.id, "cus_1", "stripe_charge", "ch_9")).toEqual([]);
    });

    it("round-trips a payment without optional fields as undefined", async () => {
      const { site } = await newSite();
      const p = payment(site.id, uid("pay"), { feeMinor: undefined, metadata: {} });
      await store.commitPayments([write(p)]);
      const stored = await store.getPayment(site.id, p.paymentId);
      expect(stored).toEqual(p);
      expect(stored?.feeMinor).toBeUndefined();
      expect(stored?.subscriptionId).toBeUndefined();
      expect(stored?.metadata).toEqual({});
      expect(await store.getSubscription(site.id, "sub_1")).toBeUndefined();
    });

    it("re-sending a payment replaces its fields but keeps createdAt", async () => {
      const { site } = await newSite();
      const id = uid("pay");
      const first = payment(site.id, id, {
        subscriptionId: "sub_9",
        createdAt: T0 + 1,
        updatedAt: T0 + 1,
      });
      await store.commitPayments([write(first)]);
      const second = payment(site.id, id, {
        customerId: "cus_2",
        currency: "EUR",
        amountMinor: 2999,
        feeMinor: undefined,
        kind: "refund",
        status: "failed",
        paidAt: T0 + 3,
        metadata: { order: "A-2", note: "retry" },
        createdAt: T0 + 2,
        updatedAt: T0 + 2,
      });
      await store.commitPayments([write(second)]);
      const stored = await store.getPayment(site.id, id);
      expect(stored).toEqual({ ...second, createdAt: T0 + 1 });
      expect(stored?.feeMinor).toBeUndefined();
      expect(stored?.subscriptionId).toBeUndefined();
      expect(stored?.metadata).toEqual({ order: "A-2", note: "retry" });
    });

    it("a customer patch never erases known fields with absent ones", async () => {
      const { site } = await newSite();
      const customerId = uid("cus");
      const commit = (customer: CustomerPatch) =>
        store.commitPayments([
          {
            payment: payment(site.id, uid("pay"), { customerId, updatedAt: customer.at }),
            customer,
          },
        ]);
      await commit({
        siteId: site.id,
        customerId,
        email: "ada@example.com",
        userId: "user_ada",
        name: "Ada",
        country: "GB",
        visitorId: "vis_ada",
        metadata: { tier: "gold", source: "ads" },
        at: T0 + 1,
      });
      await commit({ siteId: site.id, customerId, name: "Ada L.", at: T0 + 2 });
      expect(await store.getCustomer(site.id, customerId)).toEqual({
        siteId: site.id,
        customerId,
        email: "ada@example.com",
        userId: "user_ada",
        name: "Ada L.",
        country: "GB",
        visitorId: "vis_ada",
        metadata: { tier: "gold", source: "ads" },
        createdAt: T0 + 1,
        updatedAt: T0 + 2,
      });
      // Present metadata replaces the map as a whole (no merge).
      await commit({ siteId: site.id, customerId, metadata: { tier: "platinum" }, at: T0 + 3 });
      const c = await store.getCustomer(site.id, customerId);
      expect(c?.metadata).toEqual({ tier: "platinum" });
      expect(c?.email).toBe("ada@example.com");
      expect(c?.updatedAt).toBe(T0 + 3);
      expect(c?.createdAt).toBe(T0 + 1);
    });

    it("stores the email as given (the domain lower-cases it) and absent fields as undefined", async () => {
      const { site } = await newSite();
      const customerId = uid("cus");
      await store.commitPayments([
        {
          payment: payment(site.id, uid("pay"), { customerId }),
          customer: { siteId: site.id, customerId, email: "buyer+tag@example.com", at: T0 },
        },
      ]);
      const c = await store.getCustomer(site.id, customerId);
      expect(c).toEqual({
        siteId: site.id,
        customerId,
        email: "buyer+tag@example.com",
        metadata: {},
        createdAt: T0,
        updatedAt: T0,
      });
      for (const field of ["userId", "name", "country", "visitorId"] as const) {
        expect(c?.[field], field).toBeUndefined();
      }
    });

    it("applies subscription defaults only on insert", async () => {
      const { site } = await newSite();
      const subscriptionId = uid("sub");
      const base = { siteId: site.id, subscriptionId, customerId: "cus_1", currency: "EUR" };
      const commit = (s: SubscriptionPatch) =>
        store.commitPayments([
          write(payment(site.id, uid("pay"), { subscriptionId, updatedAt: s.at }), {
            subscription: s,
          }),
        ]);
      await commit({
        ...base,
        plan: "pro",
        interval: "year",
        amountMinor: 99_00,
        defaults: { status: "active", startedAt: T0 + 1 },
        at: T0 + 1,
      });
      await commit({
        ...base,
        status: "canceled",
        canceledAt: T0 + 5,
        defaults: { status: "trialing", startedAt: T0 + 2 },
        at: T0 + 2,
      });
      expect(await store.getSubscription(site.id, subscriptionId)).toEqual({
        ...base,
        plan: "pro",
        interval: "year",
        status: "canceled",
        amountMinor: 99_00,
        startedAt: T0 + 1,
        canceledAt: T0 + 5,
        createdAt: T0 + 1,
        updatedAt: T0 + 2,
      });
      // No status sent: the stored one stays, whatever the defaults say.
      await commit({
        ...base,
        customerId: "cus_2",
        currency: "GBP",
        currentPeriodEnd: T0 + 9,
        endedAt: T0 + 8,
        defaults: { status: "active", startedAt: T0 + 3 },
        at: T0 + 3,
      });
      // The currency is the unit of the amount: without an amount it does not change.
      expect(await store.getSubscription(site.id, subscriptionId)).toEqual({
        ...base,
        customerId: "cus_2",
        currency: "EUR",
        plan: "pro",
        interval: "year",
        status: "canceled",
        amountMinor: 99_00,
        startedAt: T0 + 1,
        currentPeriodEnd: T0 + 9,
        canceledAt: T0 + 5,
        endedAt: T0 + 8,
        createdAt: T0 + 1,
        updatedAt: T0 + 3,
      });
      await commit({
        ...base,
        currency: "GBP",
        amountMinor: 80_00,
        defaults: { status: "active", startedAt: T0 + 4 },
        at: T0 + 4,
      });
      expect(await store.getSubscription(site.id, subscriptionId)).toMatchObject({
        currency: "GBP",
        amountMinor: 80_00,
      });
    });

    it("a new subscription with status and start given ignores the defaults", async () => {
      const { site } = await newSite();
      const subscriptionId = uid("sub");
      await store.commitPayments([
        write(payment(site.id, uid("pay"), { subscriptionId }), {
          subscription: {
            siteId: site.id,
            subscriptionId,
            customerId: "cus_1",
            currency: "USD",
            status: "trialing",
            startedAt: T0 - 1_000,
            defaults: { status: "active", startedAt: T0 },
            at: T0,
          },
        }),
      ]);
      const s = await store.getSubscription(site.id, subscriptionId);
      expect(s?.status).toBe("trialing");
      expect(s?.startedAt).toBe(T0 - 1_000);
      for (const field of [
        "plan",
        "interval",
        "amountMinor",
        "currentPeriodEnd",
        "canceledAt",
        "endedAt",
      ] as const) {
        expect(s?.[field], field).toBeUndefined();
      }
    });

    it("applies several writes of one payment and customer in one batch in order", async () => {
      const { site } = await newSite();
      const id = uid("pay");
      const customerId = uid("cus");
      const first = payment(site.id, id, { customerId, amountMinor: 100, createdAt: T0 + 1 });
      const second = payment(site.id, id, {
        customerId,
        amountMinor: 200,
        feeMinor: undefined,
        createdAt: T0 + 2,
        updatedAt: T0 + 2,
      });
      await store.commitPayments([
        {
          payment: first,
          customer: {
            siteId: site.id,
            customerId,
            email: "a@example.com",
            metadata: { k: "1" },
            at: T0 + 1,
          },
        },
        { payment: second, customer: { siteId: site.id, customerId, name: "B", at: T0 + 2 } },
      ]);
      expect(await store.getPayment(site.id, id)).toEqual({ ...second, createdAt: T0 + 1 });
      expect(await store.getCustomer(site.id, customerId)).toEqual({
        siteId: site.id,
        customerId,
        email: "a@example.com",
        name: "B",
        metadata: { k: "1" },
        createdAt: T0 + 1,
        updatedAt: T0 + 2,
      });
    });

    it("20 concurrent sends of one new payment make one payment, and none fails", async () => {
      const { site } = await newSite();
      const id = uid("pay");
      const customerId = uid("cus");
      const subscriptionId = uid("sub");
      const sends = Array.from({ length: 20 }, (_, i) =>
        store.commitPayments([
          write(
            payment(site.id, id, {
              customerId,
              subscriptionId,
              amountMinor: 1000 + i,
              createdAt: T0 + i,
              updatedAt: T0 + i,
            }),
            {
              subscription: {
                siteId: site.id,
                subscriptionId,
                customerId,
                currency: "USD",
                defaults: { status: "active", startedAt: T0 },
                at: T0 + i,
              },
            },
          ),
        ]),
      );
      await expect(Promise.all(sends)).resolves.toHaveLength(20);
      const stored = await store.getPayment(site.id, id);
      expect(stored).toBeDefined();
      const i = (stored?.amountMinor ?? 0) - 1000;
      expect(i).toBeGreaterThanOrEqual(0);
      expect(i).toBeLessThan(20);
      expect(stored?.updatedAt).toBe(T0 + i);
      expect(stored?.createdAt).toBeGreaterThanOrEqual(T0);
      expect(stored?.createdAt).toBeLessThan(T0 + 20);
      expect((await store.getCustomer(site.id, customerId))?.customerId).toBe(customerId);
      expect((await store.getSubscription(site.id, subscriptionId))?.status).toBe("active");
    });

    it("keeps money as exact integer minor units", async () => {
      const { site } = await newSite();
      const cases: [string, number, number | undefined][] = [
        ["USD", 1999, 59],
        ["JPY", 1000, 0],
        ["KWD", 1234, 1],
        ["USD", MAX_SAFE, MAX_SAFE - 1],
        ["EUR", 1, undefined],
      ];
      const written = cases.map(([currency, amountMinor, feeMinor]) =>
        payment(site.id, uid("pay"), { currency, amountMinor, feeMinor }),
      );
      await store.commitPayments(written.map((p) => write(p)));
      for (const p of written) {
        const stored = await store.getPayment(site.id, p.paymentId);
        expect(stored).toEqual(p);
        expect(Number.isSafeInteger(stored?.amountMinor)).toBe(true);
        expect(stored?.amountMinor).toBe(p.amountMinor);
        expect(stored?.feeMinor).toBe(p.feeMinor);
      }
      const subscriptionId = uid("sub");
      await store.commitPayments([
        write(payment(site.id, uid("pay"), { subscriptionId }), {
          subscription: {
            siteId: site.id,
            subscriptionId,
            customerId: "cus_1",
            currency: "USD",
            amountMinor: MAX_SAFE,
            defaults: { status: "active", startedAt: T0 },
            at: T0,
          },
        }),
      ]);
      expect((await store.getSubscription(site.id, subscriptionId))?.amountMinor).toBe(MAX_SAFE);
    });

    it("commitPayments of no writes does nothing", async () => {
      await expect(store.commitPayments([])).resolves.toBeUndefined();
    });
  });

  describe("customer and subscription patches", () => {
    it("leave what the domain's patch functions say, call after call (property)", async () => {
      const { site } = await newSite();
      await checkPatchesProperty(store, site.id);
    });
  });
}
