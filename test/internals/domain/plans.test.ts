import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { utcMonth } from "../../../src/domain/plans.js";

describe("utcMonth", () => {
  it("is the ISO month of any instant, in any order of calls (the last month is remembered)", () => {
    const instant = fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }); // years 0000-9999
    fc.assert(
      fc.property(fc.array(instant, { minLength: 1, maxLength: 20 }), (times) => {
        for (const ms of times) {
          expect(utcMonth(ms)).toBe(new Date(ms).toISOString().slice(0, 7));
        }
      }),
    );
  });

  it("turns at the first millisecond of a month, in both directions", () => {
    const start = Date.UTC(2026, 11, 1);
    expect(utcMonth(start - 1)).toBe("2026-11");
    expect(utcMonth(start)).toBe("2026-12");
    expect(utcMonth(start - 1)).toBe("2026-11");
    expect(utcMonth(Date.UTC(2027, 0, 1) - 1)).toBe("2026-12");
    expect(utcMonth(Date.UTC(2027, 0, 1))).toBe("2027-01");
  });
});
