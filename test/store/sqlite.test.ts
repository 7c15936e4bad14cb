/** The store contract against the SQLite adapter, on fresh temporary files. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe } from "vitest";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { describeConnectorsContract } from "./connectors-contract.js";
import { describeStoreContract } from "./contract/index.js";
import { describePersistentVisitorContract } from "./persistent-visitor-contract.js";

describe("sqlite adapter", () => {
  let dir: string;
  let opened = 0;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "store-contract-sqlite-"));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  // The suite's store is the first file; the lifecycle test's second open gets its own.
  describeStoreContract("sqlite", async () => {
    opened += 1;
    return createSqliteStore(join(dir, `store-${opened}.db`));
  });
  describePersistentVisitorContract("sqlite", async () => createSqliteStore(join(dir, "vid.db")));
  describeConnectorsContract("sqlite", async () => {
    opened += 1;
    return createSqliteStore(join(dir, `store-${opened}.db`));
  });
});
