/**
 * A site's settings as people type them: its name and its time zone. The
 * time zone is the IANA name the site's days are read in (reports, the
 * dashboard); absent means UTC.
 */
import { errors } from "./errors.js";

/** Every IANA zone this runtime knows (its ICU's canonical names), plus "UTC". */
let zones: ReadonlySet<string> | undefined;

function knownZones(): ReadonlySet<string> {
  zones ??= new Set([...Intl.supportedValuesOf("timeZone"), "UTC"]);
  return zones;
}

/** The zone a site without one is read in. */
export const DEFAULT_TIME_ZONE = "UTC";

/**
 * An IANA time zone name as the operator wrote it (e.g. `Europe/Paris`), or
 * 400. Known: a name in the runtime's list (Intl.supportedValuesOf) or `UTC`,
 * or an IANA link the runtime resolves to one of them: Node 20's ICU lists
 * `Asia/Calcutta` and `Europe/Kiev`, and people write `Asia/Kolkata` and
 * `Europe/Kyiv`. IANA names start each part with a capital letter, so a
 * miscased name (`europe/paris`, which ICU would also resolve) is refused
 * rather than stored in a spelling no other system uses.
 */
export function parseTimeZone(value: string): string {
  if (knownZones().has(value)) return value;
  let resolved: string | undefined;
  try {
    resolved = new Intl.DateTimeFormat("en-US", { timeZone: value }).resolvedOptions().timeZone;
  } catch {
    resolved = undefined;
  }
  const ianaSpelling = value.split("/").every((part) => /^[A-Z][A-Za-z0-9_+-]*$/.test(part));
  if (resolved === undefined || !knownZones().has(resolved) || !ianaSpelling) {
    throw errors.invalid(`time zone ${value} is not a known IANA time zone`);
  }
  return value;
}

/** A site's name: 1 to 200 characters once trimmed, or 400. */
export function parseSiteName(value: string): string {
  const name = value.trim();
  if ([...name].length < 1 || [...name].length > 200) {
    throw errors.invalid("site name must be 1 to 200 characters");
  }
  return name;
}
