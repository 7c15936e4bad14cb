/**
 * `GET /js/script.js`: the browser tracking script, bundled from tracker/ by
 * `npm run build` into dist/tracker/script.js. It is read once at start-up and
 * kept in memory with its gzip and brotli forms, so serving it costs no disk
 * or compression work. Caching: an hour fresh, a day stale-while-revalidate,
 * and an ETag so a revalidation is a 304 of no body.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { doorErrors } from "../edge/door-errors.js";
import { sendError } from "./envelope.js";

/** The path users paste into their pages: part of the public interface. */
export const SCRIPT_PATH = "/js/script.js";
const CACHE_CONTROL = "public, max-age=3600, stale-while-revalidate=86400";

/** The bundle and its encodings. */
export interface TrackerBundle {
  identity: Buffer;
  gzip: Buffer;
  br: Buffer;
  etag: string;
}

/**
 * Where `npm run build` writes the bundle, seen from this file: dist/tracker/
 * both from src/http (tests, tsx) and from dist/src/http (`npm start`).
 */
export function defaultBundlePath(): string {
  const up = join(import.meta.dirname, "..", "..");
  // The repository root has package.json; dist/ has none.
  const dist = existsSync(join(up, "package.json")) ? join(up, "dist") : up;
  return join(dist, "tracker", "script.js");
}

/** Reads and compresses the bundle; undefined when it has not been built. */
export function loadTrackerBundle(path = defaultBundlePath()): TrackerBundle | undefined {
  if (!existsSync(path)) return undefined;
  const identity = readFileSync(path);
  return {
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

/** The best encoding the client accepts: br, then gzip, then none (q=0 refuses). */
export function pickEncoding(header: string | undefined): "br" | "gzip" | undefined {
  if (!header) return undefined;
  const accepted = new Map<string, number>();
  for (const part of header.toLowerCase().split(",")) {
    const [name = "", ...params] = part.trim().split(";");
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    accepted.set(name.trim(), q === undefined ? 1 : Number(q));
  }
  const ok = (name: string) => (accepted.get(name) ?? accepted.get("*") ?? 0) > 0;
  if (ok("br")) return "br";
  if (ok("gzip")) return "gzip";
  return undefined;
}

/** Whether an If-None-Match header names this ETag (or `*`). */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header
    .split(",")
    .map((t) => t.trim().replace(/^W\//, ""))
    .some((t) => t === etag || t === "*");
}

export function registerTrackerScript(
  app: FastifyInstance,
  bundle: TrackerBundle | undefined,
): void {
  app.get(SCRIPT_PATH, async (request: FastifyRequest, reply: FastifyReply) => {
    if (!bundle) {
      return sendError(
        reply,
        doorErrors.notServed("the tracking script is not built: run npm run build"),
      );
    }
    reply.header("cache-control", CACHE_CONTROL);
    reply.header("etag", bundle.etag);
    reply.header("vary", "Accept-Encoding");
    // Pages may load it with crossorigin/SRI.
    reply.header("access-control-allow-origin", "*");
    reply.header("x-content-type-options", "nosniff");
    if (matches(request.headers["if-none-match"], bundle.etag)) return reply.code(304).send();
    const encoding = pickEncoding(request.headers["accept-encoding"]);
    reply.type("text/javascript; charset=utf-8");
    if (encoding) reply.header("content-encoding", encoding);
    return reply.send(encoding ? bundle[encoding] : bundle.identity);
  });
}
