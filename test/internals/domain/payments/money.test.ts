import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  currencyExponent,
  formatMinorUnits,
  isCurrency,
  MAX_MINOR,
  toMinorUnits,
} from "../../../../src/domain/payments/money.js";

describe("isCurrency", () => {
  it.each(["USD", "EUR", "JPY", "KWD", "GBP", "CHF", "VED", "ZWG", "XCG", "SLE", "CLF", "UYW"])(
    "accepts %s",
    (code) => {
      expect(isCurrency(code)).toBe(true);
    },
  );

  it.each([
    ["lower case", "usd"],
    ["mixed case", "Usd"],
    ["two letters", "US"],
    ["four letters", "USDD"],
    ["not assigned", "ABC"],
    ["gold (no minor unit)", "XAU"],
    ["special drawing right (no minor unit)", "XDR"],
    ["testing code", "XTS"],
    ["no currency", "XXX"],
    ["long withdrawn", "DEM"],
    ["empty", ""],
  ])("refuses %s (%s)", (_why, code) => {
    expect(isCurrency(code)).toBe(false);
  });

  it("keeps recently withdrawn codes for historical payments", () => {
    for (const code of ["HRK", "BGN", "SLL", "ZWL", "ANG", "CUC"])
      expect(isCurrency(code)).toBe(true);
  });
});

describe("currencyExponent", () => {
  it.each([
    ["USD", 2],
    ["EUR", 2],
    ["JPY", 0],
    ["KRW", 0],
    ["ISK", 0],
    ["CLP", 0],
    ["KWD", 3],
    ["BHD", 3],
    ["TND", 3],
    ["CLF", 4],
    ["UYW", 4],
    ["HUF", 2],
    ["MGA", 2],
  ])("%s has %i decimals", (code, exp) => {
    expect(currencyExponent(code)).toBe(exp);
  });
});

describe("toMinorUnits", () => {
  it.each([
    [29, "USD", 2900],
    [29.99, "USD", 2999],
    [0.01, "USD", 1],
    [0.1, "USD", 10],
    [1.005, "KWD", 1005],
    [12.345, "KWD", 12345],
    [0.001, "KWD", 1],
    [1000, "JPY", 1000],
    [1, "JPY", 1],
    [1.2345, "CLF", 12345],
    [19.99, "EUR", 1999],
    [9999999999999.99, "USD", 999999999999999],
    [999999999999999, "JPY", 999999999999999],
  ])("%d %s = %d minor units", (amount, currency, minor) => {
    expect(toMinorUnits(amount, currency)).toEqual({ ok: true, minor });
  });

  it("keeps amounts exact where float arithmetic would not", () => {
    // 1.005 * 100 = 100.49999999999999 and 0.29 * 100 = 28.999999999999996 in binary floats.
    expect(toMinorUnits(1.005, "USD")).toEqual({ ok: false, reason: "precision" });
    expect(toMinorUnits(0.29, "USD")).toEqual({ ok: true, minor: 29 });
    expect(toMinorUnits(4.35, "USD")).toEqual({ ok: true, minor: 435 });
  });

  it.each([
    [29.999, "USD"],
    [0.001, "USD"],
    [1.5, "JPY"],
    [0.1, "JPY"],
    [1.0001, "KWD"],
    [1e-7, "USD"],
    [0.1 + 0.2, "USD"],
  ])("refuses %d %s: too many decimals", (amount, currency) => {
    expect(toMinorUnits(amount, currency)).toEqual({ ok: false, reason: "precision" });
  });

  it.each([
    [10000000000000, "USD"],
    [1e15, "JPY"],
    [1e21, "USD"],
    [Number.MAX_VALUE, "USD"],
    [Number.POSITIVE_INFINITY, "USD"],
    [Number.NaN, "USD"],
  ])("refuses %d %s: out of range", (amount, currency) => {
    expect(toMinorUnits(amount, currency)).toEqual({ ok: false, reason: "range" });
  });

  it("keeps the sign of negative amounts and never gives -0", () => {
    expect(toMinorUnits(-12.5, "USD")).toEqual({ ok: true, minor: -1250 });
    const zero = toMinorUnits(-0, "USD");
    expect(zero.ok && Object.is(zero.minor, 0)).toBe(true);
  });

  it("round-trips every decimal of up to 15 digits through a JSON double (property)", () => {
    const currencies = ["USD", "JPY", "KWD", "CLF"];
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: MAX_MINOR }),
        fc.constantFrom(...currencies),
        (minor, currency) => {
          const text = formatMinorUnits(minor, currency);
          const amount = JSON.parse(text) as number;
          expect(toMinorUnits(amount, currency)).toEqual({ ok: true, minor });
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe("formatMinorUnits", () => {
  it.each([
    [2999, "USD", "29.99"],
    [1, "USD", "0.01"],
    [0, "USD", "0.00"],
    [-1250, "USD", "-12.50"],
    [1000, "JPY", "1000"],
    [1005, "KWD", "1.005"],
    [5, "KWD", "0.005"],
    [12345, "CLF", "1.2345"],
  ])("%i %s = %s", (minor, currency, text) => {
    expect(formatMinorUnits(minor, currency)).toBe(text);
  });
});
