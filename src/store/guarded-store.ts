/**
 * Guards every store call: a failure of the database becomes a
 * StoreUnavailableError (503 `unavailable`, retry later) instead of an
 * internal error, unless the adapter already classified it (MongoDB does, in
 * src/store/mongo/errors.ts: only transient errors are "unavailable", the
 * rest are a StoreFailureError, 500). There is deliberately no timer here:
 * answering 503 while the database goes on with the write would let it land
 * after the client was told to retry. Stores bound their own calls (SQLite's
 * busy timeout; MongoDB's time limits, src/store/mongo/time-limit.ts).
 */
import { StoreFailureError, StoreUnavailableError, withCause } from "../domain/store-errors.js";
import type { Store } from "./port.js";

export { StoreFailureError, StoreUnavailableError };

/** The store with every rejection turned into a StoreUnavailableError or StoreFailureError. */
export function guardStore(store: Store): Store {
  const wrap =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      try {
        return fn(...args).catch((err) => Promise.reject(unavailable(err)));
      } catch (err) {
        return Promise.reject(unavailable(err));
      }
    };

  const guarded: Record<string, unknown> = { kind: store.kind };
  // for…in also walks the prototype chain: stores built on another store keep its methods.
  for (const name in store) {
    const key = name as keyof Store;
    if (typeof store[key] !== "function") continue;
    // Looked up at each call, so a store whose methods change (tests' fault injection) is honoured.
    const call = (...args: unknown[]) =>
      (store[key] as (...a: unknown[]) => Promise<unknown>).apply(store, args);
    guarded[key] = key === "close" ? call : wrap(call);
  }
  return guarded as unknown as Store;
}

function unavailable(err: unknown): StoreUnavailableError | StoreFailureError {
  if (err instanceof StoreUnavailableError || err instanceof StoreFailureError) return err;
  return withCause(new StoreUnavailableError("store call failed"), err);
}
