/** The store contract, the site-overview part: traffic per day, new visitors, revenue cells, recent payments. */
import { beforeEach, describe, expect, it } from "vitest";
import type { Attribution, PaymentRecord, RevenueRow, Store } from "../../../src/store/port.js";
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

    it("revenueBreakdown and recentPayments: succeeded payments of [from, to) by day and first touch, exact", async () => {
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

      const usd = (netMinor: bigint) => ({ currency: "USD", netMinor });
      const eur = (netMinor: bigint) => ({ currency: "EUR", netMinor });
      expect(await store.revenueBreakdown(site.id, T0, T0 + 2 * DAY)).toEqual({
        // 2 × 9e15 − 300 − 200: past 2^53, exact.
        days: [
          { day: "2025-06-01", ...usd(17_999_999_999_999_500n) },
          { day: "2025-06-02", ...eur(2000n) },
        ],
        // The unattributed chargeback has no source, campaign or landing page.
        sources: [
          { value: "google", ...eur(2000n) },
          { value: "google", ...usd(17_999_999_999_999_700n) },
        ],
        campaigns: [
          { value: "spring", ...eur(2000n) },
          { value: "spring", ...usd(17_999_999_999_999_700n) },
        ],
        landingPages: [
          { value: "https://example.com/pricing", ...eur(2000n) },
          { value: "https://example.com/pricing", ...usd(17_999_999_999_999_700n) },
        ],
      });
      expect(await store.revenueBreakdown(site.id, T0 + 2 * DAY + 1, T0 + 3 * DAY)).toEqual({
        days: [],
        sources: [],
        campaigns: [],
        landingPages: [],
      });

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

    it("revenueBreakdown and revenueByChannel follow every change of a payment: re-sends, re-attribution, erasure, any period", async () => {
      const { site } = await newSite();
      const [ca, cb] = [uid("cus"), uid("cus")];
      // The model: the payments as last written, and each customer's first touch.
      const sent = new Map<string, PaymentRecord>();
      const touchOf = new Map<string, Attribution | undefined>();
      const send = async (list: PaymentRecord[]) => {
        for (const p of list) sent.set(p.paymentId, p);
        await store.commitPayments(list.map((p) => write(p)));
      };
      const attribute = async (customerId: string, a: Attribution | undefined) => {
        touchOf.set(customerId, a);
        await store.setAttribution(site.id, customerId, a);
      };
      const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
      /** What the reads must give for [from, to), computed from the model. */
      const expected = (from: number, to: number) => {
        const nets = {
          days: new Map<string, bigint>(),
          sources: new Map<string, bigint>(),
          campaigns: new Map<string, bigint>(),
          landingPages: new Map<string, bigint>(),
        };
        const rows = new Map<string, RevenueRow & { customers: Set<string> }>();
        for (const p of sent.values()) {
          if (p.status !== "succeeded" || p.paidAt < from || p.paidAt >= to) continue;
          const a = touchOf.get(p.customerId);
          const channel = erasedChannel.get(p.customerId) ?? a?.channel ?? "unattributed";
          const amount = BigInt(p.amountMinor);
          const net = p.kind === "charge" ? amount : -amount;
          const keys: [keyof typeof nets, string | undefined][] = [
            ["days", day(p.paidAt)],
            ["sources", a?.source],
            ["campaigns", a?.campaign],
            ["landingPages", a?.landingPage],
          ];
          for (const [list, key] of keys) {
            if (key === undefined) continue;
            const k = JSON.stringify([key, p.currency]);
            nets[list].set(k, (nets[list].get(k) ?? 0n) + net);
          }
          const rk = `${channel}/${p.currency}`;
          const row = rows.get(rk) ?? {
            channel,
            currency: p.currency,
            grossMinor: 0n,
            refundsMinor: 0n,
            chargebacksMinor: 0n,
            payments: 0,
            payingCustomers: 0,
            customers: new Set<string>(),
          };
          if (p.kind === "charge") row.grossMinor += amount;
          if (p.kind === "refund") row.refundsMinor += amount;
          if (p.kind === "chargeback") row.chargebacksMinor += amount;
          row.payments += 1;
          if (p.kind === "charge") row.customers.add(p.customerId);
          rows.set(rk, row);
        }
        const list = (m: Map<string, bigint>, field: "day" | "value") =>
          [...m]
            .sort(([a], [b]) => (a < b ? -1 : 1))
            .map(([k, netMinor]) => {
              const [key, currency] = JSON.parse(k) as [string, string];
              return { [field]: key, currency, netMinor };
            });
        return {
          breakdown: {
            days: list(nets.days, "day"),
            sources: list(nets.sources, "value"),
            campaigns: list(nets.campaigns, "value"),
            landingPages: list(nets.landingPages, "value"),
          },
          rows: [...rows.values()]
            .map(({ customers, ...r }) => ({ ...r, payingCustomers: customers.size }))
            .sort((a, b) => (`${a.channel}/${a.currency}` < `${b.channel}/${b.currency}` ? -1 : 1)),
        };
      };
      const erasedChannel = new Map<string, string>();
      // Whole days (a dashboard's period), partial days at both ends, one partial day.
      const periods: [number, number][] = [
        [T0, T0 + 3 * DAY],
        [T0 + 3_600_000, T0 + 2 * DAY + 7_200_000],
        [T0 + 10, T0 + 20],
        [T0 + DAY, T0 + 2 * DAY],
      ];
      const check = async (step: string) => {
        for (const [from, to] of periods) {
          const want = expected(from, to);
          const breakdown = await store.revenueBreakdown(site.id, from, to);
          expect({ step, from, to, breakdown }).toEqual({
            step,
            from,
            to,
            breakdown: want.breakdown,
          });
          const rows = await store.revenueByChannel(site.id, from, to);
          expect({ step, from, to, rows }).toEqual({ step, from, to, rows: want.rows });
        }
      };
      const p = (paymentId: string, over: Partial<PaymentRecord>) =>
        payment(site.id, paymentId, { customerId: ca, ...over });
      const google: Attribution = {
        channel: "Organic Search",
        source: "Google",
        landingPage: "https://example.com/",
        visitorId: "v1",
        via: "visitor_id",
        touchedAt: T0 - 1000,
      };
      const spring: Attribution = {
        channel: "Paid Search",
        source: "google",
        campaign: "spring",
        landingPage: "https://example.com/pricing",
        visitorId: "v2",
        via: "user_id",
        touchedAt: T0 - 500,
      };

      await send([
        p("pay_1", { amountMinor: 1000, paidAt: T0 + 15 }),
        p("pay_2", { amountMinor: 500, paidAt: T0 + 5_000_000 }),
        p("pay_3", { amountMinor: 300, kind: "refund", paidAt: T0 + DAY + 1 }),
        p("pay_4", { amountMinor: 2000, currency: "EUR", paidAt: T0 + 2 * DAY + 3_600_000 }),
        p("pay_5", { customerId: cb, amountMinor: 70, kind: "chargeback", paidAt: T0 + 12 }),
        p("pay_6", { customerId: cb, amountMinor: 9, status: "pending", paidAt: T0 + DAY }),
      ]);
      await check("written");
      await attribute(ca, google);
      await check("attributed");
      // Re-sends change what a payment counts for, and where: one field at a time.
      await send([
        p("pay_1", { amountMinor: 1000, paidAt: T0 + 15, status: "failed" }),
        p("pay_2", { amountMinor: 500, kind: "chargeback", paidAt: T0 + 5_000_000 }),
        p("pay_3", { amountMinor: 300, kind: "refund", paidAt: T0 + DAY + 1, currency: "EUR" }),
        p("pay_4", { amountMinor: 2000, currency: "EUR", paidAt: T0 + DAY + 3_600_000 }),
        p("pay_5", { customerId: cb, amountMinor: 75, kind: "chargeback", paidAt: T0 + 12 }),
        p("pay_6", { customerId: cb, amountMinor: 9, status: "succeeded", paidAt: T0 + DAY }),
      ]);
      await check("re-sent");
      // A later identify links the customer to a better first touch.
      await attribute(ca, spring);
      await check("re-attributed");
      await attribute(cb, google);
      await check("second customer attributed");
      await send([p("pay_1", { amountMinor: 1000, paidAt: T0 + 15 })]);
      await check("failed payment succeeded after all");
      // Erasure: the payments keep their channel, lose the touch's details.
      await store.eraseCustomer(site.id, ca, "erased_1");
      for (const [id, q] of sent) {
        if (q.customerId === ca) sent.set(id, { ...q, customerId: "erased_1" });
      }
      erasedChannel.set("erased_1", spring.channel);
      touchOf.set("erased_1", undefined);
      await check("erased");
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
