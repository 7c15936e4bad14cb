import { describe, expect, it } from "vitest";
import { bundledGeoDbPath, countryFromRecord, openGeo } from "../../../../src/domain/events/geo.js";

describe("geo", () => {
  it("finds countries in the bundled DB-IP database, IPv4 and IPv6", async () => {
    expect(bundledGeoDbPath()).toMatch(/dbip-country\.mmdb$/);
    const geo = await openGeo();
    expect(geo.country("8.8.8.8")).toBe("US");
    expect(geo.country("81.2.69.142")).toBe("GB");
    expect(geo.country("2a00:1450:4001::1")).toBe("DE");
    expect(geo.country("127.0.0.1")).toBeUndefined();
    expect(geo.country("10.1.2.3")).toBeUndefined();
    expect(geo.country("not-an-ip")).toBeUndefined();
  });

  it("reads both DB-IP and MaxMind record shapes", () => {
    expect(countryFromRecord({ country_code: "de" })).toBe("DE");
    expect(countryFromRecord({ country: { iso_code: "FR", names: { en: "France" } } })).toBe("FR");
    expect(countryFromRecord({ registered_country: { iso_code: "NL" } })).toBe("NL");
    expect(
      countryFromRecord({ country: { iso_code: "BE" }, registered_country: { iso_code: "NL" } }),
    ).toBe("BE");
    expect(countryFromRecord({ continent: { code: "EU" } })).toBeUndefined();
    expect(countryFromRecord(null)).toBeUndefined();
  });

  it("refuses a file that is not an MMDB database", async () => {
    await expect(openGeo(import.meta.filename)).rejects.toThrow();
  });
});
