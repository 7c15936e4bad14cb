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

export interface GuardOptions {
  /**
   * Called when the store stops answering (the first call that fails as
   * unavailable, with its failure) and when it answers again: once per
   * outage, however many calls fail during it. Recovery is the first success
   * of a method that failed during the outage, so reads that still work while
   * writes are locked out (SQLite under another process's lock) do not end it.
   */
  onStateChange?: (available: boolean, cause?: unknown) => void;
  /** Told of every failed call, by method name (for metrics). */
  onError?: (operation: string) => void;
}

/** The store with every rejection turned into a StoreUnavailableError or StoreFailureError. */
export function guardStore(store: Store, options: GuardOptions = {}): Store {
  const { onStateChange, onError } = options;
  // Methods that failed during the current outage; empty while the store is available.
  const failing = new Set<string>();
  const succeeded = <R>(method: string, v: R): R => {
    if (failing.has(method)) {
      failing.clear();
      onStateChange?.(true);
    }
    return v;
  };
  const failed = (method: string, err: unknown): Promise<never> => {
    onError?.(method);
    const e = unavailable(err);
    // A refusal (StoreFailureError, 500) is not an outage.
    if (e instanceof StoreUnavailableError) {
      if (failing.size === 0) onStateChange?.(false, e.cause ?? e);
      failing.add(method);
    }
    return Promise.reject(e);
  };
  const wrap =
    <A extends unknown[], R>(method: string, fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      try {
        return fn(...args).then(
          (v) => succeeded(method, v),
          (err) => failed(method, err),
        );
      } catch (err) {
        return failed(method, err);
      }
    };

  const guarded: Record<string, unknown> = {
    kind: store.kind,
    commitsInOrder: store.commitsInOrder,
  };
  // for…in also walks the prototype chain: stores built on another store keep its methods.
  for (const name in store) {
    const key = name as keyof Store;
    if (typeof store[key] !== "function") continue;
    // Looked up at each call, so a store whose methods change (tests' fault injection) is honoured.
    const call = (...args: unknown[]) =>
      (store[key] as (...a: unknown[]) => Promise<unknown>).apply(store, args);
    guarded[key] = key === "close" ? call : wrap(key, call);
  }
  return guarded as unknown as Store;
}

function unavailable(err: unknown): StoreUnavailableError | StoreFailureError {
  if (err instanceof StoreUnavailableError || err instanceof StoreFailureError) return err;
  return withCause(new StoreUnavailableError("store call failed"), err);
}
