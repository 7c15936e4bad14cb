import { describe, expect, it } from "vitest";
import {
  fromUnixSeconds,
  isoExponent,
  msOf,
  rfc3339Of,
  stripeExponent,
  toMajor,
  unixMs,
} from "../../../../src/domain/connectors/provider-money.js";
import { DomainError } from "../../../../src/domain/errors.js";

describe("providers' minor units", () => {
  it("follows Stripe's table where it differs from ISO 4217", () => {
    expect(["USD", "JPY", "MGA", "ISK", "KWD", "HUF", "UGX"].map(stripeExponent)).toEqual([
      2, 0, 0, 2, 3, 2, 0,
    ]);
    expect(["USD", "JPY", "MGA", "ISK", "KWD"].map(isoExponent)).toEqual([2, 0, 2, 0, 3]);
  });

  it("turns minor units into the exact major-unit number through decimal text", () => {
    expect(toMajor(2999, 2)).toBe(29.99);
    expect(toMajor(1, 3)).toBe(0.001);
    expect(toMajor(5000, 0)).toBe(5000);
    expect(toMajor("3600", 2)).toBe(36);
    expect(toMajor(-150, 2)).toBe(-1.5);
    expect(toMajor(999_999_999_999_999, 2)).toBe(9999999999999.99);
  });

  it("refuses what is not a safe integer", () => {
    for (const bad of [1.5, "12a", "", null, undefined, 2 ** 53, Number.NaN, "1e3"]) {
      expect(toMajor(bad, 2)).toBeUndefined();
    }
  });

  it("reads providers' times, absent ones as undefined", () => {
    expect(fromUnixSeconds(1773230400, "created")).toBe("2026-03-11T12:00:00.000Z");
    expect(fromUnixSeconds(null, "created")).toBeUndefined();
    expect(fromUnixSeconds(undefined, "created")).toBeUndefined();
    expect(msOf("2026-03-11T11:00:02.294633Z", "data.updated_at")).toBe(
      Date.UTC(2026, 2, 11, 11, 0, 2, 294),
    );
    expect(msOf(null, "data.updated_at")).toBeUndefined();
    expect(rfc3339Of("", "data.created_at")).toBeUndefined();
    expect(unixMs(253_402_300_799, "created")).toBe(253_402_300_799_000);
    expect(unixMs(-62_167_219_200, "created")).toBe(-62_167_219_200_000);
  });

  it("refuses a time out of years 0000-9999 or unreadable with a 400 naming the provider's field", () => {
    const refusal = (f: () => unknown) => {
      try {
        f();
        return "accepted";
      } catch (err) {
        return err instanceof DomainError ? `${err.kind}: ${err.message}` : String(err);
      }
    };
    const unix = (field: string) =>
      `invalid_input: invalid provider event: ${field}: must be Unix seconds within years 0000-9999`;
    for (const bad of [1e17, 253_402_300_800, -62_167_219_201, Number.NaN, "1773230400", true]) {
      expect(refusal(() => fromUnixSeconds(bad, "data.object.created"))).toBe(
        unix("data.object.created"),
      );
    }
    const rfc = (field: string) =>
      `invalid_input: invalid provider event: ${field}: must be RFC 3339 within years 0000-9999`;
    for (const bad of ["yesterday", "+275760-09-13T00:00:00Z", "10000-01-01T00:00:00Z", 7]) {
      expect(refusal(() => msOf(bad, "data.updated_at"))).toBe(rfc("data.updated_at"));
      expect(refusal(() => rfc3339Of(bad, "data.created_at"))).toBe(rfc("data.created_at"));
    }
  });
});
