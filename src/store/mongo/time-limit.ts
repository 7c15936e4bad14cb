/**
 * Time limits the driver really enforces. mongodb 7.9 ignores `timeoutMS`
 * (client-side operation timeout: "deprecated, has no effect"), so the
 * STORE_TIMEOUT_MS budget is given to the driver and the server through the
 * limits they do honour: server selection, connection-pool wait, the
 * replication wait of the write concern, `maxTimeMS` on every command (the
 * server abandons the operation past it, so a write cannot land long after
 * the caller was told to retry), and a socket timeout as the last resort
 * when a server stops answering at all.
 */
import type { Collection, Document, MongoClientOptions } from "mongodb";

/** The client options for a budget of `timeoutMs` per operation. */
export function clientOptions(timeoutMs: number): MongoClientOptions {
  return {
    // No writable primary within the budget: fail (503) rather than wait.
    serverSelectionTimeoutMS: timeoutMs,
    // Every connection of the pool busy for the whole budget: fail the same way.
    waitQueueTimeoutMS: timeoutMs,
    // A socket silent for longer than the server's own limits (maxTimeMS, then
    // the write concern's wtimeout) means the server is gone: close it. It
    // must be longer than both, or the client would give up while the server
    // still applies the write.
    socketTimeoutMS: 2 * timeoutMs + 1_000,
    // Never serialize undefined (it would become null); documents are also built without it.
    ignoreUndefined: true,
  };
}

/** Where each method of a Collection takes its options (argument index). */
const OPTIONS_AT: Readonly<Record<string, number>> = {
  find: 1,
  findOne: 1,
  aggregate: 1,
  countDocuments: 1,
  distinct: 2,
  insertOne: 1,
  insertMany: 1,
  updateOne: 2,
  updateMany: 2,
  replaceOne: 2,
  deleteOne: 1,
  deleteMany: 1,
  bulkWrite: 1,
  findOneAndUpdate: 2,
  findOneAndReplace: 2,
  findOneAndDelete: 1,
};

/** The methods that get `maxTimeMS` (exported for tests). */
export const LIMITED_METHODS: readonly string[] = Object.keys(OPTIONS_AT);

/**
 * The collection with `maxTimeMS` added to the options of every read and
 * write (a call that names its own `maxTimeMS` keeps it). The server then
 * stops the operation at the limit and answers MaxTimeMSExpired (50), which
 * the adapter classifies as unavailable.
 */
export function withTimeLimit<T extends Document>(
  collection: Collection<T>,
  maxTimeMS: number,
): Collection<T> {
  return new Proxy(collection, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      const at = typeof prop === "string" ? OPTIONS_AT[prop] : undefined;
      if (at === undefined || typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const a = [...args];
        while (a.length < at) a.push(undefined);
        a[at] = { maxTimeMS, ...((a[at] as object | undefined) ?? {}) };
        return (value as (...x: unknown[]) => unknown).apply(target, a);
      };
    },
  });
}
