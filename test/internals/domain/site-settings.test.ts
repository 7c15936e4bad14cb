import { describe, expect, it } from "vitest";
import { DomainError } from "../../../src/domain/errors.js";
import { parseSiteName, parseTimeZone } from "../../../src/domain/site-settings.js";

/** The error a call throws, as kind and message. */
function refusal(call: () => unknown): { kind: string; message: string } {
  try {
    call();
  } catch (err) {
    if (err instanceof DomainError) return { kind: err.kind, message: err.message };
    throw err;
  }
  throw new Error("no error thrown");
}

describe("a site's time zone", () => {
  it("takes the runtime's IANA names and UTC, as written", () => {
    for (const zone of ["Europe/Paris", "America/Argentina/Buenos_Aires", "Asia/Tokyo", "UTC"]) {
      expect(parseTimeZone(zone)).toBe(zone);
    }
  });

  it("takes IANA links the runtime resolves (Asia/Kolkata, Europe/Kyiv, Etc/UTC)", () => {
    for (const zone of ["Asia/Kolkata", "Europe/Kyiv", "Etc/UTC"]) {
      expect(parseTimeZone(zone)).toBe(zone);
    }
  });

  it("refuses unknown names, offsets, miscased names and the empty string, saying which", () => {
    for (const zone of ["Mars/Base", "+05:00", "europe/paris", "utc", "", "Europe/Paris "]) {
      expect(refusal(() => parseTimeZone(zone))).toEqual({
        kind: "invalid_input",
        message: `time zone ${zone} is not a known IANA time zone`,
      });
    }
  });
});

describe("a site's name", () => {
  it("is trimmed and 1 to 200 characters", () => {
    expect(parseSiteName("  Shop  ")).toBe("Shop");
    expect(parseSiteName("é".repeat(200))).toBe("é".repeat(200));
    for (const name of ["", "   ", "x".repeat(201)]) {
      expect(refusal(() => parseSiteName(name))).toEqual({
        kind: "invalid_input",
        message: "site name must be 1 to 200 characters",
      });
    }
  });
});
