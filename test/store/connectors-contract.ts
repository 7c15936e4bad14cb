/**
 * The connectors part of the store contract: connectors' records, and
 * provider deliveries applied at most once per event id with older object
 * versions never overwriting newer ones. Each adapter's test file calls
 * describeConnectorsContract with a function that opens a fresh store.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProviderDelivery, ProviderWrite, Store } from "../../src/store/port.js";
import { paymentWrite } from "../helpers/fixtures.js";

const T0 = Date.UTC(2026, 2, 11, 12, 0, 0);

export function describeConnectorsContract(name: string, open: () => Promise<Store>): void {
  describe(`${name}: connectors contract`, () => {
    let store: Store;
    const siteId = `site_conn_${name}`;

    beforeAll(async () => {
      store = await open();
      await store.createAccount({
        id: `acct_conn_${name}`,
        name: "A",
        plan: "scale",
        createdAt: T0,
      });
      await store.createSite({
        id: siteId,
        accountId: `acct_conn_${name}`,
        hostnames: ["a.test"],
        createdAt: T0,
      });
    });
    afterAll(() => store.close());

    /** A delivery writing one payment of `amount` USD as `object` at `version`. */
    function delivery(
      eventId: string,
      paymentId: string,
      amount: number,
      version: number,
      status = "succeeded",
    ): ProviderDelivery {
      const w = paymentWrite(
        siteId,
        {
          payment_id: paymentId,
          customer: { id: "cus_1" },
          amount,
          currency: "USD",
          kind: "charge",
          status,
          paid_at: "2026-03-11T11:00:00Z",
        },
        T0,
      );
      const write: ProviderWrite = { object: `payment:${paymentId}`, version, ...w };
      return { siteId, connectorId: "conn_1", eventId, receivedAt: T0, writes: [write] };
    }

    it("stores, finds, lists by site and deletes connectors, secret included for verification", async () => {
      const c = {
        id: `conn_a_${name}`,
        siteId,
        provider: "stripe" as const,
        secret: "whsec_abc",
        createdBy: "user_1",
        createdAt: T0,
      };
      await store.insertConnector(c);
      await store.insertConnector({
        ...c,
        id: `conn_b_${name}`,
        provider: "polar",
        createdAt: T0 + 1,
      });
      expect(await store.getConnector(c.id)).toEqual(c);
      expect((await store.listConnectors(siteId)).map((x) => x.id)).toEqual([
        c.id,
        `conn_b_${name}`,
      ]);
      expect(await store.deleteConnector(c.id)).toBe(true);
      expect(await store.deleteConnector(c.id)).toBe(false);
      expect(await store.getConnector(c.id)).toBeUndefined();
      expect(await store.listConnectors("site_none")).toEqual([]);
    });

    it("applies a provider event once: a repeated delivery of its id writes nothing", async () => {
      expect(await store.commitProviderDeliveries([delivery("evt_1", "ch_once", 10, 100)])).toEqual(
        ["applied"],
      );
      // The same event id again, even carrying other values, is not applied.
      expect(await store.commitProviderDeliveries([delivery("evt_1", "ch_once", 99, 200)])).toEqual(
        ["duplicate"],
      );
      expect((await store.getPayment(siteId, "ch_once"))?.amountMinor).toBe(1000);
      expect(await store.getObjectVersion(siteId, "payment:ch_once")).toBe(100);
    });

    it("counts a repeat within one batch once too", async () => {
      const out = await store.commitProviderDeliveries([
        delivery("evt_2", "ch_batch", 10, 100),
        delivery("evt_2", "ch_batch", 20, 100),
      ]);
      expect(out).toEqual(["applied", "duplicate"]);
      expect((await store.getPayment(siteId, "ch_batch"))?.amountMinor).toBe(1000);
    });

    it("never lets an older version overwrite a newer one; an equal one applies", async () => {
      await store.commitProviderDeliveries([delivery("evt_new", "ch_order", 30, 300, "succeeded")]);
      // The older state arrives late: remembered as applied, but the payment keeps the newer state.
      expect(
        await store.commitProviderDeliveries([delivery("evt_old", "ch_order", 20, 200, "pending")]),
      ).toEqual(["applied"]);
      let p = await store.getPayment(siteId, "ch_order");
      expect([p?.amountMinor, p?.status]).toEqual([3000, "succeeded"]);
      expect(await store.getObjectVersion(siteId, "payment:ch_order")).toBe(300);
      // Same version (two events of the same second): the later delivery wins.
      await store.commitProviderDeliveries([delivery("evt_same", "ch_order", 31, 300, "failed")]);
      p = await store.getPayment(siteId, "ch_order");
      expect([p?.amountMinor, p?.status]).toEqual([3100, "failed"]);
    });

    it("versions objects independently and writes a subscription without a payment", async () => {
      const base = delivery("evt_sub", "ch_sub", 10, 500);
      const w = base.writes[0] as ProviderWrite;
      const subOnly: ProviderWrite = {
        object: "subscription:sub_1",
        version: 400,
        customer: w.customer,
        subscription: {
          siteId,
          subscriptionId: "sub_1",
          customerId: "cus_1",
          currency: "USD",
          plan: "pro",
          interval: "month",
          status: "active",
          amountMinor: 2900,
          defaults: { status: "active", startedAt: T0 },
          at: T0,
        },
      };
      await store.commitProviderDeliveries([{ ...base, writes: [w, subOnly] }]);
      expect(await store.getSubscription(siteId, "sub_1")).toMatchObject({
        status: "active",
        amountMinor: 2900,
        plan: "pro",
      });
      const canceled: ProviderWrite = {
        ...subOnly,
        version: 350,
        subscription: {
          ...(subOnly.subscription as NonNullable<ProviderWrite["subscription"]>),
          status: "canceled",
        },
      };
      await store.commitProviderDeliveries([
        { ...base, eventId: "evt_sub_old", writes: [canceled] },
      ]);
      expect((await store.getSubscription(siteId, "sub_1"))?.status).toBe("active");
      expect(await store.getPayment(siteId, "ch_sub")).toBeDefined();
    });

    it("keeps event ids per connector: another connector's same id is applied", async () => {
      const d = delivery("evt_shared", "ch_shared", 10, 100);
      expect(await store.commitProviderDeliveries([d])).toEqual(["applied"]);
      expect(await store.commitProviderDeliveries([{ ...d, connectorId: "conn_2" }])).toEqual([
        "applied",
      ]);
    });
  });
}
