/**
 * The analytics owner's lease of a MongoDB deployment: one document
 * (`_id: "analytics"`) of the `analytics_lease` collection, the counterpart
 * of SQLite's `analytics_lease` row (src/store/sqlite/analytics-lease.ts).
 * Every server of the deployment shares the database, so the first to ask
 * holds it, renews it every third of ANALYTICS_LEASE_MS, and the others
 * take it over once it lapsed (src/analytics-ownership.ts).
 *
 * Each decision is one conditional write on the document (the server
 * serialises writes to one document): `findOneAndUpdate` of the lease whose
 * holder is this process or which lapsed, with upsert; when another holder's
 * live lease is there, the upsert's insert collides on `_id` (E11000) and
 * nothing is taken. Expiry is judged by the server's clock (`serverTime`,
 * the `hello` command's `localTime`), the one clock every host of the
 * deployment shares, so the hosts' own clocks may disagree. As with SQLite,
 * a holder of this host whose process is gone is taken over at once.
 */
import { type Collection, MongoClient, MongoServerError, ReadPreference } from "mongodb";
import type { AnalyticsLease, LeaseRow } from "../../domain/store/analytics-lease-port.js";
import { isGoneHere, newHolderId } from "../../lib/lease-holder.js";
import type { AnalyticsLeaseDoc } from "./documents.js";
import { collections } from "./schema.js";
import { clientOptions } from "./time-limit.js";

/** The one lease document of a deployment. */
export const LEASE_ID = "analytics";

export interface MongoAnalyticsLeaseOptions {
  /** The `analytics_lease` collection. */
  leases: Pick<
    Collection<AnalyticsLeaseDoc>,
    "findOneAndUpdate" | "updateOne" | "deleteOne" | "findOne"
  >;
  /** The server's clock, in ms (expiry is judged by it). */
  serverTime(): Promise<number>;
  /** How long a lease lasts after each renewal (ANALYTICS_LEASE_MS). */
  ttlMs: number;
  /** The holder id; default: host, pid and a random part. */
  holder?: string;
  /** Closes the lease's own connection. */
  close?(): Promise<void>;
}

/** Whether the server refused an insert for a duplicate key (the lease is held by another). */
const isDuplicateKey = (err: unknown) => err instanceof MongoServerError && err.code === 11000;

/** This process's handle on the lease of a MongoDB deployment. */
export function createMongoAnalyticsLease(options: MongoAnalyticsLeaseOptions): AnalyticsLease {
  const { leases, ttlMs } = options;
  const holder = options.holder ?? newHolderId();
  const read = async (): Promise<LeaseRow | undefined> => {
    const d = await leases.findOne({ _id: LEASE_ID });
    return d
      ? {
          holder: d.holder,
          acquiredAt: d.acquired_at.getTime(),
          expiresAt: d.expires_at.getTime(),
        }
      : undefined;
  };
  return {
    holder,
    async acquire() {
      const now = await options.serverTime();
      const taken = { holder, acquired_at: new Date(now), expires_at: new Date(now + ttlMs) };
      try {
        const after = await leases.findOneAndUpdate(
          { _id: LEASE_ID, $or: [{ holder }, { expires_at: { $lte: new Date(now) } }] },
          { $set: taken },
          { upsert: true, returnDocument: "after" },
        );
        return after?.holder === holder;
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
      }
      // Held by another, and live: taken over only from a dead process of this host.
      const current = await read();
      if (!current || !isGoneHere(current.holder)) return false;
      const r = await leases.updateOne({ _id: LEASE_ID, holder: current.holder }, { $set: taken });
      return r.matchedCount === 1;
    },
    async renew() {
      const now = await options.serverTime();
      const r = await leases.updateOne(
        { _id: LEASE_ID, holder },
        { $set: { expires_at: new Date(now + ttlMs) } },
      );
      return r.matchedCount === 1;
    },
    async release() {
      await leases.deleteOne({ _id: LEASE_ID, holder });
    },
    read,
    close: async () => options.close?.(),
  };
}

/**
 * Opens the lease of the deployment of a `mongodb://` STORE_URL on its own
 * connection (it is renewed while the store's requests run, and must not
 * wait behind them), on the primary, each call limited to `timeoutMs`.
 */
export async function openMongoAnalyticsLease(
  database: { url: string; dbName: string },
  timeoutMs: number,
  ttlMs: number,
): Promise<AnalyticsLease> {
  const client = new MongoClient(database.url, clientOptions(timeoutMs));
  await client.connect();
  const db = client.db(database.dbName, { readPreference: ReadPreference.PRIMARY });
  return createMongoAnalyticsLease({
    leases: collections(db, { maxTimeMS: timeoutMs }).analyticsLease,
    async serverTime() {
      const hello = await db.command({ hello: 1 });
      return (hello.localTime as Date).getTime();
    },
    ttlMs,
    close: () => client.close(),
  });
}
