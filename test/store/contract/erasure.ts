/** The store contract, the erasure part: customers, user ids and visitors erased (issue 24). */
import { beforeEach, describe, expect, it } from "vitest";
import type {
  Attribution,
  PaymentRecord,
  SiteRecord,
  Store,
  SubscriptionPatch,
} from "../../../src/store/port.js";
import {
  event,
  group,
  payment,
  type StoreContract,
  storedRevenue,
  T0,
  touch,
  uid,
  write,
} from "../../helpers/store-contract.js";

const ZERO_CUSTOMER = { customers: 0, payments: 0, subscriptions: 0, customerLinks: 0 };

export function describeErasureContract(contract: StoreContract): void {
  const { newSite } = contract;
  let store: Store;
  beforeEach(() => {
    store = contract.store;
  });

  const credit = (visitorId: string): Attribution => ({
    channel: "Organic Search",
    source: "google",
    landingPage: "https://example.com/pricing",
    visitorId,
    via: "visitor_id",
    touchedAt: T0,
  });

  /** A customer with personal data, two payments with metadata, a subscription and a link to `v_a`. */
  async function payingCustomer(site: SiteRecord, customerId: string) {
    const sub: SubscriptionPatch = {
      siteId: site.id,
      subscriptionId: uid("sub"),
      customerId,
      currency: "USD",
      interval: "month",
      amountMinor: 4900,
      defaults: { status: "active", startedAt: T0 },
      at: T0 + 10,
    };
    const paid = [
      payment(site.id, uid("pay"), { customerId, metadata: { order: "A-1", email: "x@y.z" } }),
      payment(site.id, uid("pay"), {
        customerId,
        amountMinor: 500,
        kind: "refund",
        paidAt: T0 + 5,
        subscriptionId: sub.subscriptionId,
      }),
    ];
    await store.commitPayments([
      {
        payment: paid[0] as PaymentRecord,
        customer: {
          siteId: site.id,
          customerId,
          email: "ada@example.com",
          name: "Ada Lovelace",
          country: "GB",
          userId: "u_ada",
          visitorId: "v_a",
          metadata: { plan: "pro" },
          at: T0 + 10,
        },
        subscription: sub,
      },
      write(paid[1] as PaymentRecord),
    ]);
    await store.linkCustomerVisitors(site.id, customerId, [
      { visitorId: "v_a", via: "visitor_id", linkedAt: T0 },
    ]);
    await store.setAttribution(site.id, customerId, credit("v_a"), "0");
    return { paid, sub };
  }

  describe("eraseCustomer", () => {
    it("keeps one audit key: 32 random bytes, the same on every call, concurrent first calls included", async () => {
      const keys = await Promise.all([store.auditKey(), store.auditKey(), store.auditKey()]);
      const [first] = keys;
      expect(first).toHaveLength(32);
      for (const k of keys)
        expect(Buffer.from(k).equals(Buffer.from(first as Uint8Array))).toBe(true);
      expect(Buffer.from(await store.auditKey()).equals(Buffer.from(first as Uint8Array))).toBe(
        true,
      );
      expect(Buffer.from(first as Uint8Array).equals(Buffer.alloc(32))).toBe(false);
    });

    it("deletes the customer and its links, keeps its payments and subscriptions under the pseudonym without metadata, reports unchanged", async () => {
      const { site } = await newSite();
      const { paid, sub } = await payingCustomer(site, "cus_ada");
      const revenue = await storedRevenue(store, site.id, T0, T0 + 100);
      const mrr = await store.mrrTotals(site.id, T0 + 50);

      expect(await store.eraseCustomer(site.id, "cus_ada", "erased_0001")).toEqual({
        customers: 1,
        payments: 2,
        subscriptions: 1,
        customerLinks: 1,
      });

      expect(await store.getCustomer(site.id, "cus_ada")).toBeUndefined();
      expect(await store.getCustomerVisitors(site.id, "cus_ada")).toEqual([]);
      expect(await store.getCustomerVisitors(site.id, "erased_0001")).toEqual([]);
      for (const p of paid) {
        const { metadata: _m, attribution: _a, ...kept } = p;
        expect(await store.getPayment(site.id, p.paymentId)).toEqual({
          ...kept,
          customerId: "erased_0001",
          metadata: {},
          erasedChannel: "Organic Search",
        });
      }
      expect((await store.getSubscription(site.id, sub.subscriptionId))?.customerId).toBe(
        "erased_0001",
      );
      // The channel stays, and so do the sums and the count of paying customers.
      expect(await storedRevenue(store, site.id, T0, T0 + 100)).toEqual(revenue);
      expect(revenue.map((r) => r.channel)).toEqual(["Organic Search"]);
      expect(await store.mrrTotals(site.id, T0 + 50)).toEqual(mrr);
      expect(
        await store.findCustomersToReattribute(site.id, {
          visitorIds: ["v_a"],
          userIds: ["u_ada"],
        }),
      ).toEqual([]);
    });

    it("is idempotent, and an unknown customer changes nothing", async () => {
      const { site } = await newSite();
      await payingCustomer(site, "cus_b");
      await payingCustomer(site, "cus_keep");
      expect((await store.eraseCustomer(site.id, "cus_b", "erased_0002")).customers).toBe(1);
      expect(await store.eraseCustomer(site.id, "cus_b", "erased_0003")).toEqual(ZERO_CUSTOMER);
      expect(await store.eraseCustomer(site.id, "cus_nobody", "erased_0004")).toEqual(
        ZERO_CUSTOMER,
      );
      // Another customer of the site, and the same id on another site, are untouched.
      expect((await store.getCustomer(site.id, "cus_keep"))?.email).toBe("ada@example.com");
      const other = await newSite();
      await payingCustomer(other.site, "cus_b");
      expect((await store.getCustomer(other.site.id, "cus_b"))?.email).toBe("ada@example.com");
    });
  });

  describe("eraseUserLinks", () => {
    it("deletes the user id's identify links and $identify events, and names its customers", async () => {
      const { account, site } = await newSite();
      await payingCustomer(site, "cus_u1");
      await payingCustomer(site, "cus_u2");
      const identify = (visitorId: string, userId: string) =>
        event(site.id, "$identify", { visitorId, userId });
      await store.commitEvents([
        group(
          account.id,
          [identify("v1", "u_ada"), identify("v2", "u_ada"), identify("v3", "u_bob")],
          {
            ceiling: 100,
            countable: 0,
            links: [
              { siteId: site.id, visitorId: "v1", userId: "u_ada", ts: T0 },
              { siteId: site.id, visitorId: "v2", userId: "u_ada", ts: T0 },
              { siteId: site.id, visitorId: "v3", userId: "u_bob", ts: T0 },
            ],
          },
        ),
      ]);
      expect(await store.eraseUserLinks(site.id, "u_ada")).toEqual({
        identityLinks: 2,
        events: 2,
        customers: ["cus_u1", "cus_u2"],
      });
      expect(await store.findVisitorsByUser(site.id, "u_ada")).toEqual([]);
      expect((await store.findVisitorsByUser(site.id, "u_bob")).map((l) => l.visitorId)).toEqual([
        "v3",
      ]);
      expect((await store.listEvents(site.id, 10)).map((e) => e.userId)).toEqual(["u_bob"]);
      expect(await store.eraseUserLinks(site.id, "u_ada")).toEqual({
        identityLinks: 0,
        events: 0,
        customers: ["cus_u1", "cus_u2"],
      });
    });
  });

  describe("eraseVisitors", () => {
    it("deletes the visitors' events, touches, links and stitches, and clears the attribution of their customers", async () => {
      const { account, site } = await newSite();
      await payingCustomer(site, "cus_v");
      const ev = (name: string, visitorId: string) => event(site.id, name, { visitorId });
      await store.commitEvents([
        group(
          account.id,
          [ev("a1", "v_a"), ev("keep1", "v_other"), ev("a2", "p:vid_a_0123456789")],
          {
            ceiling: 1000,
            links: [
              { siteId: site.id, visitorId: "v_a", userId: "u_ada", ts: T0 },
              { siteId: site.id, visitorId: "v_other", userId: "u_ada", ts: T0 },
            ],
            touches: [touch(site.id, "v_a"), touch(site.id, "v_other")],
          },
        ),
        {
          ...group(account.id, [ev("a3", "v_a")], { ceiling: 1000 }),
          stitches: [
            { siteId: site.id, visitorId: "v_a", persistentId: "p:vid_a_0123456789", ts: T0 },
          ],
        },
      ]);
      // A bucket (MongoDB) holding only the erased visitor's events goes whole.
      await store.commitEvents([group(account.id, [ev("a4", "v_a")], { ceiling: 1000 })]);

      const erased = await store.eraseVisitors(
        site.id,
        ["v_a", "p:vid_a_0123456789"],
        ["v_a", "p:vid_a_0123456789", "vid_a_0123456789"],
      );
      expect(erased).toEqual({
        events: 4,
        touches: 1,
        identityLinks: 1,
        customerLinks: 1,
        stitches: 1,
        customers: ["cus_v"],
      });
      expect((await store.listEvents(site.id, 10)).map((e) => e.name)).toEqual(["keep1"]);
      expect(await store.getFirstTouches(site.id, ["v_a", "v_other"])).toEqual([
        touch(site.id, "v_other"),
      ]);
      expect((await store.findVisitorsByUser(site.id, "u_ada")).map((l) => l.visitorId)).toEqual([
        "v_other",
      ]);
      expect(await store.findStitches(site.id, ["v_a", "p:vid_a_0123456789"])).toEqual([]);
      expect(await store.getCustomerVisitors(site.id, "cus_v")).toEqual([]);
      const customer = await store.getCustomer(site.id, "cus_v");
      expect(customer?.visitorId).toBeUndefined();
      expect(customer?.attribution).toBeUndefined();
      expect(customer?.email).toBe("ada@example.com");
      const revenue = await storedRevenue(store, site.id, T0, T0 + 100);
      expect(revenue.map((r) => r.channel)).toEqual(["unattributed"]);
      // A lower rank than the erased one is accepted now.
      await store.setAttribution(site.id, "cus_v", credit("v_other"), "9");
      expect((await store.getCustomer(site.id, "cus_v"))?.attribution).toEqual(credit("v_other"));

      expect(await store.eraseVisitors(site.id, ["v_a"], ["v_a"])).toEqual({
        events: 0,
        touches: 0,
        identityLinks: 0,
        customerLinks: 0,
        stitches: 0,
        customers: [],
      });
    });
  });
}
