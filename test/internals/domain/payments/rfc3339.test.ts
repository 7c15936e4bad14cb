import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isRfc3339, parseRfc3339 } from "../../../../src/domain/payments/rfc3339.js";

describe("parseRfc3339", () => {
  it.each([
    ["2024-01-15T10:30:00Z", Date.UTC(2024, 0, 15, 10, 30, 0)],
    ["2024-01-15t10:30:00z", Date.UTC(2024, 0, 15, 10, 30, 0)],
    ["2024-01-15T10:30:00.123Z", Date.UTC(2024, 0, 15, 10, 30, 0, 123)],
    ["2024-01-15T10:30:00.5Z", Date.UTC(2024, 0, 15, 10, 30, 0, 500)],
    ["2024-01-15T10:30:00.123456789Z", Date.UTC(2024, 0, 15, 10, 30, 0, 123)],
    ["2024-01-15T12:30:00+02:00", Date.UTC(2024, 0, 15, 10, 30, 0)],
    ["2024-01-15T05:00:00-05:30", Date.UTC(2024, 0, 15, 10, 30, 0)],
    ["2024-01-15T10:30:00-00:00", Date.UTC(2024, 0, 15, 10, 30, 0)],
    ["2024-01-15T00:30:00+14:00", Date.UTC(2024, 0, 14, 10, 30, 0)],
    ["2024-02-29T00:00:00Z", Date.UTC(2024, 1, 29)],
    ["2000-02-29T00:00:00Z", Date.UTC(2000, 1, 29)],
    ["1970-01-01T00:00:00Z", 0],
    ["1969-12-31T23:59:59Z", -1000],
    ["9999-12-31T23:59:59Z", Date.UTC(9999, 11, 31, 23, 59, 59)],
    // A leap second is read as the last millisecond of its minute.
    ["2016-12-31T23:59:60Z", Date.UTC(2016, 11, 31, 23, 59, 59, 999)],
    ["2016-12-31T23:59:60.5Z", Date.UTC(2016, 11, 31, 23, 59, 59, 999)],
    ["2016-12-31T18:59:60-05:00", Date.UTC(2016, 11, 31, 23, 59, 59, 999)],
    ["9999-12-31T23:59:60Z", Date.UTC(9999, 11, 31, 23, 59, 59, 999)],
    ["9999-12-31T19:59:60-04:00", Date.UTC(9999, 11, 31, 23, 59, 59, 999)],
    ["9999-12-31T23:59:59.999Z", Date.UTC(9999, 11, 31, 23, 59, 59, 999)],
    ["0000-01-01T00:00:00Z", -62_167_219_200_000],
    ["0001-01-01T00:30:00+00:30", -62_135_596_800_000],
  ])("%s", (text, ms) => {
    expect(parseRfc3339(text)).toBe(ms);
  });

  it("reads years below 100 as they are, not as 19xx", () => {
    expect(parseRfc3339("0050-06-01T00:00:00Z")).toBe(new Date("0050-06-01T00:00:00Z").getTime());
    expect(new Date(parseRfc3339("0001-01-01T00:00:00Z") as number).getUTCFullYear()).toBe(1);
  });

  it.each([
    ["a date alone", "2024-01-15"],
    ["no offset", "2024-01-15T10:30:00"],
    ["no seconds", "2024-01-15T10:30Z"],
    ["space instead of T", "2024-01-15 10:30:00Z"],
    ["offset without colon", "2024-01-15T10:30:00+0200"],
    ["offset hours only", "2024-01-15T10:30:00+02"],
    ["empty fraction", "2024-01-15T10:30:00.Z"],
    ["comma fraction", "2024-01-15T10:30:00,5Z"],
    ["month 13", "2024-13-01T00:00:00Z"],
    ["month 0", "2024-00-01T00:00:00Z"],
    ["day 0", "2024-01-00T00:00:00Z"],
    ["Feb 30", "2024-02-30T00:00:00Z"],
    ["Feb 29 in a common year", "2023-02-29T00:00:00Z"],
    ["Feb 29 in 1900", "1900-02-29T00:00:00Z"],
    ["April 31", "2024-04-31T00:00:00Z"],
    ["hour 24", "2024-01-15T24:00:00Z"],
    ["minute 60", "2024-01-15T10:60:00Z"],
    ["second 61", "2024-01-15T10:30:61Z"],
    ["leap second not at 23:59 UTC", "2024-01-15T10:30:60Z"],
    ["offset hour 24", "2024-01-15T10:30:00+24:00"],
    ["offset minute 60", "2024-01-15T10:30:00+01:60"],
    ["five-digit year", "12024-01-15T10:30:00Z"],
    ["two-digit year", "24-01-15T10:30:00Z"],
    ["one-digit month", "2024-1-15T10:30:00Z"],
    ["trailing text", "2024-01-15T10:30:00Zjunk"],
    ["leading space", " 2024-01-15T10:30:00Z"],
    ["trailing newline", "2024-01-15T10:30:00Z\n"],
    ["Unix time", "1705314600"],
    ["RFC 2822", "Mon, 15 Jan 2024 10:30:00 GMT"],
    ["non-ASCII digits", "２０２４-01-15T10:30:00Z"],
    ["empty", ""],
    ["an offset that carries the instant into year 10000", "9999-12-31T23:59:59-00:01"],
    ["an offset that carries the instant before year 0000", "0000-01-01T00:00:00+00:01"],
  ])("refuses %s", (_why, text) => {
    expect(parseRfc3339(text)).toBeUndefined();
    expect(isRfc3339(text)).toBe(false);
  });

  it("agrees with Date for every instant written by toISOString (property)", () => {
    fc.assert(
      fc.property(
        fc.date({
          min: new Date("0000-01-01T00:00:00Z"),
          max: new Date("9999-12-31T23:59:59.999Z"),
          noInvalidDate: true,
        }),
        (d) => {
          expect(parseRfc3339(d.toISOString())).toBe(d.getTime());
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("reads any offset as the same instant (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(2100, 0, 1) }),
        fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
        (utcMs, offsetMin) => {
          const ms = Math.floor(utcMs / 1000) * 1000;
          const local = new Date(ms + offsetMin * 60_000).toISOString().slice(0, 19);
          const abs = Math.abs(offsetMin);
          const sign = offsetMin < 0 ? "-" : "+";
          const off = `${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
          expect(parseRfc3339(`${local}${off}`)).toBe(ms);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("every accepted time, whatever its offset or second, is written back as a four-digit-year RFC 3339 string that reads as the same instant (property)", () => {
    const two = (n: number) => String(n).padStart(2, "0");
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 9999 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 31 }),
        fc.integer({ min: 0, max: 23 }),
        fc.integer({ min: 0, max: 59 }),
        fc.integer({ min: 0, max: 60 }),
        fc.option(fc.stringMatching(/^[0-9]{1,9}$/), { nil: undefined }),
        fc.option(fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }), { nil: undefined }),
        (y, mo, d, h, mi, sec, frac, off) => {
          const abs = Math.abs(off ?? 0);
          const zone =
            off === undefined
              ? "Z"
              : `${off < 0 ? "-" : "+"}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
          const text = `${String(y).padStart(4, "0")}-${two(mo)}-${two(d)}T${two(h)}:${two(mi)}:${two(sec)}${frac ? `.${frac}` : ""}${zone}`;
          const ms = parseRfc3339(text);
          if (ms === undefined) return;
          const iso = new Date(ms).toISOString();
          expect(iso).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
          expect(parseRfc3339(iso)).toBe(ms);
          if (sec === 60) expect(iso.slice(14)).toBe("59:59.999Z");
        },
      ),
      { numRuns: 5000 },
    );
  });

  it("accepts every valid UTC date-time of years 0000-9999 (property)", () => {
    fc.assert(
      fc.property(
        fc.date({
          min: new Date("0000-01-01T00:00:00Z"),
          max: new Date("9999-12-31T23:59:59Z"),
          noInvalidDate: true,
        }),
        (date) => {
          const text = `${date.toISOString().slice(0, 19)}Z`;
          expect(parseRfc3339(text)).toBe(Math.floor(date.getTime() / 1000) * 1000);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
