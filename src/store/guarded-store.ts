/**
 * Guards every store call: a failure of the database becomes a
 * StoreUnavailableError (503 `unavailable`, retry later) instead of an
 * internal error, unless the adapter already classified it (MongoDB does, in
 * src/store/mongo/errors.ts: only transient errors are "unavailable", the
 * rest are a StoreFailureError, 500). When `timeoutMs` is given, a call that
 * takes longer fails the same way so requests get an answer in bounded time
 * while the database stalls; MongoDB needs no such timer, since the driver
 * itself abandons an operation after `timeoutMS`.
 */
import { StoreFailureError, StoreUnavailableError, withCause } from "../domain/store-errors.js";
import type { Store } from "./port.js";

export { StoreFailureError, StoreUnavailableError };

export function guardStore(store: Store, options: { timeoutMs?: number } = {}): Store {
  const { timeoutMs } = options;
  const wrap =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      let p: Promise<R>;
      try {
        p = fn(...args);
      } catch (err) {
        return Promise.reject(unavailable(err));
      }
      if (timeoutMs === undefined) return p.catch((err) => Promise.reject(unavailable(err)));
      return new Promise<R>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new StoreUnavailableError(`store call took over ${timeoutMs} ms`)),
          timeoutMs,
        );
        p.then(
          (v) => {
            clearTimeout(timer);
            resolve(v);
          },
          (err) => {
            clearTimeout(timer);
            reject(unavailable(err));
          },
        );
      });
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
