/**
 * What re-attributing a customer writes: nothing for a customer no visitor
 * is linked to (most server-side payments), the attribution otherwise.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createAttributor } from "../../../../src/domain/attribution/attribute.js";
import type { Store } from "../../../../src/store/port.js";
import { createSqliteStore } from "../../../../src/store/sqlite/sqlite-store.js";
import { paymentWrite, validPayment } from "../../../helpers/fixtures.js";
import { useTempDirs } from "../../../helpers/temp-dirs.js";
import { TEST_NOW } from "../../../helpers/test-server.js";

const SITE = "site_1";
const tempDir = useTempDirs("attr-writes-");

/** A SQLite store whose setAttribution calls are counted. */
function countingStore() {
  const inner = createSqliteStore(join(tempDir(), "ingest.sqlite"));
  const calls: string[] = [];
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === "setAttribution") {
        return (siteId: string, customerId: string, ...rest: unknown[]) => {
          calls.push(customerId);
          return (target.setAttribution as (...a: unknown[]) => Promise<void>)(
            siteId,
            customerId,
            ...rest,
          );
        };
      }
      return Reflect.get(target, prop, receiver);
    },
  }) as Store;
  return { store, calls };
}

/** validPayment's body for `customerId`, naming `visitorId` when given. */
function payment(customerId: string, paymentId: string, visitorId?: string) {
  const customer = { id: customerId, ...(visitorId ? { visitor_id: visitorId } : {}) };
  return paymentWrite(SITE, { ...validPayment(paymentId), customer }, TEST_NOW);
}

describe("re-attribution writes", () => {
  it("writes nothing for a customer no visitor is linked to, and leaves its payment unattributed", async () => {
    const { store, calls } = countingStore();
    const attributor = createAttributor({ store, clock: { now: () => TEST_NOW } });
    await store.commitPayments([payment("cus_plain", "pay_1")]);
    await attributor.afterPayments([{ siteId: SITE, customerId: "cus_plain" }]);
    expect(calls).toEqual([]);
    expect((await store.getPayment(SITE, "pay_1"))?.attribution).toBeUndefined();
    expect((await store.getCustomer(SITE, "cus_plain"))?.attribution).toBeUndefined();
    await store.close();
  });

  it("writes the attribution of a customer whose payment names a visitor", async () => {
    const { store, calls } = countingStore();
    const attributor = createAttributor({ store, clock: { now: () => TEST_NOW } });
    await store.commitPayments([payment("cus_linked", "pay_2", "v_1")]);
    await attributor.afterPayments([{ siteId: SITE, customerId: "cus_linked" }]);
    // The visitor has no stored touch: unattributed, but written (and the link kept).
    expect(calls).toEqual(["cus_linked"]);
    expect(await store.getCustomerVisitors(SITE, "cus_linked")).toEqual([
      { visitorId: "v_1", via: "visitor_id", linkedAt: TEST_NOW },
    ]);
    await store.close();
  });
});
