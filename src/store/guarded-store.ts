/**
 * Guards every store call: a failure of the database becomes a
 * StoreUnavailableError (503 `unavailable`, retry later) instead of an
 * internal error, and, for stores that answer asynchronously, a call that
 * takes longer than `timeoutMs` fails the same way so requests get an answer
 * in bounded time while the database stalls.
 */
import type { Store } from "./port.js";

/** The store could not answer: unreachable, locked, stalled or failing. */
export class StoreUnavailableError extends Error {
  override readonly name = "StoreUnavailableError";
}

export function guardStore(
  store: Store,
  options: {
    timeoutMs?: number;
    /** Told of every failed or timed-out call, by method name (for metrics). */
    onError?: (operation: string) => void;
  } = {},
): Store {
  const { timeoutMs, onError } = options;
  const wrap =
    <A extends unknown[], R>(operation: string, fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      const unavailable = (err: unknown) => {
        onError?.(operation);
        return toUnavailable(err);
      };
      let p: Promise<R>;
      try {
        p = fn(...args);
      } catch (err) {
        return Promise.reject(unavailable(err));
      }
      if (timeoutMs === undefined) return p.catch((err) => Promise.reject(unavailable(err)));
      return new Promise<R>((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(unavailable(new StoreUnavailableError(`store call took over ${timeoutMs} ms`))),
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
    guarded[key] = key === "close" ? call : wrap(name, call);
  }
  return guarded as unknown as Store;
}

function toUnavailable(err: unknown): StoreUnavailableError {
  if (err instanceof StoreUnavailableError) return err;
  const e = new StoreUnavailableError("store call failed");
  (e as { cause?: unknown }).cause = err;
  return e;
}
