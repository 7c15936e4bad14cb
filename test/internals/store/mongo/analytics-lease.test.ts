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
import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import { createMongoAnalyticsLease } from "../../../../src/store/mongo/analytics-lease.js";
import { networkError } from "../../../helpers/mongo/driver-errors.js";
import { MemoryCollection, type ServerClock } from "../../../helpers/mongo/memory-collections.js";

const T0 = Date.UTC(2026, 2, 2, 10);
const TTL = 15_000;

function setUp() {
  const clock: ServerClock = { now: T0 };
  const leases = new MemoryCollection(clock);
  const lease = (holder?: string) =>
    createMongoAnalyticsLease({
      leases: leases as never,
      serverTime: async () => clock.now,
      ttlMs: TTL,
      ...(holder ? { holder } : {}),
    });
  return { clock, leases, lease };
}

describe("MongoDB's analytics owner lease", () => {
  it("has one holder: the first to ask; renewed, it lasts; lapsed, the other takes it and the first learns it lost it", async () => {
    const t = setUp();
    const a = t.lease();
    const b = t.lease();
    expect(await a.acquire()).toBe(true);
    expect(await b.acquire()).toBe(false);
    expect(await a.read()).toEqual({ holder: a.holder, acquiredAt: T0, expiresAt: T0 + TTL });
    expect(t.leases.docs).toEqual([
      {
        _id: "analytics",
        holder: a.holder,
        acquired_at: new Date(T0),
        expires_at: new Date(T0 + TTL),
      },
    ]);
    t.clock.now += TTL / 3;
    expect(await a.renew()).toBe(true);
    expect((await a.read())?.expiresAt).toBe(T0 + TTL / 3 + TTL);
    t.clock.now += TTL - 1;
    expect(await b.acquire()).toBe(false);
    // Lapsed by the server's clock: the other takes it, from that instant.
    t.clock.now += 1;
    expect(await b.acquire()).toBe(true);
    expect(await b.read()).toEqual({
      holder: b.holder,
      acquiredAt: t.clock.now,
      expiresAt: t.clock.now + TTL,
    });
    expect(await a.renew()).toBe(false);
    expect(await a.acquire()).toBe(false);
    expect(t.leases.docs).toHaveLength(1);
  });

  it("is free at once after a clean stop gives it up; a non-holder's give-up changes nothing", async () => {
    const t = setUp();
    const a = t.lease();
    const b = t.lease();
    expect(await a.acquire()).toBe(true);
    await b.release();
    expect(await b.acquire()).toBe(false);
    await a.release();
    expect(await a.read()).toBeUndefined();
    expect(await b.acquire()).toBe(true);
  });

  it("is taken over at once from a holder of this host whose process is gone, never from a live or remote one", async () => {
    const t = setUp();
    const gone = spawnSync(process.execPath, ["-e", ""]).pid;
    const dead = t.lease(`${hostname()}:${gone}:1`);
    expect(await dead.acquire()).toBe(true);
    const b = t.lease();
    expect(await b.acquire()).toBe(true);
    await b.release();
    const live = t.lease(`${hostname()}:${process.ppid}:2`);
    expect(await live.acquire()).toBe(true);
    expect(await b.acquire()).toBe(false);
    await live.release();
    const remote = t.lease(`elsewhere.example:${gone}:3`);
    expect(await remote.acquire()).toBe(true);
    expect(await b.acquire()).toBe(false);
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
