/**
 * GET /js/script.js: the bundle built from tracker/, its caching headers and
 * encodings, and the size budget (2 KB gzipped; this test fails above 2.5 KB).
 */
import { request } from "node:http";
import { brotliDecompressSync, gunzipSync, gzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { pickEncoding } from "../../src/http/tracker-script.js";
import { buildTracker } from "../../tracker/build.js";
import { useTestServer } from "../helpers/use-test-server.js";

/** A raw GET (fetch would decode the body and hide Content-Encoding handling). */
function get(url: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>(
    (resolve, reject) => {
      const req = request(url, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
          }),
        );
      });
      req.on("error", reject);
      req.end();
    },
  );
}

describe("the tracking script", () => {
  let bundle: string;
  const ctx = useTestServer({ tenant: false });
  beforeAll(async () => {
    bundle = await buildTracker();
  });

  it("stays within its size budget", () => {
    const gzipped = gzipSync(Buffer.from(bundle), { level: 9 }).length;
    // Budget 2 KB; the test allows 2.5 KB before failing.
    expect(gzipped).toBeLessThanOrEqual(2560);
    expect(bundle).not.toMatch(/\n\s*\/\//); // minified: no comments left
  });

  it("is served with its type, an ETag and an hour of caching", async () => {
    const res = await get(`${ctx.url}/js/script.js`);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(res.headers["cache-control"]).toBe("public, max-age=3600, stale-while-revalidate=86400");
    expect(res.headers.etag).toMatch(/^"[\w-]{22}"$/);
    expect(res.headers.vary).toBe("Accept-Encoding");
    expect(res.headers["content-encoding"]).toBeUndefined();
    expect(res.body.toString()).toBe(bundle);
  });

  it("answers 304 to a matching If-None-Match", async () => {
    const { headers } = await get(`${ctx.url}/js/script.js`);
    const etag = headers.etag as string;
    const res = await get(`${ctx.url}/js/script.js`, { "if-none-match": `W/${etag}` });
    expect(res.status).toBe(304);
    expect(res.body.length).toBe(0);
    expect(res.headers.etag).toBe(etag);
    const stale = await get(`${ctx.url}/js/script.js`, { "if-none-match": '"old"' });
    expect(stale.status).toBe(200);
  });

  it("is compressed with brotli or gzip when asked", async () => {
    const br = await get(`${ctx.url}/js/script.js`, { "accept-encoding": "gzip, deflate, br" });
    expect(br.headers["content-encoding"]).toBe("br");
    expect(brotliDecompressSync(br.body).toString()).toBe(bundle);
    const gz = await get(`${ctx.url}/js/script.js`, { "accept-encoding": "gzip" });
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(gz.body).toString()).toBe(bundle);
    const none = await get(`${ctx.url}/js/script.js`, { "accept-encoding": "br;q=0, gzip;q=0" });
    expect(none.headers["content-encoding"]).toBeUndefined();
    expect(none.body.toString()).toBe(bundle);
  });

  it("negotiates encodings by q-values", () => {
    expect(pickEncoding(undefined)).toBeUndefined();
    expect(pickEncoding("identity")).toBeUndefined();
    expect(pickEncoding("*")).toBe("br");
    expect(pickEncoding("br;q=0, *")).toBe("gzip");
    expect(pickEncoding("GZIP;q=0.5")).toBe("gzip");
  });
});
