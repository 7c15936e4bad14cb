/**
 * The erasure application (src/domain/erasure.ts) over a real SQLite store:
 * which ids a visitor's erasure reaches, re-attribution from what remains,
 * the audit line, and the role rules.
 */
import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createAdmin } from "../../../src/domain/admin.js";
import { createAttributor } from "../../../src/domain/attribution/attribute.js";
import { auditIdHash, createErasure, type ErasureAudit } from "../../../src/domain/erasure.js";
import type { Store } from "../../../src/store/port.js";
import { createSqliteStore } from "../../../src/store/sqlite/sqlite-store.js";
import { event, group, payment, T0, touch, write } from "../../helpers/store-contract.js";
import { createTestClock } from "../../helpers/test-server.js";

const VID = "vid_0123456789abcdef";
const DAILY = "0123456789abcdef0123456789abcdef";

describe("createErasure", () => {
  let store: Store;
  let audits: ErasureAudit[];
  let erasure: ReturnType<typeof createErasure>;
  let siteId: string;
  let owner: string;
  const clock = createTestClock();

  beforeEach(async () => {
    store = createSqliteStore(":memory:");
    audits = [];
    const attributor = createAttributor({ store, clock });
    erasure = createErasure({ store, attributor, audit: (l) => audits.push(l) });
    const admin = createAdmin({ store, clock });
    const account = await admin.createAccount({
      name: "A",
      plan: "scale",
      ownerEmail: "o@example.com",
    });
    owner = account.ownerUserId;
    siteId = (await admin.createSite({ accountId: account.accountId, hostnames: ["example.com"] }))
      .siteId;
    // One browser: a persistent id and a daily id stitched to it; and another visitor.
    await store.commitEvents([
      {
        ...group(
          account.accountId,
          [
            event(siteId, "pageview", { visitorId: `p:${VID}`, ts: T0 + 10 }),
            event(siteId, "pageview", { visitorId: DAILY, ts: T0 + 20 }),
            event(siteId, "pageview", { visitorId: "v_other", ts: T0 + 50 }),
          ],
          {
            ceiling: 100,
            links: [
              { siteId, visitorId: DAILY, userId: "u1", ts: T0 + 20 },
              { siteId, visitorId: "v_other", userId: "u1", ts: T0 + 50 },
            ],
            touches: [
              touch(siteId, `p:${VID}`, { ts: T0 + 10 }),
              touch(siteId, DAILY, { ts: T0 + 20, channel: "Direct" }),
              touch(siteId, "v_other", { ts: T0 + 50, channel: "Referral" }),
            ],
          },
        ),
        stitches: [{ siteId, visitorId: DAILY, persistentId: `p:${VID}`, ts: T0 + 20 }],
      },
    ]);
    const p = payment(siteId, "pay_1", { customerId: "cus_1" });
    await store.commitPayments([
      {
        ...write(p),
        customer: { siteId, customerId: "cus_1", userId: "u1", visitorId: VID, at: T0 },
      },
    ]);
    await attributor.attributeCustomer(siteId, "cus_1");
  });

  afterEach(async () => {
    await store.close();
  });

  it("erases a vid as its persistent id with the daily ids stitched to it, and credits the customer to what remains", async () => {
    expect((await store.getCustomer(siteId, "cus_1"))?.attribution?.visitorId).toBe(`p:${VID}`);
    const counts = await erasure.eraseVisitor({ siteId, visitorId: VID, actorUserId: owner });
    expect(counts).toEqual({
      events: 2,
      touches: 2,
      identityLinks: 1,
      customerLinks: 2,
      stitches: 1,
      reattributedCustomers: 1,
    });
    const customer = await store.getCustomer(siteId, "cus_1");
    expect(customer?.visitorId).toBeUndefined();
    expect(customer?.attribution).toMatchObject({
      visitorId: "v_other",
      channel: "Referral",
      via: "user_id",
    });
    expect((await store.getPayment(siteId, "pay_1"))?.attribution?.channel).toBe("Referral");
    expect((await store.listEvents(siteId, 10)).map((e) => e.visitorId)).toEqual(["v_other"]);
    expect(audits).toEqual([
      {
        erasure: "visitor",
        siteId,
        actorUserId: owner,
        idHmac: auditIdHash(await store.auditKey(), VID),
        counts,
      },
    ]);
    // Keyed: not the plain SHA-256 anyone could compute from a guessed id.
    expect(audits[0]?.idHmac).not.toBe(createHash("sha256").update(VID).digest("hex"));
    expect(audits[0]?.idHmac).toMatch(/^[0-9a-f]{64}$/);
  });

  for (const [form, given] of [
    ["a daily id", DAILY],
    ["p:<vid>", `p:${VID}`],
  ] as const) {
    it(`erases by ${form} every stored form of the visitor and clears customer.visitor_id in each form`, async () => {
      // Customers naming the visitor by each form a payment may use.
      for (const [customerId, visitorId] of [
        ["cus_p", `p:${VID}`],
        ["cus_daily", DAILY],
      ] as const) {
        await store.commitPayments([
          {
            ...write(payment(siteId, `pay_${customerId}`, { customerId })),
            customer: { siteId, customerId, visitorId, at: T0 },
          },
        ]);
      }
      const counts = await erasure.eraseVisitor({ siteId, visitorId: given, actorUserId: owner });
      expect(counts).toMatchObject({ events: 2, touches: 2, identityLinks: 1, stitches: 1 });
      for (const customerId of ["cus_1", "cus_p", "cus_daily"]) {
        expect(
          (await store.getCustomer(siteId, customerId))?.visitorId,
          customerId,
        ).toBeUndefined();
      }
      const forms = [VID, `p:${VID}`, DAILY];
      expect(await store.getFirstTouches(siteId, forms)).toEqual([]);
      expect(await store.findStitches(siteId, forms)).toEqual([]);
      expect((await store.findVisitorsByUser(siteId, "u1")).map((l) => l.visitorId)).toEqual([
        "v_other",
      ]);
      expect((await store.listEvents(siteId, 10)).map((e) => e.visitorId)).toEqual(["v_other"]);
      expect((await store.getCustomer(siteId, "cus_1"))?.attribution?.visitorId).toBe("v_other");
    });
  }

  it("erases a user id's links and the customers that carry it", async () => {
    const counts = await erasure.eraseUser({ siteId, userId: "u1", actorUserId: owner });
    expect(counts).toEqual({
      identityLinks: 2,
      events: 0,
      customers: 1,
      payments: 1,
      subscriptions: 0,
      customerLinks: 3,
    });
    expect(await store.getCustomer(siteId, "cus_1")).toBeUndefined();
    expect((await store.getPayment(siteId, "pay_1"))?.customerId).toMatch(/^erased_[0-9a-f]{24}$/);
    expect(await store.findVisitorsByUser(siteId, "u1")).toEqual([]);
  });

  it("uses a new pseudonym per erasure, never derived from the id", async () => {
    await erasure.eraseCustomer({ siteId, customerId: "cus_1", actorUserId: owner });
    const first = (await store.getPayment(siteId, "pay_1"))?.customerId;
    await store.commitPayments([write(payment(siteId, "pay_2", { customerId: "cus_1" }))]);
    await erasure.eraseCustomer({ siteId, customerId: "cus_1", actorUserId: owner });
    const second = (await store.getPayment(siteId, "pay_2"))?.customerId;
    expect(first).not.toBe(second);
    expect(first).not.toContain(createHash("sha256").update("cus_1").digest("hex").slice(0, 24));
  });
});
