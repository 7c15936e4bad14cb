/** The store contract, the attribution part: first touches, customer-visitor links, attribution and the reports. */
import { beforeEach, describe, expect, it } from "vitest";
import { byTimeThenVisitor } from "../../../src/domain/attribution/ranking.js";
import type {
  Attribution,
  PaymentWrite,
  Store,
  SubscriptionPatch,
  VisitorTouch,
} from "../../../src/store/port.js";
import {
  bareTouch,
  event,
  group,
  MAX_SAFE,
  payment,
  type StoreContract,
  storedRevenue,
  T0,
  touch,
  uid,
  write,
} from "../../helpers/store-contract.js";

export function describeAttributionContract(contract: StoreContract): void {
  const { newSite } = contract;
  let store: Store;
  beforeEach(() => {
    store = contract.store;
  });

  describe("first touches", () => {
    /** Commits one group of touches only (countable 0, so never refused). */
    async function commitTouches(accountId: string, touches: VisitorTouch[]) {
      const [r] = await store.commitEvents([
        group(accountId, [], { ceiling: 100, countable: 0, touches }),
      ]);
      return r;
    }

    /** The stored first touches, in the order the domain sorts them (stores return any order). */
    async function firstTouches(siteId: string, visitorIds: string[]) {
      return (await store.getFirstTouches(siteId, visitorIds)).sort(byTimeThenVisitor);
    }

    it("keeps the best touch: non-internal over internal, then the earlier; ties keep the stored one", async () => {
      const { account, site } = await newSite();
      const first = (await store.getFirstTouches(site.id, ["v1"]))[0];
      expect(first).toBeUndefined();
      const steps: [VisitorTouch, boolean, VisitorTouch][] = [];
      const step = async (t: VisitorTouch, changes: boolean, stored: VisitorTouch) => {
        steps.push([t, changes, stored]);
        const r = await commitTouches(account.id, [t]);
        expect(r).toEqual(
          changes
            ? { ok: true, remaining: 100, firstTouches: ["v1"] }
            : { ok: true, remaining: 100 },
        );
        if (!changes) expect(r && "firstTouches" in r).toBe(false);
        expect(await store.getFirstTouches(site.id, ["v1"])).toEqual([stored]);
      };
      const internal200 = bareTouch(site.id, "v1", {
        ts: T0 + 200,
        internal: true,
        channel: "Direct",
        landingPage: "https://example.com/a",
      });
      // None stored: an internal touch is set.
      await step(internal200, true, internal200);
      // A later internal one does not replace it.
      await step({ ...internal200, ts: T0 + 300, landingPage: "https://x/" }, false, internal200);
      // The same time, internal: a tie keeps the stored one.
      await step({ ...internal200, landingPage: "https://tie/" }, false, internal200);
      // An earlier internal one does.
      const internal50 = { ...internal200, ts: T0 + 50, landingPage: "https://example.com/b" };
      await step(internal50, true, internal50);
      // A non-internal one beats any internal one, even later.
      const organic400 = touch(site.id, "v1", { ts: T0 + 400 });
      await step(organic400, true, organic400);
      // An internal one never beats a non-internal one, even earlier.
      await step({ ...internal50, ts: T0 + 1 }, false, organic400);
      // A later non-internal one does not replace it.
      await step(touch(site.id, "v1", { ts: T0 + 500, channel: "Email" }), false, organic400);
      // The same time, non-internal: a tie keeps the stored one.
      await step(touch(site.id, "v1", { ts: T0 + 400, channel: "Social" }), false, organic400);
      // An earlier non-internal one replaces it whole, optional fields included.
      const referral300 = bareTouch(site.id, "v1", {
        ts: T0 + 300,
        channel: "Referral",
        landingPage: "https://example.com/$landing",
      });
      await step(referral300, true, referral300);
      const [stored] = await store.getFirstTouches(site.id, ["v1"]);
      for (const field of ["source", "medium", "campaign"] as const) {
        expect(stored?.[field], field).toBeUndefined();
      }
      // Values that look like operators or field paths are stored as given.
      const dollars = touch(site.id, "v1", {
        ts: T0 + 299,
        channel: "$channel",
        source: "$source",
        medium: "$$REMOVE",
        campaign: "$literal",
        landingPage: "$landing_page",
      });
      await step(dollars, true, dollars);
      expect(steps).toHaveLength(10);
    });

    it("reports in firstTouches only the visitors each group set or improved", async () => {
      const { account, site } = await newSite();
      const other = await newSite();
      const results = await store.commitEvents([
        group(account.id, [], {
          ceiling: 100,
          countable: 0,
          touches: [
            touch(site.id, "vA", { ts: T0 + 100 }),
            touch(site.id, "vB", { ts: T0 + 100, internal: true, channel: "Direct" }),
          ],
        }),
        // vA later: no change; vB non-internal: improves.
        group(account.id, [], {
          ceiling: 100,
          countable: 0,
          touches: [
            touch(site.id, "vA", { ts: T0 + 200 }),
            touch(site.id, "vB", { ts: T0 + 300, channel: "Email" }),
          ],
        }),
        // vA earlier: improves (a later group of the same batch).
        group(account.id, [], {
          ceiling: 100,
          countable: 0,
          touches: [touch(site.id, "vA", { ts: T0 + 50, channel: "Paid Search" })],
        }),
        // No change at all: no firstTouches key.
        group(account.id, [], {
          ceiling: 100,
          countable: 0,
          touches: [touch(site.id, "vA", { ts: T0 + 60 }), touch(site.id, "vB", { ts: T0 + 900 })],
        }),
        // An empty list, and no list.
        group(account.id, [], { ceiling: 100, countable: 0, touches: [] }),
        group(account.id, [], { ceiling: 100, countable: 0 }),
        // Refused by quota: its touches are not written.
        group(
          account.id,
          [1, 2, 3, 4].map((n) => event(site.id, `e${n}`)),
          { ceiling: 3, touches: [touch(site.id, "vC"), touch(site.id, "vA", { ts: T0 })] },
        ),
        // Same visitor id on another site: a touch of its own.
        group(other.account.id, [event(other.site.id, "pageview")], {
          ceiling: 10,
          touches: [touch(other.site.id, "vA", { ts: T0 + 999 })],
        }),
      ]);
      expect(results).toEqual([
        { ok: true, remaining: 100, firstTouches: ["vA", "vB"] },
        { ok: true, remaining: 100, firstTouches: ["vB"] },
        { ok: true, remaining: 100, firstTouches: ["vA"] },
        { ok: true, remaining: 100 },
        { ok: true, remaining: 100 },
        { ok: true, remaining: 100 },
        { ok: false, reason: "quota_exceeded", remaining: 3 },
        { ok: true, remaining: 9, firstTouches: ["vA"] },
      ]);
      for (const i of [3, 4, 5])
        expect(Object.keys(results[i] ?? {}).sort()).toEqual(["ok", "remaining"]);
      expect(await firstTouches(site.id, ["vA", "vB", "vC"])).toEqual([
        touch(site.id, "vA", { ts: T0 + 50, channel: "Paid Search" }),
        touch(site.id, "vB", { ts: T0 + 300, channel: "Email" }),
      ]);
      expect(await firstTouches(other.site.id, ["vA", "vB"])).toEqual([
        touch(other.site.id, "vA", { ts: T0 + 999 }),
      ]);
      // The refused group's events are not written either.
      expect(await store.listEvents(site.id, 10)).toEqual([]);
      // Across calls: the stored touch is what a new one is compared with.
      expect(
        await store.commitEvents([
          group(account.id, [], {
            ceiling: 100,
            countable: 0,
            touches: [touch(site.id, "vA", { ts: T0 + 51 }), touch(site.id, "vC", { ts: T0 })],
          }),
        ]),
      ).toEqual([{ ok: true, remaining: 100, firstTouches: ["vC"] }]);
    });

    it("a group counted against the quota reports its touches with its remaining count", async () => {
      const { account, site } = await newSite();
      const results = await store.commitEvents([
        group(account.id, [event(site.id, "pageview", { visitorId: "vq" })], {
          ceiling: 2,
          touches: [touch(site.id, "vq")],
        }),
        group(account.id, [event(site.id, "pageview", { visitorId: "vr" })], {
          ceiling: 2,
          touches: [touch(site.id, "vr")],
        }),
        group(account.id, [event(site.id, "pageview", { visitorId: "vs" })], {
          ceiling: 2,
          touches: [touch(site.id, "vs")],
        }),
      ]);
      expect(results).toEqual([
        { ok: true, remaining: 1, firstTouches: ["vq"] },
        { ok: true, remaining: 0, firstTouches: ["vr"] },
        { ok: false, reason: "quota_exceeded", remaining: 0 },
      ]);
      expect((await firstTouches(site.id, ["vq", "vr", "vs"])).map((t) => t.visitorId)).toEqual([
        "vq",
        "vr",
      ]);
    });

    it("getFirstTouches: the asked visitors' touches (in the domain's order: by time then visitor id)", async () => {
      const { account, site } = await newSite();
      const other = await newSite();
      await commitTouches(account.id, [
        touch(site.id, "v_c", { ts: T0 + 10 }),
        touch(site.id, "v_b", { ts: T0 + 20 }),
        touch(site.id, "v_a", { ts: T0 + 20 }),
        touch(site.id, "v_z", { ts: T0 + 5, internal: true }),
        touch(other.site.id, "v_d", { ts: T0 }),
      ]);
      expect(await firstTouches(site.id, ["v_a", "v_b", "v_c", "v_d", "v_unknown", "v_a"])).toEqual(
        [
          touch(site.id, "v_c", { ts: T0 + 10 }),
          touch(site.id, "v_a", { ts: T0 + 20 }),
          touch(site.id, "v_b", { ts: T0 + 20 }),
        ],
      );
      expect(await store.getFirstTouches(site.id, ["v_z"])).toEqual([
        touch(site.id, "v_z", { ts: T0 + 5, internal: true }),
      ]);
      expect(await store.getFirstTouches(site.id, [])).toEqual([]);
      expect(await store.getFirstTouches(uid("site"), ["v_a"])).toEqual([]);
    });
  });

  describe("customer-visitor links", () => {
    it("keeps the earliest linkedAt and the strongest via of each link", async () => {
      const { site } = await newSite();
      const customerId = uid("cus");
      await store.linkCustomerVisitors(site.id, customerId, [
        { visitorId: "v1", via: "customer", linkedAt: T0 + 100 },
        { visitorId: "v2", via: "visitor_id", linkedAt: T0 + 50 },
      ]);
      expect(await store.getCustomerVisitors(site.id, customerId)).toEqual([
        { visitorId: "v2", via: "visitor_id", linkedAt: T0 + 50 },
        { visitorId: "v1", via: "customer", linkedAt: T0 + 100 },
      ]);
      // Stronger and later: the via changes, the time stays.
      await store.linkCustomerVisitors(site.id, customerId, [
        { visitorId: "v1", via: "user_id", linkedAt: T0 + 200 },
      ]);
      // Weaker and earlier: the time changes, the via stays.
      await store.linkCustomerVisitors(site.id, customerId, [
        { visitorId: "v1", via: "visitor_id", linkedAt: T0 + 10 },
        { visitorId: "v2", via: "customer", linkedAt: T0 + 5 },
      ]);
      // Weaker and later: nothing changes.
      await store.linkCustomerVisitors(site.id, customerId, [
        { visitorId: "v2", via: "customer", linkedAt: T0 + 500 },
      ]);
      // visitor_id beats customer.
      await store.linkCustomerVisitors(site.id, customerId, [
        { visitorId: "v3", via: "customer", linkedAt: T0 + 10 },
      ]);
      await store.linkCustomerVisitors(site.id, customerId, [
        { visitorId: "v3", via: "visitor_id", linkedAt: T0 + 10 },
      ]);
      // Several links of one visitor in one call merge the same way.
      await store.linkCustomerVisitors(site.id, customerId, [
        { visitorId: "v4", via: "customer", linkedAt: T0 + 30 },
        { visitorId: "v4", via: "user_id", linkedAt: T0 + 40 },
        { visitorId: "v4", via: "visitor_id", linkedAt: T0 + 35 },
      ]);
      await store.linkCustomerVisitors(site.id, customerId, []);
      expect(await store.getCustomerVisitors(site.id, customerId)).toEqual([
        { visitorId: "v2", via: "visitor_id", linkedAt: T0 + 5 },
        { visitorId: "v1", via: "user_id", linkedAt: T0 + 10 },
        { visitorId: "v3", via: "visitor_id", linkedAt: T0 + 10 },
        { visitorId: "v4", via: "user_id", linkedAt: T0 + 30 },
      ]);
      expect(await store.getCustomerVisitors(site.id, uid("cus"))).toEqual([]);
      expect(await store.getCustomerVisitors(uid("site"), customerId)).toEqual([]);
    });

    it("concurrent links of one visitor agree on the earliest time and strongest via", async () => {
      const { site } = await newSite();
      const customerId = uid("cus");
      const kinds = ["customer", "visitor_id", "user_id"] as const;
      await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          store.linkCustomerVisitors(site.id, customerId, [
            { visitorId: "v", via: kinds[i % 3] ?? "customer", linkedAt: T0 + 100 - i },
          ]),
        ),
      );
      expect(await store.getCustomerVisitors(site.id, customerId)).toEqual([
        { visitorId: "v", via: "user_id", linkedAt: T0 + 89 },
      ]);
    });

    it("findCustomersToReattribute: by linked visitor or by the customer's user id, sorted", async () => {
      const { site } = await newSite();
      const other = await newSite();
      const base = uid("cus");
      const [a, b, c, d, e] = ["a", "b", "c", "d", "e"].map((x) => `${base}_${x}`) as [
        string,
        string,
        string,
        string,
        string,
      ];
      const withUser = (customerId: string, userId: string, siteId = site.id): PaymentWrite =>
        write(payment(siteId, uid("pay"), { customerId }), {
          customer: { siteId, customerId, userId, at: T0 },
        });
      await store.commitPayments([
        withUser(a, "u_1"),
        withUser(e, "u_2"),
        withUser(d, "u_1", other.site.id),
        write(payment(site.id, uid("pay"), { customerId: b })),
      ]);
      await store.linkCustomerVisitors(site.id, c, [
        { visitorId: "v1", via: "visitor_id", linkedAt: T0 },
        { visitorId: "v2", via: "customer", linkedAt: T0 },
      ]);
      await store.linkCustomerVisitors(site.id, b, [
        { visitorId: "v1", via: "user_id", linkedAt: T0 },
      ]);
      await store.linkCustomerVisitors(other.site.id, d, [
        { visitorId: "v3", via: "user_id", linkedAt: T0 },
      ]);
      const find = (visitorIds: string[], userIds: string[]) =>
        store.findCustomersToReattribute(site.id, { visitorIds, userIds });
      expect(await find(["v1"], [])).toEqual([b, c]);
      expect(await find(["v2"], [])).toEqual([c]);
      expect(await find(["v3"], [])).toEqual([]);
      expect(await find([], ["u_1"])).toEqual([a]);
      expect(await find([], ["u_2", "u_1", "u_2"])).toEqual([a, e]);
      expect(await find(["v2", "v1", "v9"], ["u_2", "u_9"])).toEqual([b, c, e]);
      expect(await find(["v1", "v2"], ["u_1", "u_2"])).toEqual([a, b, c, e]);
      expect(await find([], [])).toEqual([]);
      expect(
        await store.findCustomersToReattribute(other.site.id, {
          visitorIds: ["v1", "v3"],
          userIds: ["u_1"],
        }),
      ).toEqual([d]);
    });
  });

  describe("attribution", () => {
    const paidSearch: Attribution = {
      channel: "Paid Search",
      source: "google",
      medium: "cpc",
      campaign: "$spring.sale",
      landingPage: "https://example.com/pricing",
      visitorId: "vis_1",
      via: "user_id",
      touchedAt: T0 - 5_000,
    };
    const direct: Attribution = {
      channel: "Direct",
      landingPage: "https://example.com/",
      visitorId: "vis_2",
      via: "customer",
      touchedAt: T0 - 9_000,
    };
    const DAY = 86_400_000;
    const revenue = (siteId: string) => storedRevenue(store, siteId, T0 - DAY, T0 + DAY);

    it("new payments and customers are unattributed", async () => {
      const { site } = await newSite();
      const p = payment(site.id, uid("pay"), { customerId: uid("cus") });
      await store.commitPayments([write(p)]);
      expect((await store.getPayment(site.id, p.paymentId))?.attribution).toBeUndefined();
      expect((await store.getCustomer(site.id, p.customerId))?.attribution).toBeUndefined();
      expect(await revenue(site.id)).toEqual([
        {
          channel: "unattributed",
          currency: "USD",
          grossMinor: 1999n,
          refundsMinor: 0n,
          chargebacksMinor: 0n,
          payments: 1,
          payingCustomers: 1,
        },
      ]);
    });

    it("setAttribution sets the customer and all its payments, idempotently; clearing unsets them", async () => {
      const { site } = await newSite();
      const customerId = uid("cus");
      const otherCustomer = uid("cus");
      const p1 = payment(site.id, uid("pay"), { customerId, amountMinor: 1000 });
      const p2 = payment(site.id, uid("pay"), { customerId, amountMinor: 300, kind: "refund" });
      const p3 = payment(site.id, uid("pay"), { customerId, status: "pending" });
      const q = payment(site.id, uid("pay"), { customerId: otherCustomer, amountMinor: 50 });
      await store.commitPayments([p1, p2, p3, q].map((p) => write(p)));
      const customerBefore = await store.getCustomer(site.id, customerId);

      await store.setAttribution(site.id, customerId, paidSearch);
      await store.setAttribution(site.id, customerId, paidSearch);
      expect(await store.getCustomer(site.id, customerId)).toEqual({
        ...customerBefore,
        attribution: paidSearch,
      });
      for (const p of [p1, p2, p3]) {
        expect(await store.getPayment(site.id, p.paymentId)).toEqual({
          ...p,
          attribution: paidSearch,
        });
      }
      expect(await store.getPayment(site.id, q.paymentId)).toEqual(q);
      expect((await store.getCustomer(site.id, otherCustomer))?.attribution).toBeUndefined();
      const row = (channel: string, gross: bigint, refunds: bigint, payments: number) => ({
        channel,
        currency: "USD",
        grossMinor: gross,
        refundsMinor: refunds,
        chargebacksMinor: 0n,
        payments,
        payingCustomers: 1,
      });
      expect(await revenue(site.id)).toEqual([
        row("Paid Search", 1000n, 300n, 2),
        row("unattributed", 50n, 0n, 1),
      ]);

      // Another attribution replaces it whole (no stale optional fields).
      await store.setAttribution(site.id, customerId, direct);
      expect((await store.getCustomer(site.id, customerId))?.attribution).toEqual(direct);
      const stored = await store.getPayment(site.id, p1.paymentId);
      expect(stored?.attribution).toEqual(direct);
      expect(stored?.attribution?.source).toBeUndefined();
      expect(stored?.attribution?.campaign).toBeUndefined();
      expect(await revenue(site.id)).toEqual([
        row("Direct", 1000n, 300n, 2),
        row("unattributed", 50n, 0n, 1),
      ]);

      // Clearing: unattributed again, twice.
      await store.setAttribution(site.id, customerId, undefined);
      await store.setAttribution(site.id, customerId, undefined);
      expect(await store.getCustomer(site.id, customerId)).toEqual(customerBefore);
      expect((await store.getCustomer(site.id, customerId))?.attribution).toBeUndefined();
      for (const p of [p1, p2, p3]) {
        const cleared = await store.getPayment(site.id, p.paymentId);
        expect(cleared).toEqual(p);
        expect(cleared?.attribution).toBeUndefined();
      }
      expect(await revenue(site.id)).toEqual([
        { ...row("unattributed", 1050n, 300n, 3), payingCustomers: 2 },
      ]);
    });

    it("a re-sent payment keeps its attribution; a new payment of the customer starts unattributed", async () => {
      const { site } = await newSite();
      const customerId = uid("cus");
      const p = payment(site.id, uid("pay"), { customerId, amountMinor: 700 });
      await store.commitPayments([write(p)]);
      await store.setAttribution(site.id, customerId, paidSearch);
      const resent = { ...p, amountMinor: 800, metadata: {}, updatedAt: T0 + 99 };
      const fresh = payment(site.id, uid("pay"), { customerId, amountMinor: 5 });
      await store.commitPayments([write(resent), write(fresh)]);
      expect(await store.getPayment(site.id, p.paymentId)).toEqual({
        ...resent,
        createdAt: p.createdAt,
        attribution: paidSearch,
      });
      expect(await store.getPayment(site.id, fresh.paymentId)).toEqual(fresh);
      expect((await store.getCustomer(site.id, customerId))?.attribution).toEqual(paidSearch);
      expect(await revenue(site.id)).toEqual([
        {
          channel: "Paid Search",
          currency: "USD",
          grossMinor: 800n,
          refundsMinor: 0n,
          chargebacksMinor: 0n,
          payments: 1,
          payingCustomers: 1,
        },
        {
          channel: "unattributed",
          currency: "USD",
          grossMinor: 5n,
          refundsMinor: 0n,
          chargebacksMinor: 0n,
          payments: 1,
          payingCustomers: 1,
        },
      ]);
    });

    it("setAttribution of an unknown customer creates nothing", async () => {
      const { site } = await newSite();
      const customerId = uid("cus");
      await expect(store.setAttribution(site.id, customerId, direct)).resolves.toBeUndefined();
      expect(await store.getCustomer(site.id, customerId)).toBeUndefined();
      expect(await revenue(site.id)).toEqual([]);
    });
  });

  describe("reports", () => {
    const DAY = 86_400_000;

    it("mrrTotals: active and past_due subscriptions with amount and interval, running at `at`", async () => {
      const { site } = await newSite();
      const other = await newSite();
      const at = T0 + 10 * DAY;
      const subscriptions: SubscriptionPatch[] = [];
      const sub = (over: Partial<SubscriptionPatch>, siteId = site.id) => {
        subscriptions.push({
          siteId,
          subscriptionId: uid("sub"),
          customerId: uid("cus"),
          currency: "USD",
          interval: "month",
          amountMinor: 1000,
          status: "active",
          startedAt: T0,
          defaults: { status: "active", startedAt: T0 },
          at: T0,
          ...over,
        });
      };
      // Counted.
      sub({});
      sub({ status: "past_due", amountMinor: 500, startedAt: at });
      sub({ amountMinor: 250, endedAt: at + 1 });
      sub({ interval: "year", amountMinor: 12_000 });
      sub({ currency: "EUR", amountMinor: 900 });
      sub({ currency: "EUR", amountMinor: 100, status: undefined });
      sub({ interval: "week", amountMinor: MAX_SAFE });
      sub({ interval: "week", amountMinor: MAX_SAFE - 4 });
      // Not counted.
      for (const status of ["trialing", "paused", "canceled", "ended"] as const) {
        sub({ status, amountMinor: 1 });
      }
      sub({ amountMinor: 2, startedAt: at + 1 });
      sub({ amountMinor: 3, endedAt: at });
      sub({ amountMinor: 4, endedAt: at - 1 });
      sub({ amountMinor: undefined });
      sub({ interval: undefined, amountMinor: 5 });
      sub({ amountMinor: 6 }, other.site.id);
      await store.commitPayments(
        subscriptions.map((s) =>
          write(
            payment(s.siteId, uid("pay"), {
              customerId: s.customerId,
              subscriptionId: s.subscriptionId,
            }),
            { subscription: s },
          ),
        ),
      );
      expect(await store.mrrTotals(site.id, at)).toEqual([
        { currency: "EUR", interval: "month", amountMinor: 1000n, subscriptions: 2 },
        { currency: "USD", interval: "month", amountMinor: 1750n, subscriptions: 3 },
        {
          currency: "USD",
          interval: "week",
          amountMinor: 18_014_398_509_481_978n,
          subscriptions: 2,
        },
        { currency: "USD", interval: "year", amountMinor: 12_000n, subscriptions: 1 },
      ]);
      // Before the past_due one started (the one ending at `at` still runs),
      // and once the one ending at + 1 has ended (the one starting then runs).
      expect(await store.mrrTotals(site.id, at - 1)).toContainEqual({
        currency: "USD",
        interval: "month",
        amountMinor: 1253n,
        subscriptions: 3,
      });
      expect(await store.mrrTotals(site.id, at + 1)).toContainEqual({
        currency: "USD",
        interval: "month",
        amountMinor: 1502n,
        subscriptions: 3,
      });
      expect(await store.mrrTotals(site.id, T0 - 1)).toEqual([]);
      expect(await store.mrrTotals(uid("site"), at)).toEqual([]);
    });
  });
}
