/** The store contract, the site-overview part: traffic per day, new visitors, revenue cells, recent payments. */
import { beforeEach, describe, expect, it } from "vitest";
import type { Attribution, RevenueCell, Store } from "../../../src/store/port.js";
import {
  bareTouch,
  event,
  group,
  payment,
  type StoreContract,
  T0,
  touch,
  uid,
  write,
} from "../../helpers/store-contract.js";

const DAY = 86_400_000;

export function describeOverviewContract(contract: StoreContract): void {
  const { newSite } = contract;
  let store: Store;
  beforeEach(() => {
    store = contract.store;
  });

  describe("site overview", () => {
    it("trafficByDay: distinct visitors and pageviews per UTC day of ts, in [from, to), this site only", async () => {
      const { account, site } = await newSite();
      const other = await newSite();
      const e = (name: string, visitorId: string, ts: number) =>
        event(site.id, name, { visitorId, ts, receivedAt: ts });
      await store.commitEvents([
        group(
          account.id,
          [
            e("pageview", "v1", T0),
            e("pageview", "v1", T0 + 1000),
            e("signup", "v1", T0 + 2000),
            e("pageview", "v2", T0 + DAY - 1),
            e("signup", "v3", T0 + DAY),
            e("pageview", "v1", T0 + DAY + 5),
            // Outside [from, to): not counted.
            e("pageview", "v9", T0 - 1),
            e("pageview", "v9", T0 + 3 * DAY),
          ],
          { ceiling: 1000 },
        ),
        group(other.account.id, [event(other.site.id, "pageview", { ts: T0 })], {
          ceiling: 1000,
        }),
      ]);
      expect(await store.trafficByDay(site.id, T0, T0 + 3 * DAY)).toEqual([
        { day: "2025-06-01", visitors: 2, pageviews: 3 },
        { day: "2025-06-02", visitors: 2, pageviews: 1 },
      ]);
      expect(await store.trafficByDay(site.id, T0 + 2 * DAY, T0 + 3 * DAY)).toEqual([]);
    });

    it("newVisitorCounts: first touches with ts in [from, to), by channel, source, campaign and landing page", async () => {
      const { account, site } = await newSite();
      const touches = [
        touch(site.id, "v1", { ts: T0 }),
        touch(site.id, "v2", { ts: T0 + DAY - 1 }),
        touch(site.id, "v3", { ts: T0 + 5, campaign: "summer" }),
        bareTouch(site.id, "v4", {
          ts: T0 + 6,
          channel: "Direct",
          landingPage: "https://example.com/",
        }),
        // Outside [from, to): not counted.
        touch(site.id, "v5", { ts: T0 - 1 }),
        touch(site.id, "v6", { ts: T0 + DAY }),
      ];
      await store.commitEvents([group(account.id, [], { ceiling: 100, countable: 0, touches })]);
      const rows = await store.newVisitorCounts(site.id, T0, T0 + DAY);
      const key = (r: { channel: string; campaign?: string }) => `${r.channel}/${r.campaign ?? ""}`;
      expect(rows.sort((a, b) => (key(a) < key(b) ? -1 : 1))).toEqual([
        { channel: "Direct", landingPage: "https://example.com/", visitors: 1 },
        {
          channel: "Organic Search",
          source: "google",
          campaign: "spring",
          landingPage: "https://example.com/pricing",
          visitors: 2,
        },
        {
          channel: "Organic Search",
          source: "google",
          campaign: "summer",
          landingPage: "https://example.com/pricing",
          visitors: 1,
        },
      ]);
    });

    it("revenueCells and recentPayments: succeeded payments of [from, to) with their first touch, exact", async () => {
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

      const cells = await store.revenueCells(site.id, T0, T0 + 2 * DAY);
      const order = (c: RevenueCell) => `${c.day}/${c.currency}/${c.channel}`;
      expect(cells.sort((a, b) => (order(a) < order(b) ? -1 : 1))).toEqual([
        {
          day: "2025-06-01",
          currency: "USD",
          channel: "Paid Search",
          source: "google",
          campaign: "spring",
          landingPage: "https://example.com/pricing",
          grossMinor: 18_000_000_000_000_000n,
          refundsMinor: 300n,
          chargebacksMinor: 0n,
        },
        {
          day: "2025-06-01",
          currency: "USD",
          channel: "unattributed",
          grossMinor: 0n,
          refundsMinor: 0n,
          chargebacksMinor: 200n,
        },
        {
          day: "2025-06-02",
          currency: "EUR",
          channel: "Paid Search",
          source: "google",
          campaign: "spring",
          landingPage: "https://example.com/pricing",
          grossMinor: 2000n,
          refundsMinor: 0n,
          chargebacksMinor: 0n,
        },
      ]);

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
