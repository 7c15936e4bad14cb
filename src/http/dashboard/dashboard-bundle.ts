/**
 * The dashboard's built files (dist/dashboard/app.js, app.css and the first
 * run's setup.js, written by
 * dashboard/build.ts), read once at start-up and kept in memory with their
 * gzip and brotli forms and an ETag each, as the tracking script is.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

/** One served file and its encodings. */
export interface DashboardAsset {
  type: string;
  identity: Buffer;
  gzip: Buffer;
  br: Buffer;
  etag: string;
}

/** The bundle's files by name. */
export type DashboardBundle = Record<"app.js" | "app.css" | "setup.js", DashboardAsset>;

const TYPES = {
  "app.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
  "setup.js": "text/javascript; charset=utf-8",
} as const;

/** dist/dashboard seen from this file: from src/http/dashboard (tests, tsx) and dist/src/http/dashboard (`npm start`). */
export function defaultDashboardDir(): string {
  const up = join(import.meta.dirname, "..", "..", "..");
  // The repository root has package.json; dist/ has none.
  const dist = existsSync(join(up, "package.json")) ? join(up, "dist") : up;
  return join(dist, "dashboard");
}

function asset(type: string, identity: Buffer): DashboardAsset {
  return {
    type,
    identity,
    gzip: gzipSync(identity, { level: 9 }),
    br: brotliCompressSync(identity, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 11,
        [constants.BROTLI_PARAM_SIZE_HINT]: identity.length,
      },
    }),
    etag: `"${createHash("sha256").update(identity).digest("base64url").slice(0, 22)}"`,
  };
}

/** Reads and compresses the files; undefined when the dashboard has not been built. */
export function loadDashboardBundle(dir = defaultDashboardDir()): DashboardBundle | undefined {
  const files = Object.keys(TYPES) as (keyof typeof TYPES)[];
  if (!files.every((f) => existsSync(join(dir, f)))) return undefined;
  const [js, css, setup] = files.map((f) => asset(TYPES[f], readFileSync(join(dir, f))));
  if (!js || !css || !setup) return undefined;
  return { "app.js": js, "app.css": css, "setup.js": setup };
}
