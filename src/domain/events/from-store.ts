import { storeError } from "../errors.js";

/**
 * Store failures become 503 `unavailable` (retry later) rather than 500: both
 * adapters guarantee that a write reported unavailable did not happen (SQLite
 * by its transaction, MongoDB by answering per request: a request whose
 * events landed is acknowledged even when others of its batch failed), so a
 * retry is safe and right. A store's refusal (StoreFailureError: a validator,
 * a value out of range) is a 500 with its cause logged, never retried.
 */
export async function fromStore<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    throw storeError(err);
  }
}
