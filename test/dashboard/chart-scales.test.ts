/**
 * The daily chart's count axis (dashboard/src/chart-scales.ts): whole-number
 * steps only (the old chart ticked at 2.5 visitors), starting at 0, labels
 * that never show a fraction.
 */
import { describe, expect, it } from "vitest";
import { COUNT_INCRS, countLabel, countRange } from "../../dashboard/src/chart-scales.js";

describe("the chart's count axis", () => {
  it("steps by whole numbers only, 1-2-5 from 1 up", () => {
    expect(COUNT_INCRS.slice(0, 7)).toEqual([1, 2, 5, 10, 20, 50, 100]);
    expect(COUNT_INCRS.every((n) => Number.isInteger(n) && n >= 1)).toBe(true);
  });

  it("ranges from 0 to a whole number above the largest count, at least 1", () => {
    expect(countRange(0)).toEqual([0, 1]);
    expect(countRange(null)).toEqual([0, 1]);
    expect(countRange(3)).toEqual([0, 4]);
    expect(countRange(1000)).toEqual([0, 1100]);
  });

  it("labels whole numbers, grouped by thousands, and nothing in between", () => {
    expect(countLabel(2)).toBe("2");
    expect(countLabel(12_000)).toBe("12,000");
    expect(countLabel(2.5)).toBe("");
  });
});
