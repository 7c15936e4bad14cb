/**
 * Duplicate-key handling. Two upserts of the same new key can both miss the
 * filter and both try to insert; the unique index lets one win and fails the
 * other with E11000. Run again, the loser finds the winner's document and
 * updates it, so retrying such writes a bounded number of times turns the race
 * into the intended "insert or update". (MongoDB 4.2+ already retries some of
 * these on the server; the client retry covers the rest.)
 */
import {
  type AnyBulkWriteOperation,
  type Collection,
  type Document,
  MongoBulkWriteError,
  MongoServerError,
} from "mongodb";

/** The server's duplicate-key error code. */
export const DUPLICATE_KEY = 11000;

/** How many times a write that lost an upsert race is run in all. */
export const DUPLICATE_ATTEMPTS = 4;

/** Whether `err` is a duplicate-key error of a single-document write. */
export function isDuplicateKey(err: unknown): boolean {
  return err instanceof MongoServerError && err.code === DUPLICATE_KEY;
}

/** Runs `write`, running it again (up to `attempts` in all) while it fails with E11000. */
export async function retryDuplicates<T>(
  write: () => Promise<T>,
  attempts = DUPLICATE_ATTEMPTS,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (attempt >= attempts || !isDuplicateKey(err)) throw err;
    }
  }
}

/**
 * Runs an unordered bulk write of upserts; when some of its operations fail
 * with E11000 only (no other write error, no write-concern error), runs those
 * operations again, up to `attempts` in all. Unordered: the operations touch
 * distinct keys, so the server may apply them in any order and one failure
 * does not hold back the others.
 */
export async function bulkUpsert<T extends Document>(
  collection: Collection<T>,
  operations: AnyBulkWriteOperation<T>[],
  attempts = DUPLICATE_ATTEMPTS,
): Promise<void> {
  let pending = operations;
  for (let attempt = 1; pending.length > 0; attempt++) {
    try {
      await collection.bulkWrite(pending, { ordered: false });
      return;
    } catch (err) {
      if (attempt >= attempts || !(err instanceof MongoBulkWriteError)) throw err;
      const writeErrors = err.result.getWriteErrors();
      if (
        writeErrors.length === 0 ||
        err.result.getWriteConcernError() !== undefined ||
        writeErrors.some((e) => e.code !== DUPLICATE_KEY)
      ) {
        throw err;
      }
      const current = pending;
      pending = writeErrors
        .map((e) => current[e.index])
        .filter((op): op is AnyBulkWriteOperation<T> => op !== undefined);
    }
  }
}
