/**
 * The feed MongoDB → DuckDB without a server: the store's own writes (bucket
 * appends from planAppends, payment upserts, notices) land in in-memory
 * collections that answer the driver's calls in its documented shapes
 * (test/helpers/mongo/memory-collections.ts); the feed reads them into a real
 * DuckDB file. Proven here: every event exactly once across a crash at
 * either edge of a page, a late-visible write inside the window, deletions
 * (retention, erasure of events, links, stitches and customers) reaching
 * DuckDB, a driver error mid-page rolled back and applied at the next poll,
 * and a deleted file rebuilt. test/store/mongo/analytics-feed-live.test.ts
 * runs the same against a real server when MONGODB_URI is set.
 */
import { join } from "node:path";
import { ObjectId } from "mongodb";
import { afterEach, describe, expect, it } from "vitest";
import type { AnalyticsFeed } from "../../../../src/store/duckdb/analytics-feed.js";
import {
  type AnalyticsStore,
  openAnalyticsStore,
  removeAnalyticsFile,
  visitorKey,
} from "../../../../src/store/duckdb/analytics-store.js";
import { rebuildVisits } from "../../../../src/store/duckdb/visits-maintenance.js";
import {
  createMongoAnalyticsFeed,
  type MongoAnalyticsFeedOptions,
} from "../../../../src/store/mongo/analytics-feed.js";
import { noteChanges } from "../../../../src/store/mongo/analytics-log.js";
import { planAppends } from "../../../../src/store/mongo/event-buckets.js";
import { paymentUpsert } from "../../../../src/store/mongo/payments.js";
import type { EventRecord, PaymentRecord } from "../../../../src/store/port.js";
import { networkError } from "../../../helpers/mongo/driver-errors.js";
import { memoryDeployment } from "../../../helpers/mongo/memory-deployment.js";
import type { Doc } from "../../../helpers/mongo/model.js";
import { useTempDirs } from "../../../helpers/temp-dirs.js";

const T0 = Date.UTC(2026, 2, 2, 10);
const SETTLE = 60_000;
const tempDir = useTempDirs("mongo-feed-");
const opened: { close(): void }[] = [];
const feeds: AnalyticsFeed[] = [];
afterEach(async () => {
  for (const f of feeds.splice(0)) await f.stop();
  for (const o of opened.splice(0)) o.close();
});

function event(i: number, visitorId = `v${i % 3}`): EventRecord {
  return {
    siteId: "s1",
    name: "pageview",
    url: `https://shop.test/p${i}?utm_source=news`,
    ts: T0 + i,
    receivedAt: T0 + i,
    visitorId,
    props: { i },
    referrerHost: "news.test",
    utmSource: "news",
    clickIds: { gclid: `g${i}` },
  } as EventRecord;
}

function payment(id: string, customerId = "cus_1"): PaymentRecord {
  return {
    siteId: "s1",
    paymentId: id,
    customerId,
    currency: "EUR",
    amountMinor: 1_250,
    kind: "charge",
    status: "succeeded",
    paidAt: T0,
    metadata: {},
    createdAt: T0,
    updatedAt: T0,
  };
}

function setUp() {
  const dir = tempDir();
  const { clock, m, c, source } = memoryDeployment(T0);
  m.sites.docs.push({ _id: "s1", hostnames: ["shop.test"] });
  let q = 1_000;
  let receipts = 0;
  /** What the store's commitEvents writes: the real appends, with their marker. */
  const append = async (events: EventRecord[]) => {
    const appends = planAppends(
      [{ group: 0, receipt: new ObjectId(), siteId: "s1", events }],
      clock.now,
      q,
    );
    q += events.length;
    receipts++;
    await m.events.bulkWrite(appends.map((a) => a.operation) as never);
  };
  const pay = (p: PaymentRecord) => m.payments.bulkWrite([paymentUpsert([p])] as never);
  const analytics = async (): Promise<AnalyticsStore> => {
    const a = await openAnalyticsStore({
      path: join(dir, "analytics.duckdb"),
      threads: 1,
      memoryLimit: "256MB",
    });
    opened.push(a);
    return a;
  };
  const feed = (
    a: AnalyticsStore,
    faults?: MongoAnalyticsFeedOptions["faults"],
    more: Partial<MongoAnalyticsFeedOptions> = {},
  ) => {
    const f = createMongoAnalyticsFeed({
      ...more,
      source,
      analytics: a,
      intervalMs: 1_000,
      settleMs: SETTLE,
      pageSize: 2,
      ...(faults ? { faults } : {}),
    });
    feeds.push(f);
    return f;
  };
  /** Event numbers in DuckDB with how many times each is there. */
  const seqs = async (a: AnalyticsStore) =>
    (await a.writer.runAndReadAll("SELECT seq, count(*) FROM events GROUP BY 1 ORDER BY 1"))
      .getRows()
      .map(([s, n]) => [Number(s), Number(n)]);
  const rows = async (a: AnalyticsStore, sql: string) =>
    (await a.writer.runAndReadAll(sql)).getRowsJS();
  return { dir, clock, m, c, append, pay, analytics, feed, seqs, rows, receipts: () => receipts };
}

/** The visits the feed kept, and those a rebuild derives from the events now (rolled back). */
async function keptAndDerivedVisits(a: AnalyticsStore) {
  const all = async () =>
    (
      await a.writer.runAndReadAll("SELECT * FROM visits ORDER BY site_id, vid, v_start")
    ).getRowsJS();
  const kept = await all();
  await a.writer.run("BEGIN TRANSACTION");
  try {
    await rebuildVisits(a.writer);
    return { kept, derived: await all() };
  } finally {
    await a.writer.run("ROLLBACK");
  }
}

/** How many visits the feed kept for a visitor. */
async function visitsOf(a: AnalyticsStore, visitor: string) {
  const r = await a.writer.runAndReadAll("SELECT count(*) FROM visits WHERE vid = $1", [
    visitorKey(visitor),
  ]);
  return Number(r.getRows()[0]?.[0]);
}

const once = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, k) => [from + k, 1]);

describe("the MongoDB analytics feed", () => {
  it("appends each bucket's new events once, with the shared columns, and a re-read window changes nothing", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.append([event(0), event(1)]);
    const f = t.feed(a);
    // No watermark: the store is built from the collections.
    expect(await f.runOnce()).toBe(T0);
    expect(await t.seqs(a)).toEqual(once(1_000, 1_002));
    t.clock.now += 1_000;
    // Appends to the same bucket (the hour's, with room) and a second site's bucket.
    await t.append([event(2), event(3), event(4)]);
    await t.append([event(5)]);
    expect(await f.runOnce()).toBe(T0 + 1_000);
    expect(await t.seqs(a)).toEqual(once(1_000, 1_006));
    // Polls again and again within the window: nothing doubles, and no bucket is read
    // whole again (only their heads: `_id`, `u`, `n`).
    const finds = t.m.events.finds.length;
    await f.runOnce();
    await f.runOnce();
    expect(await t.seqs(a)).toEqual(once(1_000, 1_006));
    expect(t.m.events.finds.slice(finds).map((x) => x.projection)).toEqual([
      { _id: 1, u: 1, n: 1 },
      { _id: 1, u: 1, n: 1 },
    ]);
    expect(
      await t.rows(
        a,
        "SELECT seq, site_id, ts, vid, name, page, referrer, channel, source, props->>'$.i' FROM events WHERE seq = 1003",
      ),
    ).toEqual([
      [
        1003n,
        "s1",
        BigInt(T0 + 3),
        visitorKey("v0"),
        "pageview",
        "https://shop.test/p3",
        "news.test",
        // The click id came through (pairs in MongoDB, a JSON object for the shared code).
        "Paid Search",
        "Google",
        "3",
      ],
    ]);
  });

  for (const edge of ["beforeCommit", "afterCommit"] as const) {
    it(`resumes after a crash ${edge === "beforeCommit" ? "before" : "after"} DuckDB's commit: every event exactly once`, async () => {
      const t = setUp();
      const a = await t.analytics();
      await t.feed(a).runOnce();
      // Five buckets (one per hour): three pages of two.
      for (let i = 0; i < 5; i++) {
        t.clock.now += HOUR;
        await t.append([event(i * 2), event(i * 2 + 1)]);
      }
      let pages = 0;
      const crashing = t.feed(a, {
        [edge]: () => {
          // The second page of a stream: the first is committed.
          if (++pages === 2) throw new Error("killed");
        },
      });
      await expect(crashing.runOnce()).rejects.toThrow("killed");
      await crashing.stop();
      // A new process on the same file: from the committed watermark minus the window.
      const next = t.feed(a);
      await next.runOnce();
      expect(await t.seqs(a)).toEqual(once(1_000, 1_010));
    });
  }

  it("feeds a write whose marker is older than the watermark when it is within the window", async () => {
    const t = setUp();
    const a = await t.analytics();
    const f = t.feed(a);
    await f.runOnce();
    t.clock.now = T0 + 30_000;
    await t.append([event(0)]);
    await f.runOnce();
    expect(f.watermark()).toBe(T0 + 30_000);
    // An append stamped 20 s earlier that became visible only now (a slow write).
    t.clock.now = T0 + 10_000;
    await t.append([event(1)]);
    t.clock.now = T0 + 31_000;
    await f.runOnce();
    expect(await t.seqs(a)).toEqual(once(1_000, 1_002));
  });

  it("deletions reach DuckDB: a pruned bucket, erased events, links, stitches and an erased customer's payment; the running rewrite then keeps every row", async () => {
    const t = setUp();
    const a = await t.analytics();
    const f = t.feed(a, undefined, { now: () => T0 + 42 });
    await t.append([event(0, "v_ada"), event(1, "v_bob")]);
    t.clock.now += HOUR;
    await t.append([event(2, "v_ada"), event(3, "v_ada")]);
    await t.pay(payment("p1", "cus_ada"));
    await t.m.customerVisitors.updateOne(
      { site_id: "s1", customer_id: "cus_ada", visitor_id: "v_ada" },
      { $set: { via: "visitor_id", linked_at: new Date(T0) } },
      { upsert: true },
    );
    await noteChanges(t.c, "links", "s1", ["cus_ada"]);
    await noteChanges(t.c, "stitches", "s1", ["v_ada"]);
    await t.m.stitches.updateOne(
      { site_id: "s1", visitor_id: "v_ada" },
      { $setOnInsert: { persistent_id: "p_ada", ts: new Date(T0) } },
      { upsert: true },
    );
    await f.runOnce();
    expect(await t.seqs(a)).toEqual(once(1_000, 1_004));
    // Each visitor numbered in the order first seen, its events and visits carrying it.
    const numbers = () =>
      t.rows(
        a,
        "SELECT n.vid, n.dv, (SELECT list(DISTINCT e.dv) FROM events e WHERE e.vid = n.vid), (SELECT list(DISTINCT v.dv) FROM visits v WHERE v.vid = n.vid) FROM visitor_numbers n ORDER BY n.dv",
      );
    expect(await numbers()).toEqual([
      [visitorKey("v_ada"), 0, [0], [0]],
      [visitorKey("v_bob"), 1, [1], [1]],
    ]);
    // The visits (issue 30) are kept with the events, in the page's transaction.
    expect(await visitsOf(a, "v_ada")).toBe(1);
    let visits = await keptAndDerivedVisits(a);
    expect(visits.kept).toEqual(visits.derived);
    expect(await t.rows(a, "SELECT customer_id, vid FROM links")).toEqual([
      ["cus_ada", visitorKey("v_ada")],
    ]);
    expect(await t.rows(a, "SELECT vid, pvid FROM stitches")).toEqual([
      [visitorKey("v_ada"), visitorKey("p_ada")],
    ]);

    t.clock.now += 1_000;
    // Erasure of v_ada, as src/store/mongo/erasure.ts does it: notices first, then the
    // bucket holding only hers goes, the other is filtered (its marker set), links and
    // stitches go, the customer's payment is pseudonymized (its marker set).
    const [first, second] = t.m.events.docs as [Doc, Doc];
    const secondId = (second._id as ObjectId).toHexString();
    await noteChanges(t.c, "bucket", "s1", [secondId]);
    await noteChanges(t.c, "links", "s1", ["cus_ada"]);
    await noteChanges(t.c, "stitches", "s1", ["v_ada"]);
    await f.runOnce();
    // The notices came before the deletions: nothing changed yet.
    expect(await t.seqs(a)).toEqual(once(1_000, 1_004));
    t.clock.now += 1_000;
    await t.m.events.deleteOne({ _id: second._id });
    await t.m.events.updateOne(
      { _id: first._id },
      {
        $set: {
          events: (first.events as Doc[]).filter((e) => e.visitor_id !== "v_ada"),
          n: 1,
        },
        $currentDate: { u: true },
      },
    );
    await t.m.customerVisitors.deleteMany({ site_id: "s1", visitor_id: "v_ada" });
    await t.m.stitches.deleteMany({ site_id: "s1", visitor_id: "v_ada" });
    await t.m.payments.updateMany(
      { site_id: "s1", customer_id: "cus_ada" },
      { $set: { customer_id: "erased_1" }, $unset: { attribution: "" }, $currentDate: { u: true } },
    );
    await f.runOnce();
    expect(await t.seqs(a)).toEqual([[1_001, 1]]);
    // Her number went with her events; his stays.
    expect(await numbers()).toEqual([[visitorKey("v_bob"), 1, [1], [1]]]);
    expect(await visitsOf(a, "v_ada")).toBe(0);
    expect(await visitsOf(a, "v_bob")).toBe(1);
    visits = await keptAndDerivedVisits(a);
    expect(visits.kept).toEqual(visits.derived);
    expect(await t.rows(a, "SELECT count(*) FROM links")).toEqual([[0n]]);
    expect(await t.rows(a, "SELECT count(*) FROM stitches")).toEqual([[0n]]);
    expect(await t.rows(a, "SELECT payment_id, customer_id FROM payments")).toEqual([
      ["p1", "erased_1"],
    ]);
    expect(await t.rows(a, "SELECT bucket, seqs FROM mongo_buckets ORDER BY bucket")).toEqual([
      [(first._id as ObjectId).toHexString(), [1_001n]],
    ]);
    // The file still holds the old rows' bytes: it is rewritten while running (or at close).
    expect(f.removedRows()).toBe(true);
    expect(f.dirtySince()).toBe(T0 + 42);
    const report = await f.compact();
    expect(report?.bytesAfter).toBeGreaterThan(0);
    expect(f.dirtySince()).toBeUndefined();
    expect(await f.compact()).toBeUndefined();
    // The feed goes on in the new file.
    expect(await t.seqs(a)).toEqual([[1_001, 1]]);
    t.clock.now += 1_000;
    await t.append([event(4, "v_bob")]);
    await f.runOnce();
    expect(await t.seqs(a)).toEqual([
      [1_001, 1],
      [1_004, 1],
    ]);
  });

  it("keeps when its file became due for a rewrite in the file: a restart still rewrites it; a payment re-read unchanged in the window makes nothing due", async () => {
    const t = setUp();
    const a = await t.analytics();
    const f = t.feed(a, undefined, { now: () => T0 + 42 });
    await t.append([event(0, "v_ada"), event(1, "v_bob")]);
    await t.pay(payment("p1"));
    await f.runOnce();
    await f.runOnce();
    // Only appended rows, and p1 read again within the window unchanged: no old bytes.
    expect(f.dirtySince()).toBeUndefined();
    expect(await f.compact()).toBeUndefined();
    t.clock.now += 1_000;
    await t.pay({ ...payment("p1"), status: "failed" });
    await f.runOnce();
    expect(f.dirtySince()).toBe(T0 + 42);
    await f.stop();
    a.close();
    const b = await t.analytics();
    const again = t.feed(b, undefined, { now: () => T0 + 99 });
    await again.runOnce();
    expect(again.dirtySince()).toBe(T0 + 42);
    const report = await again.compact();
    expect(report?.bytesAfter).toBeGreaterThan(0);
    expect(again.dirtySince()).toBeUndefined();
    expect(await t.rows(b, "SELECT count(*) FROM feed_state WHERE id = 3")).toEqual([[0n]]);
    expect(await t.rows(b, "SELECT payment_id, status FROM payments")).toEqual([["p1", "failed"]]);
    expect(await t.seqs(b)).toEqual(once(1_000, 1_002));
  });

  it("goes on feeding while the rewrite's copy is written; after the swap every event is there once", async () => {
    const t = setUp();
    const a = await t.analytics();
    let reached = () => {};
    const copied = new Promise<void>((r) => {
      reached = r;
    });
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const f = t.feed(a, {
      afterCopy() {
        reached();
        return held;
      },
    });
    await t.append([event(0, "v_ada"), event(1, "v_bob")]);
    await t.pay(payment("p1"));
    await f.runOnce();
    t.clock.now += 1_000;
    await t.pay({ ...payment("p1"), status: "failed" });
    await f.runOnce();
    const compacting = f.compact();
    await copied;
    t.clock.now += 1_000;
    await t.append([event(2, "v_ada")]);
    // A drain and a query during the copy: neither waits for it.
    await f.catchUp();
    const conn = await a.connect();
    const during = (await conn.runAndReadAll("SELECT count(*) FROM events")).getRows();
    conn.closeSync();
    expect(during).toEqual([[3n]]);
    release();
    expect(await compacting).toBeDefined();
    expect(await t.seqs(a)).toEqual(once(1_000, 1_003));
    expect(f.dirtySince()).toBeUndefined();
    t.clock.now += 1_000;
    await t.append([event(3, "v_bob")]);
    await f.runOnce();
    expect(await t.seqs(a)).toEqual(once(1_000, 1_004));
  });

  it("catchUp under a steady flow of writes reads up to the server's time of the call, not until a page comes back short", async () => {
    const t = setUp();
    const a = await t.analytics();
    await t.pay(payment("p0"));
    await t.pay(payment("p1"));
    let pages = 0;
    let next = 2;
    const f = t.feed(a, {
      // Payments never pause: every page's commit is followed by two more
      // payments, a millisecond later, for 200 pages (pages of 2).
      afterCommit() {
        pages += 1;
        if (pages < 200) {
          t.clock.now += 1;
          void t.pay(payment(`p${next++}`));
          void t.pay(payment(`p${next++}`));
        }
      },
    });
    await f.runOnce(1);
    const asked = pages;
    t.clock.now += 1;
    await t.append([event(0)]);
    await f.catchUp();
    expect(pages - asked).toBeLessThanOrEqual(6);
    expect(await t.seqs(a)).toEqual(once(1_000, 1_001));
  });

  it("rebuilds an older file of its own whose unapplied notices were trimmed meanwhile (the lease taken over from another host); its own recent file it resumes", async () => {
    const t = setUp();
    const rebuilds = () =>
      t.m.events.finds.filter((f) => Object.keys(f.filter).length === 0).length;
    let mine = await t.analytics();
    await t.append([event(0, "v_bob")]);
    t.clock.now += HOUR;
    await t.append([event(1, "v_ada")]);
    const f = t.feed(mine);
    await f.runOnce();
    await f.stop();
    mine.close();
    expect(rebuilds()).toBe(1);
    // Another host owns the store meanwhile, with a file of its own.
    const other = await openAnalyticsStore({
      path: join(tempDir(), "analytics.duckdb"),
      threads: 1,
      memoryLimit: "256MB",
    });
    opened.push(other);
    const g = t.feed(other);
    await g.runOnce();
    // Retention drops v_ada's bucket: a notice first, then the bucket goes.
    t.clock.now += 1_000;
    const [, second] = t.m.events.docs as [Doc, Doc];
    await noteChanges(t.c, "bucket", "s1", [(second._id as ObjectId).toHexString()]);
    await t.m.events.deleteOne({ _id: second._id });
    await g.runOnce();
    expect(await t.seqs(other)).toEqual([[1_000, 1]]);
    // A later notice moves its watermark on: the bucket's notice is trimmed.
    t.clock.now += 10 * 60_000;
    await noteChanges(t.c, "links", "s1", ["cus_x"]);
    await g.runOnce();
    expect(t.m.analyticsLog.docs).toHaveLength(1);
    await g.stop();
    // The first host owns it again, with its older file: rebuilt, without the dropped bucket.
    mine = await t.analytics();
    const again = t.feed(mine);
    await again.runOnce();
    expect(rebuilds()).toBe(3);
    expect(await t.seqs(mine)).toEqual([[1_000, 1]]);
    // The dropped bucket's bytes are still in the file: it is due for a rewrite.
    expect(again.dirtySince()).toBeDefined();
    await again.stop();
    mine.close();
    // Its own file, recent, after a restart: resumed, not rebuilt.
    mine = await t.analytics();
    await t.feed(mine).runOnce();
    expect(rebuilds()).toBe(3);
    expect(await t.seqs(mine)).toEqual([[1_000, 1]]);
  });

  it("tells the visits hook once per page, in the page's transaction, whose events were appended or deleted", async () => {
    const t = setUp();
    const a = await t.analytics();
    const calls: { changed: [string, bigint[]][]; rows: unknown }[] = [];
    const f = t.feed(a, undefined, {
      onVisitorsChanged: async (writer, changed) => {
        calls.push({
          changed: [...changed].map(([site, vids]) => [site, [...vids].sort()]),
          // The page's own rows, before its commit: the same transaction.
          rows: (await writer.runAndReadAll("SELECT count(*) FROM events")).getRowsJS(),
        });
      },
    });
    await f.runOnce();
    expect(calls).toEqual([]);
    await t.append([event(0, "v_ada"), event(1, "v_bob")]);
    await f.runOnce();
    const both = [visitorKey("v_ada"), visitorKey("v_bob")].sort();
    expect(calls).toEqual([{ changed: [["s1", both]], rows: [[2n]] }]);
    // Her events filtered out of the bucket (an erasure): her key only.
    t.clock.now += 1_000;
    const [bucket] = t.m.events.docs as [Doc];
    await t.m.events.updateOne(
      { _id: bucket._id },
      {
        $set: { events: (bucket.events as Doc[]).filter((e) => e.visitor_id !== "v_ada"), n: 1 },
        $currentDate: { u: true },
      },
    );
    await f.runOnce();
    expect(calls.slice(1)).toEqual([{ changed: [["s1", [visitorKey("v_ada")]]], rows: [[1n]] }]);
    // Polls that change nothing call nothing.
    await f.runOnce();
    expect(calls).toHaveLength(2);
  });

  it("a driver error mid-page rolls the page back; the next poll applies it whole", async () => {
    const t = setUp();
    const a = await t.analytics();
    const f = t.feed(a);
    await t.m.customerVisitors.updateOne(
      { site_id: "s1", customer_id: "cus_1", visitor_id: "v1" },
      { $set: { via: "visitor_id", linked_at: new Date(T0) } },
      { upsert: true },
    );
    await f.runOnce();
    expect(await t.rows(a, "SELECT customer_id FROM links")).toEqual([["cus_1"]]);
    t.clock.now += 1_000;
    // One page: a links notice (its rows deleted, then re-read) and a bucket notice
    // whose read fails: the links' delete must not stay.
    await t.m.customerVisitors.updateOne(
      { site_id: "s1", customer_id: "cus_1", visitor_id: "v2" },
      { $set: { via: "visitor_id", linked_at: new Date(T0) } },
      { upsert: true },
    );
    await noteChanges(t.c, "links", "s1", ["cus_1"]);
    await noteChanges(t.c, "bucket", "s1", [new ObjectId().toHexString()]);
    // The bucket notice's read by _id (after the links notice was applied in this page).
    t.m.events.failNextQuery((filter) => "_id" in filter, networkError());
    await expect(f.runOnce()).rejects.toThrow();
    expect(await t.rows(a, "SELECT customer_id, vid FROM links")).toEqual([
      ["cus_1", visitorKey("v1")],
    ]);
    await f.runOnce();
    const both = [visitorKey("v1"), visitorKey("v2")].sort((x, y) => (x < y ? -1 : 1));
    expect(await t.rows(a, "SELECT customer_id, vid FROM links ORDER BY vid")).toEqual(
      both.map((vid) => ["cus_1", vid]),
    );
  });

  it("rebuilds a file a slice of events at a time, each committed; after a crash between two, the file has no watermarks and the next start rebuilds every event once", async () => {
    const t = setUp();
    await t.append([event(0), event(1), event(2)]);
    await t.append([event(3), event(4)]);
    await t.pay(payment("p1"));
    const a = await t.analytics();
    let slices = 0;
    const crashing = t.feed(
      a,
      {
        afterRebuildSlice() {
          if (++slices === 2) throw new Error("killed");
        },
      },
      { rebuildStageRows: 2 },
    );
    await expect(crashing.runOnce()).rejects.toThrow("killed");
    await crashing.stop();
    // Two slices committed; no stream's watermark, so the next start rebuilds.
    expect(await t.seqs(a)).toEqual(once(1_000, 1_004));
    expect(await t.rows(a, "SELECT count(*) FROM mongo_feed_state")).toEqual([[0n]]);
    const f = t.feed(a, undefined, { rebuildStageRows: 2 });
    expect(await f.runOnce()).toBe(T0);
    expect(await t.seqs(a)).toEqual(once(1_000, 1_005));
    // Each bucket held once (its row flushed in some slice, the crash's rebuilt).
    expect(await t.rows(a, "SELECT count(*) FROM mongo_buckets")).toEqual([
      [BigInt(t.m.events.docs.length)],
    ]);
    const visits = await keptAndDerivedVisits(a);
    expect(visits.kept.length).toBeGreaterThan(0);
    expect(visits.kept).toEqual(visits.derived);
    expect(await t.rows(a, "SELECT payment_id FROM payments")).toEqual([["p1"]]);
  });

  it("rebuilds a deleted file from the collections and goes on from the server's time", async () => {
    const t = setUp();
    let a = await t.analytics();
    await t.append([event(0), event(1)]);
    await t.pay(payment("p1"));
    await t.feed(a).runOnce();
    const f1 = feeds.pop() as AnalyticsFeed;
    await f1.stop();
    a.close();
    removeAnalyticsFile(a.path);
    t.clock.now += 10 * HOUR;
    a = await t.analytics();
    const f = t.feed(a);
    expect(await f.runOnce()).toBe(T0 + 10 * HOUR);
    expect(await t.seqs(a)).toEqual(once(1_000, 1_002));
    const visits = await keptAndDerivedVisits(a);
    expect(visits.kept.length).toBeGreaterThan(0);
    expect(visits.kept).toEqual(visits.derived);
    expect(await t.rows(a, "SELECT payment_id, amount_minor FROM payments")).toEqual([
      ["p1", 1_250n],
    ]);
  });
});

const HOUR = 3_600_000;
