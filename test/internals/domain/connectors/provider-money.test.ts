import { describe, expect, it } from "vitest";
import {
  fromUnixSeconds,
  isoExponent,
  msOf,
  stripeExponent,
  toMajor,
} from "../../../../src/domain/connectors/provider-money.js";

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

  it("reads providers' times", () => {
    expect(fromUnixSeconds(1773230400)).toBe("2026-03-11T12:00:00.000Z");
    expect(fromUnixSeconds("1773230400")).toBeUndefined();
    expect(msOf("2026-03-11T11:00:02.294633Z")).toBe(Date.UTC(2026, 2, 11, 11, 0, 2, 294));
    expect(msOf("yesterday")).toBeUndefined();
  });
});
