/**
 * The MongoDB driver's own error classes, built the way the driver builds
 * them, for tests that run without a server.
 */
import { createRequire } from "node:module";
import {
  MongoBulkWriteError,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
} from "mongodb";

const require = createRequire(import.meta.url);
/** The driver's BulkWriteResult (not exported from the package's root). */
const { BulkWriteResult } = require("mongodb/lib/bulk/common.js") as {
  BulkWriteResult: new (bulkResult: unknown, isOrdered: boolean) => MongoBulkWriteError["result"];
};

export interface RawWriteError {
  index: number;
  code: number;
  errmsg?: string;
}

/** The result the driver merges from the server's replies to a bulk write. */
export function bulkResult(
  options: {
    writeErrors?: RawWriteError[];
    writeConcernError?: { code: number; errmsg: string };
    ordered?: boolean;
  } = {},
): MongoBulkWriteError["result"] {
  return new BulkWriteResult(
    {
      ok: 1,
      writeErrors: (options.writeErrors ?? []).map((e) => ({ errmsg: "write failed", ...e })),
      writeConcernErrors: options.writeConcernError ? [options.writeConcernError] : [],
      insertedIds: [],
      nInserted: 0,
      nUpserted: 0,
      nMatched: 0,
      nModified: 0,
      nRemoved: 0,
      upserted: [],
    },
    options.ordered ?? false,
  );
}

/** A bulk write the server answered with write errors (as handleWriteError throws it). */
export function bulkWriteErrors(writeErrors: RawWriteError[]): MongoBulkWriteError {
  const result = bulkResult({ writeErrors });
  return new MongoBulkWriteError(
    {
      message: writeErrors[0]?.errmsg ?? "write failed",
      code: writeErrors[0]?.code ?? 0,
      writeErrors: result.getWriteErrors(),
    },
    result,
  );
}

/** A bulk write whose write concern failed (the writes are on the primary, maybe not on a majority). */
export function bulkWriteConcernError(code = 64): MongoBulkWriteError {
  const result = bulkResult({
    writeConcernError: { code, errmsg: "waiting for replication timed out" },
  });
  return new MongoBulkWriteError({ message: "waiting for replication timed out", code }, result);
}

/** A driver error (network, timeout) during a bulk write: wrapped, as executeCommands does. */
export function bulkDriverError(cause: Error): MongoBulkWriteError {
  return new MongoBulkWriteError(cause, bulkResult());
}

export function networkError(): MongoNetworkError {
  return new MongoNetworkError("connection 3 to 10.0.0.5:27017 closed");
}

export function selectionError(): MongoServerSelectionError {
  // The reason is the topology description; only its `error` is read.
  return new MongoServerSelectionError("Server selection timed out after 5000 ms", {
    error: undefined,
  } as never);
}

export function serverError(code: number, errmsg = "server error", labels: string[] = []) {
  return new MongoServerError({ ok: 0, code, errmsg, errorLabels: labels });
}
