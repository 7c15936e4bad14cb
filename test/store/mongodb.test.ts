/**
 * The store contract against the MongoDB adapter, when MONGODB_URI names a
 * server (a replica set: majority writes need one). Each run uses a database
 * of its own and drops it afterwards. Without MONGODB_URI the suite is
 * skipped, and says so.
 */
import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, describe, it } from "vitest";
import { createMongoStore } from "../../src/store/mongo/mongo-store.js";
import { describeConnectorsContract } from "./connectors-contract.js";
import { describeStoreContract } from "./contract/index.js";
import { describePersistentVisitorContract } from "./persistent-visitor-contract.js";

const uri = process.env.MONGODB_URI;

if (!uri) {
  console.warn("test/store/mongodb.test.ts: MONGODB_URI not set, MongoDB contract suite skipped");
  // A visible marker in the report, listed only when the suite is skipped.
  it.skipIf(true)("skipped: MONGODB_URI not set", () => {});
}

describe.skipIf(!uri)("mongodb adapter", () => {
  const dbName = `ingest_contract_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;

  afterAll(async () => {
    const client = new MongoClient(uri as string, { serverSelectionTimeoutMS: 5000 });
    try {
      await client.db(dbName).dropDatabase();
    } finally {
      await client.close();
    }
  });

  // A fresh database: migrated first, as a deployer runs `admin store migrate`.
  describeStoreContract("mongodb", () =>
    createMongoStore(uri as string, { dbName, migrate: () => {} }),
  );
  describePersistentVisitorContract("mongodb", () =>
    createMongoStore(uri as string, { dbName, migrate: () => {} }),
  );
  describeConnectorsContract("mongodb", () =>
    createMongoStore(uri as string, { dbName, migrate: () => {} }),
  );
});
