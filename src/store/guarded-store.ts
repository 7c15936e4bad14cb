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

export interface GuardOptions {
  /** Time limit of each call (asynchronous stores). */
  timeoutMs?: number;
  /**
   * Called when the store stops answering (the first failed call, with its
   * failure) and when it answers again: once per outage, however many calls
   * fail during it. Recovery is the first success of a method that failed
   * during the outage, so reads that still work while writes are locked out
   * (SQLite under another process's lock) do not end it.
   */
  onStateChange?: (available: boolean, cause?: unknown) => void;
  /** Told of every failed or timed-out call, by method name (for metrics). */
  onError?: (operation: string) => void;
}

export function guardStore(store: Store, options: GuardOptions = {}): Store {
  const { timeoutMs, onStateChange, onError } = options;
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
    if (failing.size === 0) onStateChange?.(false, e.cause ?? e);
    failing.add(method);
    return Promise.reject(e);
  };
  const wrap =
    <A extends unknown[], R>(method: string, fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      let p: Promise<R>;
      try {
        p = fn(...args);
      } catch (err) {
        return failed(method, err);
      }
      if (timeoutMs === undefined) {
        return p.then(
          (v) => succeeded(method, v),
          (err) => failed(method, err),
        );
      }
      return new Promise<R>((resolve, reject) => {
        const timer = setTimeout(() => {
          const late = new StoreUnavailableError(`store call took over ${timeoutMs} ms`);
          failed(method, late).catch(reject);
        }, timeoutMs);
        p.then(
          (v) => {
            clearTimeout(timer);
            resolve(succeeded(method, v));
          },
          (err) => {
            clearTimeout(timer);
            failed(method, err).catch(reject);
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
    guarded[key] = key === "close" ? call : wrap(key, call);
  }
  return guarded as unknown as Store;
}

function unavailable(err: unknown): StoreUnavailableError {
  if (err instanceof StoreUnavailableError) return err;
  const e = new StoreUnavailableError("store call failed");
  (e as { cause?: unknown }).cause = err;
  return e;
}
