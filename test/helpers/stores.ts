/**
 * The stores a suite runs against: SQLite always, MongoDB too when
 * MONGODB_URI names a server (each run in a fresh, migrated database that is
 * dropped afterwards). Suites that run per store call `describeEachStore`,
 * which also reports the MongoDB half as skipped, plainly, when it cannot run.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { describe, it } from "vitest";
import { createMongoStore } from "../../src/store/mongo/mongo-store.js";
import type { Store } from "../../src/store/port.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";

export type StoreKind = "sqlite" | "mongodb";

/** A fresh store of one kind, reachable by URL from child processes and the CLI. */
export interface StoreUnderTest {
  kind: StoreKind;
  /** STORE_URL for a child process or the admin CLI. */
  url: string;
  /** A new connection to it (close it when done). */
  open(options?: { sqliteBusyTimeoutMs?: number; timeoutMs?: number }): Promise<Store>;
  /** Removes it (file or database). */
  cleanup(): Promise<void>;
}

const MONGODB_URI = process.env.MONGODB_URI;

/** The kinds this run can test. */
export const STORE_KINDS: readonly StoreKind[] = MONGODB_URI ? ["sqlite", "mongodb"] : ["sqlite"];

/** `uri` naming database `dbName` (keeps hosts and options). */
export function mongoUrlWithDb(uri: string, dbName: string): string {
  const scheme = uri.indexOf("://") + 3;
  const query = uri.indexOf("?", scheme);
  const end = query < 0 ? uri.length : query;
  const slash = uri.indexOf("/", scheme);
  const hosts = uri.slice(scheme, slash >= 0 && slash < end ? slash : end);
  return `${uri.slice(0, scheme)}${hosts}/${dbName}${query < 0 ? "" : uri.slice(query)}`;
}

export async function freshStore(kind: StoreKind): Promise<StoreUnderTest> {
  if (kind === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "ingest-store-"));
    const path = join(dir, "ingest.sqlite");
    return {
      kind,
      url: `sqlite:${path}`,
      open: async (o = {}) => createSqliteStore(path, { busyTimeoutMs: o.sqliteBusyTimeoutMs }),
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  if (!MONGODB_URI) throw new Error("MONGODB_URI is not set");
  const dbName = `ingest_suite_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
  const url = mongoUrlWithDb(MONGODB_URI, dbName);
  // Migrated once, as a deployer would, before any server opens it.
  await (await createMongoStore(url, { migrate: () => {} })).close();
  return {
    kind,
    url,
    open: async (o = {}) => createMongoStore(url, { timeoutMs: o.timeoutMs }),
    cleanup: async () => {
      const client = new MongoClient(MONGODB_URI, { serverSelectionTimeoutMS: 5000 });
      try {
        await client.db(dbName).dropDatabase();
      } finally {
        await client.close();
      }
    },
  };
}

/**
 * `describe`s `body` once per store kind of this run, named `<name> (<kind>)`;
 * without MONGODB_URI, says so on the console and lists a skipped test for
 * the MongoDB half, so no report can mistake it for a pass.
 */
export function describeEachStore(name: string, body: (kind: StoreKind) => void): void {
  for (const kind of STORE_KINDS) describe(`${name} (${kind})`, () => body(kind));
  if (!MONGODB_URI) {
    console.warn(`${name}: MONGODB_URI not set, the MongoDB half is skipped`);
    it.skipIf(true)(`${name} (mongodb): skipped, MONGODB_URI not set`, () => {});
  }
}
