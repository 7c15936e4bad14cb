/**
 * Which MongoDB errors are "retry later" (503) and which are refusals (500),
 * with the driver's own error classes built as the driver builds them.
 */
import { MongoOperationTimeoutError, MongoServerError } from "mongodb";
import { describe, expect, it } from "vitest";
import { StoreFailureError, StoreUnavailableError } from "../../../../src/domain/store-errors.js";
import { classify, classifyErrors, isTransient } from "../../../../src/store/mongo/errors.js";
import {
  bulkDriverError,
  bulkWriteConcernError,
  bulkWriteErrors,
  networkError,
  selectionError,
  serverError,
} from "../../../helpers/mongo/driver-errors.js";

describe("MongoDB error classification", () => {
  const transient: [string, () => unknown][] = [
    ["a network error", networkError],
    ["no server selected in time", selectionError],
    ["the client-side timeout (timeoutMS)", () => new MongoOperationTimeoutError("timed out")],
    ["NotWritablePrimary", () => serverError(10107, "not primary")],
    ["PrimarySteppedDown", () => serverError(189)],
    ["InterruptedDueToReplStateChange", () => serverError(11602)],
    ["the server's side of timeoutMS (MaxTimeMSExpired)", () => serverError(50)],
    ["a write conflict", () => serverError(112)],
    [
      "an error the driver labelled retryable",
      () => serverError(999, "x", ["RetryableWriteError"]),
    ],
    ["a network error during a bulk write", () => bulkDriverError(networkError())],
    ["a write-concern error of a bulk write", () => bulkWriteConcernError()],
    [
      "a bulk write whose write errors are all NotWritablePrimary",
      () => bulkWriteErrors([{ index: 0, code: 10107 }]),
    ],
  ];
  const refusals: [string, () => unknown][] = [
    ["a validator refusing a document (121)", () => serverError(121, "Document failed validation")],
    [
      "a duplicate key left after retries (11000)",
      () => serverError(11000, "E11000 duplicate key"),
    ],
    [
      "a bulk write with a validation error",
      () =>
        bulkWriteErrors([
          { index: 0, code: 10107 },
          { index: 1, code: 121 },
        ]),
    ],
    ["a RangeError (money that is not a safe integer)", () => new RangeError("not a safe integer")],
    ["a TypeError (a bug)", () => new TypeError("x is undefined")],
    ["a bad update operator (2)", () => serverError(2, "Unknown modifier: $bad")],
  ];

  for (const [what, make] of transient) {
    it(`${what} is transient: unavailable, retry later`, () => {
      const err = make();
      expect(isTransient(err)).toBe(true);
      const c = classify(err);
      expect(c).toBeInstanceOf(StoreUnavailableError);
      expect(c.cause).toBe(err);
    });
  }
  for (const [what, make] of refusals) {
    it(`${what} is a refusal: a failure, never retried`, () => {
      const err = make();
      expect(isTransient(err)).toBe(false);
      const c = classify(err);
      expect(c).toBeInstanceOf(StoreFailureError);
      expect(c.cause).toBe(err);
      // The message names the error's type only: driver messages may quote input.
      expect(c.message).not.toContain("duplicate");
      expect(c.message).not.toContain("undefined");
    });
  }

  it("keeps errors already classified, and classifies every method's rejection", async () => {
    const u = new StoreUnavailableError("x");
    expect(classify(u)).toBe(u);
    const part = classifyErrors({
      kind: "mongodb" as const,
      async refuse(): Promise<void> {
        throw new MongoServerError({ code: 121, errmsg: "Document failed validation" });
      },
      async drop(): Promise<void> {
        throw networkError();
      },
      async answer(): Promise<number> {
        return 42;
      },
    });
    expect(part.kind).toBe("mongodb");
    await expect(part.refuse()).rejects.toBeInstanceOf(StoreFailureError);
    await expect(part.drop()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(part.answer()).resolves.toBe(42);
  });
});
