/**
 * Time buckets and wall-clock conversions in a site's time zone.
 */
import { describe, expect, it } from "vitest";
import { bucketOf, fromZoned, isTimeZone } from "../../../../src/domain/analytics/zoned-time.js";

const at = (s: string) => Date.parse(s);

describe("zoned time", () => {
  it("labels hour, day, week (Monday) and month buckets on the site's wall clock", () => {
    // Sunday 1 March 2026 23:15 in Kolkata is still Sunday 1 March 17:45 UTC.
    const ms = at("2026-03-01T17:45:00Z");
    expect(bucketOf(ms, "hour", "Asia/Kolkata")).toBe("2026-03-01 23:00");
    expect(bucketOf(ms, "day", "Asia/Kolkata")).toBe("2026-03-01");
    expect(bucketOf(ms, "week", "Asia/Kolkata")).toBe("2026-02-23");
    expect(bucketOf(ms, "month", "Asia/Kolkata")).toBe("2026-03");
    // 45 minutes later it is Monday 2 March there: a new day and a new week.
    expect(bucketOf(ms + 45 * 60_000, "day", "Asia/Kolkata")).toBe("2026-03-02");
    expect(bucketOf(ms + 45 * 60_000, "week", "Asia/Kolkata")).toBe("2026-03-02");
    expect(bucketOf(ms + 45 * 60_000, "day", "UTC")).toBe("2026-03-01");
  });

  it("puts both occurrences of the repeated hour in one bucket", () => {
    expect(bucketOf(at("2026-10-25T00:30:00Z"), "hour", "Europe/Paris")).toBe("2026-10-25 02:00");
    expect(bucketOf(at("2026-10-25T01:30:00Z"), "hour", "Europe/Paris")).toBe("2026-10-25 02:00");
  });

  it("reads a repeated wall-clock time as its earlier instant and a skipped one as moved by the gap", () => {
    const t = { year: 2026, month: 10, day: 25, hour: 2, minute: 30, second: 0, millisecond: 0 };
    expect(new Date(fromZoned(t, "Europe/Paris")).toISOString()).toBe("2026-10-25T00:30:00.000Z");
    expect(new Date(fromZoned({ ...t, month: 3, day: 29 }, "Europe/Paris")).toISOString()).toBe(
      "2026-03-29T01:30:00.000Z",
    );
  });

  it("knows IANA names and refuses offsets and unknown names", () => {
    expect([isTimeZone("Europe/Paris"), isTimeZone("UTC"), isTimeZone("Asia/Calcutta")]).toEqual([
      true,
      true,
      true,
    ]);
    expect([isTimeZone("+05:30"), isTimeZone("Mars/Base"), isTimeZone("")]).toEqual([
      false,
      false,
      false,
    ]);
  });
});
