/**
 * Two `Authorization` headers are no credentials at all. Node keeps only the
 * first of a repeated Authorization header, so a request with two keys would
 * silently be authenticated as the first; this hook removes the header
 * instead, and every door then answers as for a missing key (401
 * `missing or malformed API key`, or the admin API's own 401).
 */
import type { FastifyInstance } from "fastify";

/** How many times `name` (lower case) appears in a raw header list. */
function countHeader(rawHeaders: string[], name: string): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]?.toLowerCase() === name) n++;
  }
  return n;
}

/** Adds the hook; it runs before every route's own hooks and handlers, on both HTTP versions. */
export function registerDuplicateCredentialsGuard(app: FastifyInstance): void {
  app.addHook("onRequest", async function dropDuplicateCredentials(request) {
    const headers = request.raw.headers;
    if (headers.authorization === undefined) return;
    // (Joined by a proxy, "Bearer a, Bearer b" fails the bearer syntax on its own.)
    if (countHeader(request.raw.rawHeaders, "authorization") > 1) {
      delete headers.authorization;
    }
  });
}
