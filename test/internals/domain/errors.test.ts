import { describe, expect, it } from "vitest";
import {
  DomainError,
  ERROR_KINDS,
  errors,
  storeError,
  toDomainError,
} from "../../../src/domain/errors.js";
import { StoreFailureError, StoreUnavailableError } from "../../../src/domain/store-errors.js";

describe("domain errors", () => {
  it("keep the store's error as the cause of a 503", () => {
    const driver = Object.assign(new Error("connection refused"), { code: "ECONNREFUSED" });
    const err = storeError(driver) as DomainError;
    expect(err).toBeInstanceOf(DomainError);
    expect(err.kind).toBe("unavailable");
    expect(err.message).toBe("the store is unavailable, retry later");
    expect(err.retryAfterSeconds).toBe(2);
    expect(err.cause).toBe(driver);
  });

  it("pass domain errors and store refusals through as they are", () => {
    const domain = errors.unknownSite();
    const refusal = new StoreFailureError("validator");
    expect(storeError(domain)).toBe(domain);
    expect(storeError(refusal)).toBe(refusal);
  });

  it("turn anything else into an internal error with the given message, keeping the cause", () => {
    const bug = new TypeError("x is undefined");
    const err = toDomainError(bug, "internal error");
    expect([err.kind, err.message, err.cause]).toEqual(["internal", "internal error", bug]);
    const outage = new StoreUnavailableError("store call failed");
    const unavailable = toDomainError(outage, "internal error");
    expect([unavailable.kind, unavailable.retryAfterSeconds, unavailable.cause]).toEqual([
      "unavailable",
      2,
      outage,
    ]);
  });

  it("have no cause and no Retry-After unless given", () => {
    const err = errors.missingKey();
    expect("cause" in err).toBe(false);
    expect(err.retryAfterSeconds).toBeUndefined();
    expect(errors.quotaExceeded(60).retryAfterSeconds).toBe(60);
  });

  it("replace lone surrogates in messages that quote input", () => {
    expect(errors.invalid("bad \uD800 name").message).toBe("bad \uFFFD name");
    expect(errors.invalid("pair \uD83D\uDE00 kept").message).toBe("pair \uD83D\uDE00 kept");
  });

  it("are transport-neutral: no kind names an HTTP or RPC detail", () => {
    expect(ERROR_KINDS).not.toContain("body_too_large");
    expect(ERROR_KINDS).not.toContain("unsupported_media_type");
    expect(ERROR_KINDS).not.toContain("method_not_allowed");
    expect(ERROR_KINDS).not.toContain("unknown_method");
    expect(Object.keys(errors.unknownKey())).not.toContain("shape");
  });
});
