/**
 * STORE_TIMEOUT_MS reaches the driver and the server: mongodb 7.9 ignores
 * `timeoutMS`, so the budget goes into the limits it honours (checked on the
 * driver's own MongoClient and Db), `maxTimeMS` rides on every read and write
 * the adapter sends, and readiness needs a writable primary.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../../../src/domain/store-errors.js";
import { checkWritablePrimary, writeConcern } from "../../../../src/store/mongo/mongo-store.js";
import {
  clientOptions,
  LIMITED_METHODS,
  withTimeLimit,
} from "../../../../src/store/mongo/time-limit.js";
import { ROOT } from "../../../helpers/rpc-clients.js";

describe("MongoDB time limits", () => {
  it("gives the budget to the driver's server selection, pool wait, socket and write concern", async () => {
    const client = new MongoClient("mongodb://127.0.0.1:9/x", clientOptions(300));
    try {
      expect(client.options.serverSelectionTimeoutMS).toBe(300);
      expect(client.options.waitQueueTimeoutMS).toBe(300);
      // Longer than the server's own limits (maxTimeMS, then wtimeout): the
      // client never gives up while the server may still apply a write.
      expect(client.options.socketTimeoutMS).toBeGreaterThan(2 * 300);
      const db = client.db("x", { writeConcern: writeConcern(300) });
      expect(db.writeConcern).toMatchObject({ w: "majority", journal: true, wtimeoutMS: 300 });
    } finally {
      await client.close();
    }
  });

  it("adds maxTimeMS to every read and write, in the right argument, keeping an explicit one", async () => {
    const seen = new Map<string, unknown[]>();
    const fake = Object.fromEntries(
      LIMITED_METHODS.map((m) => [
        m,
        (...args: unknown[]) => {
          seen.set(m, args);
          return Promise.resolve(null);
        },
      ]),
    );
    const c = withTimeLimit(fake as never, 250) as unknown as Record<
      string,
      (...a: unknown[]) => unknown
    >;
    await c.updateOne?.({ _id: 1 }, { $set: { a: 1 } });
    expect(seen.get("updateOne")).toEqual([{ _id: 1 }, { $set: { a: 1 } }, { maxTimeMS: 250 }]);
    await c.bulkWrite?.([], { ordered: false });
    expect(seen.get("bulkWrite")).toEqual([[], { maxTimeMS: 250, ordered: false }]);
    await c.findOne?.({ _id: 1 });
    expect(seen.get("findOne")).toEqual([{ _id: 1 }, { maxTimeMS: 250 }]);
    await c.distinct?.("customer_id", { site_id: "s" });
    expect(seen.get("distinct")).toEqual(["customer_id", { site_id: "s" }, { maxTimeMS: 250 }]);
    await c.findOneAndUpdate?.({ _id: 1 }, [], { upsert: true, maxTimeMS: 10 });
    expect(seen.get("findOneAndUpdate")?.[2]).toEqual({ maxTimeMS: 10, upsert: true });
    await c.aggregate?.([{ $match: {} }]);
    expect(seen.get("aggregate")).toEqual([[{ $match: {} }], { maxTimeMS: 250 }]);
  });

  it("covers every collection method the adapter calls", () => {
    const dir = join(ROOT, "src", "store", "mongo");
    const called = new Set<string>();
    for (const file of readdirSync(dir)) {
      const text = readFileSync(join(dir, file), "utf8");
      // `c.<collection>.<method>(`: the adapter's calls through its Collections.
      for (const m of text.matchAll(/\bc\.\w+\s*\.(\w+)\(/g)) called.add(m[1] as string);
    }
    expect(called.size).toBeGreaterThan(5);
    for (const method of called) expect(LIMITED_METHODS).toContain(method);
  });

  it("is ready only with a writable primary", async () => {
    const sent: unknown[] = [];
    const db = (reply: object) => ({
      command: async (cmd: object) => {
        sent.push(cmd);
        return { ok: 1, ...reply };
      },
    });
    await expect(checkWritablePrimary(db({ isWritablePrimary: true }) as never, 400)).resolves.toBe(
      undefined,
    );
    expect(sent[0]).toEqual({ hello: 1, maxTimeMS: 400 });
    for (const reply of [
      { isWritablePrimary: false, secondary: true },
      { isWritablePrimary: false, arbiterOnly: true },
      {},
    ]) {
      await expect(checkWritablePrimary(db(reply) as never, 400)).rejects.toBeInstanceOf(
        StoreUnavailableError,
      );
    }
  });
});
