/**
 * MongoDB's analytics owner lease (one `analytics_lease` document) at the
 * driver boundary: in-memory collections answer the driver's calls in its
 * documented shapes (findOneAndUpdate with upsert, E11000 on a taken `_id`),
 * judged by the model server's clock. One holder at a time: the first to
 * ask; renewed by it; taken over once it lapsed, or at once from a dead
 * process of this host; given up at a clean stop.
 * test/store/mongo/analytics-lease-live.test.ts runs the same against a
 * real server when MONGODB_URI is set.
 */
import { describe, expect, it } from "vitest";
import { analyticsLeaseContract } from "../../../helpers/analytics-lease-contract.js";
import { networkError } from "../../../helpers/mongo/driver-errors.js";
import { memoryDeployment } from "../../../helpers/mongo/memory-deployment.js";

const T0 = Date.UTC(2026, 2, 2, 10);
const TTL = 15_000;

function setUp() {
  const { clock, leases, lease: leaseOf } = memoryDeployment(T0);
  const lease = (holder?: string) => leaseOf({ ttlMs: TTL, ...(holder ? { holder } : {}) });
  return { clock, leases, lease };
}

describe("MongoDB's analytics owner lease", () => {
  analyticsLeaseContract(() => {
    const t = setUp();
    return {
      lease: t.lease,
      advance: (ms) => {
        t.clock.now += ms;
      },
      now: () => t.clock.now,
    };
  }, TTL);

  it("keeps one document in the documented shape; a taker refused by a live holder adds none", async () => {
    const t = setUp();
    const a = t.lease();
    const b = t.lease();
    expect(await a.acquire()).toBe(true);
    expect(await b.acquire()).toBe(false);
    expect(t.leases.docs).toEqual([
      {
        _id: "analytics",
        holder: a.holder,
        acquired_at: new Date(T0),
        expires_at: new Date(T0 + TTL),
      },
    ]);
  });

  it("passes the driver's errors on, taking nothing", async () => {
    const t = setUp();
    const a = t.lease();
    t.leases.failNext("findOneAndUpdate", networkError());
    await expect(a.acquire()).rejects.toThrow("connection 3 to 10.0.0.5:27017 closed");
    expect(t.leases.docs).toEqual([]);
    expect(await a.acquire()).toBe(true);
    t.leases.failNext("updateOne", networkError());
    await expect(a.renew()).rejects.toThrow("connection 3 to 10.0.0.5:27017 closed");
  });
});
