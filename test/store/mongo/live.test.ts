/**
 * The MongoDB adapter against a real server, when MONGODB_URI names one (a
 * replica set: fail points need `enableTestCommands`, which `mongod
 * --setParameter enableTestCommands=1` or the compose file turns on).
 * Without MONGODB_URI the suite is skipped, and says so.
 *
 * Uses the server's `failCommand` fail point to make the driver see what
 * production sees: a write concern that fails after the write was applied,
 * a connection closed under a reservation.
 */
import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../../src/domain/store-errors.js";
import { createMongoStore } from "../../../src/store/mongo/mongo-store.js";
import type { MigrationReport } from "../../../src/store/mongo/schema.js";
import type { EventGroup, Store } from "../../../src/store/port.js";

const uri = process.env.MONGODB_URI;
const APP_NAME = "ingest-failpoints";

if (!uri) {
  console.warn(
    "test/store/mongo/live.test.ts: MONGODB_URI not set, MongoDB fail-point suite skipped",
  );
  it.skipIf(true)("skipped: MONGODB_URI not set", () => {});
}

/** The URI with an appName, so fail points hit only the store under test. */
function withAppName(u: string): string {
  return `${u}${u.includes("?") ? "&" : "?"}appName=${APP_NAME}`;
}

describe.skipIf(!uri)("mongodb adapter against a server", () => {
  const dbName = `ingest_live_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
  let admin: MongoClient;
  let store: Store;

  const failPoint = (data: Record<string, unknown>, times = 1) =>
    admin.db("admin").command({
      configureFailPoint: "failCommand",
      mode: { times },
      data: { appName: APP_NAME, ...data },
    });

  beforeAll(async () => {
    admin = new MongoClient(uri as string, { serverSelectionTimeoutMS: 5000 });
    await admin.connect();
  });
  afterEach(async () => {
    await admin.db("admin").command({ configureFailPoint: "failCommand", mode: "off" });
  });
  afterAll(async () => {
    await store?.close();
    await admin.db(dbName).dropDatabase();
    await admin.close();
  });

  it("refuses an unmigrated database naming what is missing; migrate runs once, then changes nothing", async () => {
    await expect(createMongoStore(uri as string, { dbName })).rejects.toThrow(
      /not up to date \(missing: collection accounts, collection users, /,
    );
    const reports: MigrationReport[] = [];
    for (let i = 0; i < 2; i++) {
      const s = await createMongoStore(uri as string, { dbName, migrate: (r) => reports.push(r) });
      await s.close();
    }
    expect(reports[0]?.created).toContain("collection events");
    expect(reports[0]?.created).toContain("index events.receipts_unique");
    expect(reports[1]).toEqual({ created: [], updated: [], dropped: [] });
    store = await createMongoStore(withAppName(uri as string), { dbName, timeoutMs: 2000 });
    await expect(store.ping()).resolves.toBeUndefined();
  });

  const group = (siteId: string, name: string): EventGroup => ({
    accountId: "acct_live",
    month: "2025-06",
    ceiling: 1000,
    countable: 1,
    events: [{ siteId, name, url: "https://example.com/", ts: 1, receivedAt: 1, visitorId: "v1" }],
    links: [],
  });

  it("a write-concern error after the append was applied: the re-send finds its receipt, stored once", async () => {
    await failPoint({
      failCommands: ["update"],
      writeConcernError: { code: 64, errmsg: "waiting for replication timed out" },
    });
    const [r] = await store.commitEvents([group("site_wce", "signup")]);
    expect(r).toMatchObject({ ok: true });
    const events = await store.listEvents("site_wce", 10);
    expect(events.map((e) => e.name)).toEqual(["signup"]);
  });

  it("connections closed under every send: the request fails as unavailable and nothing is stored", async () => {
    // Four: the append and its re-send, each retried once by the driver
    // (retryable writes, on in a replica set); the release after them passes.
    await failPoint({ failCommands: ["update"], closeConnection: true }, 4);
    const before = await store.getUsage("acct_live", "2025-06");
    const [r] = await store.commitEvents([group("site_down", "signup")]);
    expect(r).toMatchObject({ ok: false, reason: "failed" });
    expect((r as { error: Error }).error).toBeInstanceOf(StoreUnavailableError);
    await admin.db("admin").command({ configureFailPoint: "failCommand", mode: "off" });
    expect(await store.listEvents("site_down", 10)).toEqual([]);
    // Its quota was given back.
    expect(await store.getUsage("acct_live", "2025-06")).toBe(before);
  });

  it("a refused command (validation) is a failure, not unavailable", async () => {
    // findAndModify serves both the quota and the event counter: whichever
    // meets the fail point, the request fails as refused.
    await failPoint({ failCommands: ["findAndModify"], errorCode: 121 });
    const [r] = await store.commitEvents([group("site_refused", "signup")]);
    expect(r).toMatchObject({ ok: false, reason: "failed" });
    expect((r as { error: Error }).error.name).toBe("StoreFailureError");
  });
});
