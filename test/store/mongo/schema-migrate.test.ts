/**
 * `admin store migrate` creates collections, validators and indexes once and
 * is idempotent; the server only verifies and names what is missing. Driven
 * against a fake Db that keeps collections, validators (as BSON would round
 * trip them) and indexes, and records every schema change it is asked for.
 */
import type { Document, IndexDescription } from "mongodb";
import { MongoServerError } from "mongodb";
import { describe, expect, it } from "vitest";
import {
  COLLECTIONS,
  migrateSchema,
  OBSOLETE_INDEXES,
  SchemaMissingError,
  verifySchema,
} from "../../../src/store/mongo/schema.js";
import { runAdminCli } from "../../helpers/cli.js";

interface FakeCollection {
  validator?: Document;
  indexes: Map<string, IndexDescription>;
}

function fakeDb(options: { raceOn?: string } = {}) {
  const colls = new Map<string, FakeCollection>();
  /** Every change the server was asked for. */
  const changes: string[] = [];
  const roundTrip = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
  const db = {
    listCollections: () => ({
      toArray: async () =>
        [...colls].map(([name, c]) => ({
          name,
          type: "collection",
          options: c.validator ? { validator: roundTrip(c.validator) } : {},
        })),
    }),
    createCollection: async (name: string, opts: { validator: Document }) => {
      if (options.raceOn === name && !colls.has(name)) {
        // Another migration created it between listCollections and here.
        colls.set(name, { indexes: new Map([["_id_", { key: { _id: 1 } }]]) });
      }
      if (colls.has(name)) throw new MongoServerError({ code: 48, errmsg: "already exists" });
      changes.push(`create ${name}`);
      colls.set(name, {
        validator: roundTrip(opts.validator),
        indexes: new Map([["_id_", { key: { _id: 1 } }]]),
      });
    },
    command: async (cmd: Document) => {
      if (typeof cmd.collMod === "string") {
        changes.push(`collMod ${cmd.collMod}`);
        (colls.get(cmd.collMod) as FakeCollection).validator = roundTrip(cmd.validator);
      }
      return { ok: 1 };
    },
    collection: (name: string) => ({
      listIndexes: () => ({
        toArray: async () => {
          const c = colls.get(name);
          if (!c) throw new MongoServerError({ code: 26, errmsg: "ns does not exist" });
          return [...c.indexes.keys()].map((n) => ({ name: n }));
        },
      }),
      drop: async () => {
        changes.push(`drop ${name}`);
        return colls.delete(name);
      },
      dropIndex: async (index: string) => {
        changes.push(`dropIndex ${name}.${index}`);
        colls.get(name)?.indexes.delete(index);
      },
      aggregate: (pipeline: Document[]) => ({
        toArray: async () => {
          const merge = pipeline.at(-1)?.$merge as { into: string; on: string[] } | undefined;
          changes.push(`aggregate ${name} → $merge ${merge?.into} on ${merge?.on.join(",")}`);
          return [];
        },
      }),
      createIndexes: async (specs: IndexDescription[]) => {
        changes.push(`createIndexes ${name}: ${specs.map((s) => s.name).join(",")}`);
        for (const s of specs) colls.get(name)?.indexes.set(s.name as string, s);
        return specs.map((s) => s.name);
      },
    }),
  };
  return { db: db as never, colls, changes };
}

const allIndexes = COLLECTIONS.flatMap((c) => c.indexes.map((i) => `index ${c.name}.${i.name}`));

describe("MongoDB schema: migrate once, verify at start", () => {
  it("creates every collection with its validator and every index, then verifies clean", async () => {
    const f = fakeDb();
    expect(await verifySchema(f.db)).toEqual(COLLECTIONS.map((c) => `collection ${c.name}`));
    const report = await migrateSchema(f.db);
    expect(report.created).toEqual(
      COLLECTIONS.flatMap((c) => [
        `collection ${c.name}`,
        ...c.indexes.map((i) => `index ${c.name}.${i.name}`),
      ]),
    );
    expect(report.updated).toEqual([]);
    expect(report.dropped).toEqual([]);
    expect(f.changes.filter((c) => c.startsWith("collMod"))).toEqual([]);
    expect(allIndexes).toContain("index events.receipts_unique");
    expect(await verifySchema(f.db)).toEqual([]);
  });

  it("a database of the rollups' versions loses them once: the three collections (visitor ids with them) and the revenue index", async () => {
    const f = fakeDb();
    await migrateSchema(f.db);
    // A database of the versions that kept the daily rollups and the covering revenue index.
    for (const name of ["traffic_days", "visitor_days", "new_visitor_days"]) {
      f.colls.set(name, { indexes: new Map([["_id_", { key: { _id: 1 } }]]) });
    }
    f.colls.get("payments")?.indexes.set("site_status_paid_at_revenue", { key: { site_id: 1 } });
    f.changes.length = 0;
    const report = await migrateSchema(f.db);
    expect(report.dropped).toEqual([
      "index payments.site_status_paid_at_revenue",
      "collection traffic_days",
      "collection visitor_days",
      "collection new_visitor_days",
    ]);
    expect(f.changes).toEqual([
      "dropIndex payments.site_status_paid_at_revenue",
      "drop traffic_days",
      "drop visitor_days",
      "drop new_visitor_days",
    ]);
    expect(await verifySchema(f.db)).toEqual([]);
    f.changes.length = 0;
    await migrateSchema(f.db);
    expect(f.changes).toEqual([]);
  });

  it("is idempotent: a second run changes nothing (no collMod on every start any more)", async () => {
    const f = fakeDb();
    await migrateSchema(f.db);
    f.changes.length = 0;
    expect(await migrateSchema(f.db)).toEqual({ created: [], updated: [], dropped: [] });
    expect(f.changes).toEqual([]);
  });

  it("names exactly what is missing or out of date, and migrates only that", async () => {
    const f = fakeDb();
    await migrateSchema(f.db);
    f.colls.get("events")?.indexes.delete("receipts_unique");
    (f.colls.get("payments") as FakeCollection).validator = { $jsonSchema: { bsonType: "object" } };
    const missing = await verifySchema(f.db);
    expect(missing).toEqual(["index events.receipts_unique", "validator payments"]);
    const err = new SchemaMissingError(missing);
    expect(err.message).toBe(
      "the MongoDB schema is not up to date (missing: index events.receipts_unique, validator payments); " +
        "run `npm run admin -- store migrate` with a user allowed to create collections and indexes",
    );
    f.changes.length = 0;
    expect(await migrateSchema(f.db)).toEqual({
      created: ["index events.receipts_unique"],
      updated: ["validator payments"],
      dropped: [],
    });
    expect(f.changes).toEqual(["createIndexes events: receipts_unique", "collMod payments"]);
    expect(await verifySchema(f.db)).toEqual([]);
  });

  it("drops the indexes earlier versions made that nothing queries", async () => {
    const f = fakeDb();
    await migrateSchema(f.db);
    for (const { collection, name } of OBSOLETE_INDEXES) {
      f.colls.get(collection)?.indexes.set(name, { key: { site_id: 1 } });
    }
    // Extra indexes do not stop the server: it only needs its own.
    expect(await verifySchema(f.db)).toEqual([]);
    f.changes.length = 0;
    const report = await migrateSchema(f.db);
    expect(report.dropped).toEqual([
      "index sites.account",
      "index identities.site_visitor",
      "index subscriptions.site_customer",
      "index payments.site_paid_at",
      "index payments.site_status_paid_at",
      "index payments.site_status_paid_at_revenue",
      "index visitor_touches.site_ts",
    ]);
    expect(f.changes).toEqual(report.dropped.map((d) => `dropIndex ${d.slice("index ".length)}`));
    expect((await migrateSchema(f.db)).dropped).toEqual([]);
  });

  it("two migrations at once: the one that loses the creation race updates the validator", async () => {
    const f = fakeDb({ raceOn: "events" });
    await migrateSchema(f.db);
    expect(f.changes).toContain("collMod events");
    expect(await verifySchema(f.db)).toEqual([]);
  });

  it("`npm run admin -- store migrate` prints what it did (SQLite: migrated at open)", async () => {
    const r = await runAdminCli(["store", "migrate"], { STORE_URL: "sqlite::memory:" });
    expect(r.stderr).toBe("");
    expect(r.exitCode).toBe(0);
    expect(r.json).toEqual({ store: "sqlite", created: [], updated: [], dropped: [] });
  });
});
