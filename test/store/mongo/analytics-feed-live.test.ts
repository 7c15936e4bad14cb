/**
 * The MongoDB analytics feed against a real server, when MONGODB_URI names
 * one: the store's own port writes events, payments and links, erases a
 * visitor, and the feed (its own connection, as in production) brings the
 * DuckDB file to the same state; a feed that dies at either edge of a page
 * leaves every event there exactly once after the next start. Without
 * MONGODB_URI the suite is skipped, and says so; the same scenario runs
 * offline in test/internals/store/mongo/analytics-feed.test.ts.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnalyticsFeed } from "../../../src/store/duckdb/analytics-feed.js";
import {
  type AnalyticsStore,
  openAnalyticsStore,
  visitorKey,
} from "../../../src/store/duckdb/analytics-store.js";
import {
  createMongoAnalyticsFeed,
  openMongoFeedSource,
} from "../../../src/store/mongo/analytics-feed.js";
import type { EventGroup, EventRecord, Store } from "../../../src/store/port.js";
import { freshStore, type StoreUnderTest } from "../../helpers/stores.js";
import { useTempDirs } from "../../helpers/temp-dirs.js";

const uri = process.env.MONGODB_URI;

if (!uri) {
  console.warn(
    "test/store/mongo/analytics-feed-live.test.ts: MONGODB_URI not set, MongoDB analytics feed suite skipped",
  );
  it.skipIf(true)("skipped: MONGODB_URI not set", () => {});
}

const T0 = Date.UTC(2026, 2, 2, 10);
const tempDir = useTempDirs("mongo-feed-live-");

function group(events: EventRecord[]): EventGroup {
  return {
    accountId: "acct_1",
    month: "2026-03",
    ceiling: 1_000_000,
    countable: events.length,
    events,
    links: [],
  };
}

function event(i: number, visitorId: string): EventRecord {
  return {
    siteId: "s1",
    name: "pageview",
    url: `https://shop.test/p${i}`,
    ts: T0 + i,
    receivedAt: T0 + i,
    visitorId,
  } as EventRecord;
}

describe.skipIf(!uri)("the MongoDB analytics feed against a server", () => {
  let under: StoreUnderTest;
  let store: Store;
  let analytics: AnalyticsStore;
  const feeds: AnalyticsFeed[] = [];

  const feed = async (faults?: { beforeCommit?(): void; afterCommit?(): void }) => {
    const database = store.feedDatabase;
    if (!database) throw new Error("the MongoDB store names no feed database");
    const f = createMongoAnalyticsFeed({
      source: await openMongoFeedSource(database, 5_000),
      analytics,
      intervalMs: 1_000,
      pageSize: 2,
      ...(faults ? { faults } : {}),
    });
    feeds.push(f);
    return f;
  };
  const rows = async (sql: string) => (await analytics.writer.runAndReadAll(sql)).getRowsJS();

  beforeAll(async () => {
    under = await freshStore("mongodb");
    store = await under.open();
    analytics = await openAnalyticsStore({
      path: join(tempDir(), "analytics.duckdb"),
      threads: 1,
      memoryLimit: "256MB",
    });
  });
  afterAll(async () => {
    for (const f of feeds) await f.stop();
    analytics?.close();
    await store?.close();
    await under?.cleanup();
  });

  it("feeds events, payments and links once across crashes at both edges, then an erasure", async () => {
    const first = await feed();
    await first.runOnce();
    for (let i = 0; i < 6; i++) {
      await store.commitEvents([group([event(i, i % 2 === 0 ? "v_ada" : "v_bob")])]);
    }
    await store.commitPayments([
      {
        payment: {
          siteId: "s1",
          paymentId: "p1",
          customerId: "cus_ada",
          currency: "EUR",
          amountMinor: 1_250,
          kind: "charge",
          status: "succeeded",
          paidAt: T0,
          metadata: {},
          createdAt: T0,
          updatedAt: T0,
        },
        customer: { siteId: "s1", customerId: "cus_ada", at: T0 },
      },
    ]);
    await store.linkCustomerVisitors("s1", "cus_ada", [
      { visitorId: "v_ada", via: "visitor_id", linkedAt: T0 },
    ]);
    await first.stop();
    for (const edge of ["beforeCommit", "afterCommit"] as const) {
      const crashing = await feed({
        [edge]: () => {
          throw new Error("killed");
        },
      });
      await expect(crashing.runOnce()).rejects.toThrow("killed");
      await crashing.stop();
    }
    const next = await feed();
    await next.runOnce();
    expect(await rows("SELECT count(*), count(DISTINCT seq) FROM events")).toEqual([[6n, 6n]]);
    expect(await rows("SELECT payment_id, amount_minor FROM payments")).toEqual([["p1", 1_250n]]);
    expect(await rows("SELECT customer_id, vid FROM links")).toEqual([
      ["cus_ada", visitorKey("v_ada")],
    ]);

    await store.eraseVisitors("s1", ["v_ada"], ["v_ada"]);
    await next.runOnce();
    expect(await rows(`SELECT count(*) FROM events WHERE vid = ${visitorKey("v_ada")}`)).toEqual([
      [0n],
    ]);
    expect(await rows("SELECT count(*) FROM events")).toEqual([[3n]]);
    expect(await rows("SELECT count(*) FROM links")).toEqual([[0n]]);
    expect(next.removedRows()).toBe(true);
  });
});
