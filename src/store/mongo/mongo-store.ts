/** The MongoDB adapter of the store port: the production store. */
import { type Db, MongoClient, ReadPreference } from "mongodb";
import { StoreUnavailableError } from "../../domain/store-errors.js";
import type { Store } from "../port.js";
import { createMongoAccounts } from "./accounts.js";
import { createMongoAttribution } from "./attribution.js";
import { createMongoConnectors } from "./connectors.js";
import { createMongoErasure } from "./erasure.js";
import { classifyErrors } from "./errors.js";
import { createMongoEvents } from "./events.js";
import { createMongoOverview } from "./overview.js";
import { createMongoPayments } from "./payments.js";
import { createMongoPersistentVisitors } from "./persistent-visitors.js";
import { createMongoRetention } from "./retention.js";
import {
  collections,
  type MigrationReport,
  migrateSchema,
  SchemaMissingError,
  verifySchema,
} from "./schema.js";
import { createMongoSetup } from "./setup.js";
import { clientOptions } from "./time-limit.js";

/** The database used when neither the URL path nor the options name one. */
export const DEFAULT_DB_NAME = "ingest";

/** STORE_TIMEOUT_MS's default: the budget of one operation. */
export const DEFAULT_TIMEOUT_MS = 5000;

export interface MongoStoreOptions {
  /** Overrides the database named in the URL (tests use a fresh one per run). */
  dbName?: string;
  /**
   * STORE_TIMEOUT_MS: the budget of one operation, given to the driver and
   * the server (src/store/mongo/time-limit.ts). 5000 when unset.
   */
  timeoutMs?: number;
  /**
   * Runs `migrateSchema` first and reports what it did (`admin store
   * migrate`, tests on a fresh database). Without it the store only verifies
   * the schema and refuses to open when something is missing.
   */
  migrate?: (report: MigrationReport) => void;
}

/**
 * The database's write concern: acknowledged once a majority of the replica
 * set has the write in its journal (`j: true` says so explicitly rather than
 * relying on the server's writeConcernMajorityJournalDefault), within
 * `wtimeoutMS`; past it the write may not be on a majority, which the adapter
 * treats as an unknown outcome (unavailable, or settled by a re-send).
 */
export function writeConcern(timeoutMs: number): { w: "majority"; j: true; wtimeoutMS: number } {
  return { w: "majority", j: true, wtimeoutMS: timeoutMs };
}

/**
 * Resolves when `db` answers `hello` as a writable primary (or a mongos);
 * rejects with StoreUnavailableError otherwise: a secondary, an arbiter or a
 * node in recovery answers pings but cannot take a write, so the service is
 * not ready.
 */
export async function checkWritablePrimary(
  db: Pick<Db, "command">,
  timeoutMs: number,
): Promise<void> {
  const hello = await db.command({ hello: 1, maxTimeMS: timeoutMs });
  if (hello.isWritablePrimary !== true) {
    throw new StoreUnavailableError("no writable primary");
  }
}

/**
 * The database named by the path of a `mongodb://` or `mongodb+srv://` URL
 * (`mongodb://h1,h2/analytics?replicaSet=rs` → `analytics`), or `ingest`.
 * Parsed by hand: WHATWG URL does not accept the multi-host form, and the
 * driver's own default is `test`, which cannot be told from an explicit one.
 */
export function dbNameFromUrl(url: string): string {
  const scheme = url.indexOf("://");
  const rest = scheme < 0 ? url : url.slice(scheme + 3);
  // The host list ends at the first "/" (user info and hosts cannot hold one
  // unescaped); a "?" before it means options without a database.
  const slash = rest.indexOf("/");
  const query = rest.indexOf("?");
  if (slash < 0 || (query >= 0 && query < slash)) return DEFAULT_DB_NAME;
  const path = rest.slice(slash + 1).split("?")[0] ?? "";
  return path === "" ? DEFAULT_DB_NAME : decodeURIComponent(path);
}

/**
 * Connects to MongoDB, checks that the schema is in place (or migrates it
 * when asked), and returns the store. Fails within a few seconds when no server
 * answers. MongoDB 7.0 or later, as a replica set (or sharded cluster) in
 * production: majority writes need one.
 */
export async function createMongoStore(
  url: string,
  options: MongoStoreOptions = {},
): Promise<Store> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const client = new MongoClient(url, clientOptions(timeoutMs));
  let closed = false;
  try {
    await client.connect();
    const dbName = options.dbName ?? dbNameFromUrl(url);
    const db = client.db(dbName, {
      // An acknowledged event or payment survives the loss of the primary.
      writeConcern: writeConcern(timeoutMs),
      // Reads see the writes just made (quota, salts, a key deleted a moment
      // ago), whatever read preference the URL asks for.
      readPreference: ReadPreference.PRIMARY,
      ignoreUndefined: true,
    });
    if (options.migrate) options.migrate(await migrateSchema(db));
    const missing = await verifySchema(db);
    if (missing.length > 0) throw new SchemaMissingError(missing);
    const c = collections(db, { maxTimeMS: timeoutMs });
    // Every rejection is classified once, here: transient → unavailable (503),
    // anything else → a failure (500, cause logged).
    return classifyErrors<Store>({
      kind: "mongodb",
      commitsInOrder: false,
      feedDatabase: { url, dbName },
      ...createMongoAccounts(c),
      ...createMongoEvents(c, { timeoutMs }),
      ...createMongoPayments(c),
      ...createMongoAttribution(c),
      ...createMongoPersistentVisitors(c),
      ...createMongoConnectors(c),
      ...createMongoErasure(c),
      ...createMongoOverview(c),
      ...createMongoRetention(c),
      ...createMongoSetup(c),
      async ping() {
        await checkWritablePrimary(db, timeoutMs);
      },
      async close() {
        if (closed) return;
        closed = true;
        await client.close();
      },
    });
  } catch (err) {
    closed = true;
    await client.close().catch(() => {});
    throw err;
  }
}
