/**
 * A MongoDB deployment at the driver boundary, in memory: the collections
 * the analytics feed reads and the `analytics_lease` collection, all judged
 * by one model server clock (memory-collections.ts), with the feed's source
 * and the owner lease over them as the store opens them. The feed's tests,
 * the MongoDB Query test and the ownership test start from it.
 */
import type { FeedCollections, MongoFeedSource } from "../../../src/store/mongo/analytics-feed.js";
import { createMongoAnalyticsLease } from "../../../src/store/mongo/analytics-lease.js";
import { MemoryCollection, type ServerClock } from "./memory-collections.js";

/** The owner lease's settings: the collection defaults to the deployment's `leases`. */
export interface MemoryLeaseOptions {
  ttlMs: number;
  holder?: string;
  /** The collection as one server's driver sees it (a test may cut that server off). */
  leases?: unknown;
}

/** A deployment whose server clock starts at `t0` (ms); tests move `clock.now`. */
export function memoryDeployment(t0: number) {
  const clock: ServerClock = { now: t0 };
  /** The feed's collections, by the names the feed gives them (FeedCollections). */
  const m = {
    events: new MemoryCollection(clock),
    payments: new MemoryCollection(clock),
    customerVisitors: new MemoryCollection(clock),
    stitches: new MemoryCollection(clock),
    analyticsLog: new MemoryCollection(clock),
    analyticsFeedState: new MemoryCollection(clock),
    sites: new MemoryCollection(clock),
  };
  /** The `analytics_lease` collection. */
  const leases = new MemoryCollection(clock);
  /** The model server's clock, as `serverTime` reads the server's. */
  const serverTime = async () => clock.now;
  const c = m as unknown as FeedCollections;
  /** The feed's source over the collections (closing it closes nothing: they stay). */
  const source: MongoFeedSource = { c, serverTime, close: async () => {} };
  /** The deployment's owner lease, judged by the same server clock. */
  const lease = ({ ttlMs, holder, leases: seen = leases }: MemoryLeaseOptions) =>
    createMongoAnalyticsLease({
      leases: seen as never,
      serverTime,
      ttlMs,
      ...(holder ? { holder } : {}),
    });
  return { clock, m, c, leases, serverTime, source, lease };
}
