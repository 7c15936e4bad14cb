/** The store contract, the site-overview part: traffic per day, new visitors, revenue cells, recent payments. */
import { beforeEach, describe, expect, it } from "vitest";
import type { Attribution, Store } from "../../../src/store/port.js";
import { payment, type StoreContract, T0, uid, write } from "../../helpers/store-contract.js";

const DAY = 86_400_000;

export function describeOverviewContract(contract: StoreContract): void {
  const { newSite } = contract;
  let store: Store;
  beforeEach(() => {
    store = contract.store;
  });

  describe("site overview", () => {
    it("recentPayments: the most recent succeeded payments of [from, to), with their first touch", async () => {
      const { site } = await newSite();
      const ca = uid("cus");
      const cb = uid("cus");
      const p = (over: Parameters<typeof payment>[2]) =>
        payment(site.id, uid("pay"), { customerId: ca, paidAt: T0, ...over });
      const big = 9_000_000_000_000_000;
      const payments = [
        p({ paymentId: "pay_a1", amountMinor: big }),
        p({ paymentId: "pay_a2", amountMinor: big, paidAt: T0 + 10 }),
        p({ paymentId: "pay_a3", amountMinor: 300, kind: "refund", paidAt: T0 + 20 }),
        p({ paymentId: "pay_a4", amountMinor: 2000, currency: "EUR", paidAt: T0 + DAY }),
        p({ paymentId: "pay_a5", amountMinor: 7, status: "pending", paidAt: T0 + 30 }),
        p({ paymentId: "pay_a6", amountMinor: 9, paidAt: T0 + 2 * DAY }),
        p({
          paymentId: "pay_b1",
          customerId: cb,
          amountMinor: 200,
          kind: "chargeback",
          paidAt: T0 + 40,
        }),
      ];
      await store.commitPayments(payments.map((x) => write(x)));
      const attribution: Attribution = {
        channel: "Paid Search",
        source: "google",
        campaign: "spring",
        landingPage: "https://example.com/pricing",
        visitorId: "v1",
        via: "visitor_id",
        touchedAt: T0 - 1000,
      };
      await store.setAttribution(site.id, ca, attribution);

      const recent = await store.recentPayments(site.id, T0, T0 + 2 * DAY, 3);
      expect(recent).toEqual([
        {
          paymentId: "pay_a4",
          customerId: ca,
          currency: "EUR",
          amountMinor: 2000,
          kind: "charge",
          paidAt: T0 + DAY,
          channel: "Paid Search",
          source: "google",
          campaign: "spring",
          landingPage: "https://example.com/pricing",
        },
        {
          paymentId: "pay_b1",
          customerId: cb,
          currency: "USD",
          amountMinor: 200,
          kind: "chargeback",
          paidAt: T0 + 40,
          channel: "unattributed",
        },
        expect.objectContaining({ paymentId: "pay_a3", kind: "refund", amountMinor: 300 }),
      ]);
      expect((await store.recentPayments(site.id, T0, T0 + 2 * DAY, 100)).length).toBe(5);
    });

    it("customerPayments: a customer's payments of any status, newest first, this customer only", async () => {
      const { site } = await newSite();
      const customerId = uid("cus");
      const p = (paymentId: string, over: Parameters<typeof payment>[2]) =>
        payment(site.id, paymentId, { customerId, ...over });
      const payments = [
        p("pay_1", { paidAt: T0 }),
        p("pay_2", { paidAt: T0 + 10, status: "failed" }),
        p("pay_3", { paidAt: T0 + 10, kind: "refund", amountMinor: 5 }),
        p("pay_4", { paidAt: T0 + 20, currency: "EUR" }),
        payment(site.id, "pay_other", { customerId: uid("cus"), paidAt: T0 + 30 }),
      ];
      await store.commitPayments(payments.map((x) => write(x)));
      const all = await store.customerPayments(site.id, customerId, 10);
      expect(all.map((x) => x.paymentId)).toEqual(["pay_4", "pay_3", "pay_2", "pay_1"]);
      expect(all[0]).toEqual(await store.getPayment(site.id, "pay_4"));
      expect(
        (await store.customerPayments(site.id, customerId, 2)).map((x) => x.paymentId),
      ).toEqual(["pay_4", "pay_3"]);
      expect(await store.customerPayments(site.id, uid("cus"), 10)).toEqual([]);
    });
  });
}
