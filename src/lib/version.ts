/** The service's version: `version` of the package.json this code ships in. */
import { readFileSync } from "node:fs";

let cached: string | undefined;

/**
 * Read from package.json, found next to `src/` (run by tsx) or next to
 * `dist/src/` (built); "unknown" if neither is there.
 */
export function serviceVersion(): string {
  if (cached !== undefined) return cached;
  cached = "unknown";
  for (const rel of ["../../package.json", "../../../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), "utf8"));
      if (typeof pkg.version === "string") {
        cached = pkg.version;
        break;
      }
    } catch {
      // not at this level
    }
  }
  return cached as string;
}
