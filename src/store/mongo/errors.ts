/**
 * The one place that decides what a MongoDB error means for the caller.
 *
 * Only transient errors are "unavailable" (503, retry later): the server
 * could not be reached or selected, the primary stepped down or is not
 * writable, the operation ran out of time, the write concern was not
 * satisfied, or the driver labelled the error retryable. Everything else (a
 * validator refusing a document, a duplicate key that retries could not
 * resolve, a RangeError for money that is not a safe integer, a driver bug)
 * would fail the same way on every retry, so it is a StoreFailureError: a
 * 500 with the cause logged and no retry advice.
 */
import {
  MongoBulkWriteError,
  MongoClientClosedError,
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  MongoWriteConcernError,
} from "mongodb";
import { StoreFailureError, StoreUnavailableError, withCause } from "../../domain/store-errors.js";

/**
 * Server error codes that say "not now" rather than "never": the retryable
 * codes of the retryable-writes specification, plus time limits, write
 * concern failures and write conflicts.
 */
export const TRANSIENT_CODES: ReadonlySet<number> = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  50, // MaxTimeMSExpired (the server's side of timeoutMS)
  64, // WriteConcernFailed (wtimeout: the write may not be on a majority)
  89, // NetworkTimeout
  91, // ShutdownInProgress
  112, // WriteConflict
  134, // ReadConcernMajorityNotAvailableYet
  189, // PrimarySteppedDown
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

const TRANSIENT_LABELS = [
  MongoErrorLabel.RetryableWriteError,
  MongoErrorLabel.TransientTransactionError,
  MongoErrorLabel.UnknownTransactionCommitResult,
  MongoErrorLabel.PoolRequestedRetry,
];

/** Whether `err` is transient: the same call may succeed later. */
export function isTransient(err: unknown): boolean {
  if (err instanceof MongoBulkWriteError) {
    // A driver error during a bulk write (network, timeout, selection) is
    // wrapped: the original is the error response.
    const inner: unknown = err.errorResponse;
    if (inner instanceof Error && inner !== err) return isTransient(inner);
    if (err.result?.getWriteConcernError() !== undefined) return true;
    const writeErrors = err.result?.getWriteErrors() ?? [];
    if (writeErrors.length > 0) return writeErrors.every((e) => TRANSIENT_CODES.has(e.code));
  }
  if (
    err instanceof MongoNetworkError ||
    err instanceof MongoServerSelectionError ||
    err instanceof MongoOperationTimeoutError ||
    err instanceof MongoWriteConcernError ||
    err instanceof MongoTopologyClosedError ||
    err instanceof MongoClientClosedError ||
    err instanceof MongoNotConnectedError
  ) {
    return true;
  }
  if (err instanceof MongoError) {
    if (TRANSIENT_LABELS.some((label) => err.hasErrorLabel(label))) return true;
    if (typeof err.code === "number" && TRANSIENT_CODES.has(err.code)) return true;
  }
  return false;
}

/** The store error that `err` means: StoreUnavailableError when transient, else StoreFailureError. */
export function classify(err: unknown): StoreUnavailableError | StoreFailureError {
  if (err instanceof StoreUnavailableError || err instanceof StoreFailureError) return err;
  if (isTransient(err)) return withCause(new StoreUnavailableError("store unavailable"), err);
  const what = err instanceof Error ? err.name : typeof err;
  return withCause(new StoreFailureError(`store refused the call (${what})`), err);
}

/** The store error of one write error of a bulk write (which is not a MongoError). */
export function classifyWriteError(we: {
  code: number;
}): StoreUnavailableError | StoreFailureError {
  return TRANSIENT_CODES.has(we.code)
    ? withCause(new StoreUnavailableError("store unavailable"), we)
    : withCause(new StoreFailureError(`store refused the write (code ${we.code})`), we);
}

/**
 * The same object with every method's rejection classified (`close` too:
 * harmless). Methods are bound, so parts built as closures or classes work.
 */
export function classifyErrors<T extends object>(part: T): T {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(part)) {
    out[name] =
      typeof value === "function"
        ? async (...args: unknown[]) => {
            try {
              return await (value as (...a: unknown[]) => Promise<unknown>).apply(part, args);
            } catch (err) {
              throw classify(err);
            }
          }
        : value;
  }
  return out as T;
}
