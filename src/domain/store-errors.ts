/**
 * The two ways a store call can fail, in the domain's words. Store adapters
 * throw them (the guard in src/store/guarded-store.ts makes sure nothing
 * else escapes); src/domain/errors.ts turns them into 503 and 500.
 */

/**
 * The store could not answer: unreachable, locked, stalled, no writable
 * primary, or the outcome of a write is unknown. The write did not happen
 * (adapters make sure of it before throwing this), so retrying is safe:
 * 503 `unavailable` with Retry-After.
 */
export class StoreUnavailableError extends Error {
  override readonly name = "StoreUnavailableError";
}

/**
 * The store answered and refused: a validator, a duplicate key that retries
 * could not resolve, a value out of range. Retrying the same request fails
 * the same way, so it is a 500 `internal` with the cause logged and no retry
 * advice, never a 503 a client would retry forever.
 */
export class StoreFailureError extends Error {
  override readonly name = "StoreFailureError";
}

/** An error with its cause attached (the cause is logged, never shown to callers). */
export function withCause<E extends Error>(err: E, cause: unknown): E {
  (err as { cause?: unknown }).cause = cause;
  return err;
}
