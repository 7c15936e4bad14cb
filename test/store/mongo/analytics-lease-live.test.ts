/**
 * MongoDB's analytics owner lease against a real server, when MONGODB_URI
 * names one: two handles on their own connections (two servers of one
 * deployment), judged by the server's own clock. The first to ask holds it,
 * the other is refused (the upsert's insert collides on `_id`), the holder
 * renews, a clean stop frees it at once, and a lapsed lease is taken over.
 * Without MONGODB_URI the suite is skipped, and says so; the same runs
 * offline in test/internals/store/mongo/analytics-lease.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnalyticsLease } from "../../../src/domain/store/analytics-lease-port.js";
import { openMongoAnalyticsLease } from "../../../src/store/mongo/analytics-lease.js";
import type { Store } from "../../../src/store/port.js";
import { freshStore, type StoreUnderTest } from "../../helpers/stores.js";

const uri = process.env.MONGODB_URI;

if (!uri) {
  console.warn(
    "test/store/mongo/analytics-lease-live.test.ts: MONGODB_URI not set, MongoDB analytics lease suite skipped",
  );
  it.skipIf(true)("skipped: MONGODB_URI not set", () => {});
}

describe.skipIf(!uri)("MongoDB's analytics owner lease against a server", () => {
  let under: StoreUnderTest;
  let store: Store;
  const leases: AnalyticsLease[] = [];
  const lease = async (ttlMs: number) => {
    const database = store.feedDatabase;
    if (!database) throw new Error("the MongoDB store names no database");
    const l = await openMongoAnalyticsLease(database, 5_000, ttlMs);
    leases.push(l);
    return l;
  };

  beforeAll(async () => {
    under = await freshStore("mongodb");
    store = await under.open();
  });
  afterAll(async () => {
    for (const l of leases) await l.close();
    await store?.close();
    await under?.cleanup();
  });

  it("has one holder, renewed by it, free at once after a clean stop", async () => {
    const a = await lease(60_000);
    const b = await lease(60_000);
    expect(await a.acquire()).toBe(true);
    expect(await b.acquire()).toBe(false);
    const first = await a.read();
    expect(first?.holder).toBe(a.holder);
    expect((first?.expiresAt ?? 0) - (first?.acquiredAt ?? 0)).toBe(60_000);
    expect(await a.renew()).toBe(true);
    expect(await b.renew()).toBe(false);
    await b.release();
    expect((await a.read())?.holder).toBe(a.holder);
    await a.release();
    expect(await a.read()).toBeUndefined();
    expect(await b.acquire()).toBe(true);
    await b.release();
  });

  it("is taken over once it lapsed by the server's clock", async () => {
    // A lease of 1 ms lapses before the other's next call reaches the server.
    const a = await lease(1);
    const b = await lease(60_000);
    expect(await a.acquire()).toBe(true);
    await expect.poll(() => b.acquire()).toBe(true);
    expect((await b.read())?.holder).toBe(b.holder);
    expect(await a.renew()).toBe(false);
    await b.release();
  });
});
