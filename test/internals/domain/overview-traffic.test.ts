/** The split of a period into whole UTC days (rollups) and partial edge days (raw rows). */
import { describe, expect, it } from "vitest";
import { splitPeriod } from "../../../src/domain/overview-traffic.js";

const DAY = 86_400_000;
const D0 = Date.UTC(2026, 2, 1);

describe("splitPeriod", () => {
  it("a day-aligned period is whole days only: no raw read", () => {
    expect(splitPeriod(D0, D0 + 90 * DAY)).toEqual({
      days: { fromDay: "2026-03-01", toDay: "2026-05-30" },
      edges: [],
    });
  });

  it("a period with partial days at both ends reads the whole days between from the rollups", () => {
    expect(splitPeriod(D0 + 5, D0 + 3 * DAY + 7)).toEqual({
      days: { fromDay: "2026-03-02", toDay: "2026-03-04" },
      edges: [
        { from: D0 + 5, to: D0 + DAY },
        { from: D0 + 3 * DAY, to: D0 + 3 * DAY + 7 },
      ],
    });
  });

  it("a period without a whole day is one raw read", () => {
    expect(splitPeriod(D0 + 5, D0 + 10)).toEqual({ edges: [{ from: D0 + 5, to: D0 + 10 }] });
    expect(splitPeriod(D0 + DAY - 1, D0 + DAY + 1)).toEqual({
      edges: [{ from: D0 + DAY - 1, to: D0 + DAY + 1 }],
    });
  });

  it("one whole day with a partial one on one side", () => {
    expect(splitPeriod(D0, D0 + DAY + 1)).toEqual({
      days: { fromDay: "2026-03-01", toDay: "2026-03-02" },
      edges: [{ from: D0 + DAY, to: D0 + DAY + 1 }],
    });
  });
});
