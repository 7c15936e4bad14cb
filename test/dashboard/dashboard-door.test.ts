/**
 * GET /dashboard: the page, its bundle (built from dashboard/ by esbuild),
 * the headers that keep it on this origin, its encodings and ETags, the
 * size budget (issue 33: the page's scripts and styles at most 150 KB
 * compressed, gzip, 1 KB = 1,000 bytes), the front door (`GET /`, `/dashboard/`),
 * the icon, and the other verbs.
 */
import { request } from "node:http";
import { gunzipSync, gzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { buildDashboard, type DashboardFiles } from "../../dashboard/build.js";
import { DASHBOARD_CSP } from "../../src/http/dashboard/dashboard-door.js";
import { useTestServer } from "../helpers/use-test-server.js";

/** A raw request (fetch would decode the body and hide Content-Encoding handling). */
function call(url: string, options: { method?: string; headers?: Record<string, string> } = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>(
    (resolve, reject) => {
      const req = request(
        url,
        { method: options.method ?? "GET", headers: options.headers ?? {} },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks),
            }),
          );
        },
      );
      req.on("error", reject);
      req.end();
    },
  );
}

describe("the dashboard door", () => {
  let files: DashboardFiles;
  const ctx = useTestServer({ tenant: false });
  beforeAll(async () => {
    files = await buildDashboard();
  });

  it("stays within its size budget and loads nothing from elsewhere", () => {
    // What the dashboard page loads: its script and its stylesheet (the HTML
    // names these two only; the test below checks that).
    const gz = (name: keyof DashboardFiles) =>
      gzipSync(Buffer.from(files[name]), { level: 9 }).length;
    const total = gz("app.js") + gz("app.css");
    // The rule: scripts and styles at most 150 KB compressed, whatever the split.
    expect(total).toBeLessThanOrEqual(150_000);
    // No absolute URL is loaded: no CDN, no font, no import from another origin.
    expect(files["app.css"]).not.toMatch(/url\(|@import|@font-face/);
    expect(files["app.js"]).not.toMatch(/import\s*\(?\s*["']https?:/);
  });

  it("serves the page with a policy that allows only this origin", async () => {
    const res = await call(`${ctx.url}/dashboard?site=site_1&period=30d`);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.headers["content-security-policy"]).toBe(DASHBOARD_CSP);
    expect(DASHBOARD_CSP).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    );
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(res.headers["cache-control"]).toBe("no-cache");
    const html = res.body.toString();
    expect(html).toContain('<script type="module" src="/dashboard/app.js"></script>');
    expect(html).toContain('<link rel="stylesheet" href="/dashboard/app.css">');
    expect(html).not.toMatch(/https?:\/\//);
  });

  it("serves the bundle with its type, an ETag, gzip, and 304 on a match", async () => {
    const js = await call(`${ctx.url}/dashboard/app.js`);
    expect(js.status).toBe(200);
    expect(js.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(js.body.toString()).toBe(files["app.js"]);
    expect(js.headers.etag).toMatch(/^"[\w-]{22}"$/);
    const css = await call(`${ctx.url}/dashboard/app.css`, {
      headers: { "accept-encoding": "gzip" },
    });
    expect(css.headers["content-type"]).toBe("text/css; charset=utf-8");
    expect(css.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(css.body).toString()).toBe(files["app.css"]);
    const again = await call(`${ctx.url}/dashboard/app.js`, {
      headers: { "if-none-match": js.headers.etag as string },
    });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
  });

  it("sends a browser from / to the page and answers API clients at / as before", async () => {
    const browser = await call(`${ctx.url}/`, {
      headers: { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" },
    });
    expect(browser.status).toBe(302);
    expect(browser.headers.location).toBe("/dashboard");
    const notFound = {
      ok: false,
      error: { code: "not_found", message: "no route for GET /" },
    };
    for (const accept of [undefined, "*/*", "application/json", "text/html;q=0"]) {
      const api = await call(`${ctx.url}/`, accept ? { headers: { accept } } : {});
      expect(api.status).toBe(404);
      expect(api.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(api.headers["content-security-policy"]).toBeUndefined();
      expect(JSON.parse(api.body.toString())).toEqual(notFound);
    }
  });

  it("serves /dashboard/ as /dashboard, keeping the view in its query", async () => {
    const res = await call(`${ctx.url}/dashboard/?site=site_1&period=7d`);
    expect(res.status).toBe(301);
    expect(res.headers.location).toBe("/dashboard?site=site_1&period=7d");
    const bare = await call(`${ctx.url}/dashboard/`);
    expect(bare.headers.location).toBe("/dashboard");
  });

  it("serves its own icon, named by the page", async () => {
    const page = await call(`${ctx.url}/dashboard`);
    expect(page.body.toString()).toContain(
      '<link rel="icon" href="/dashboard/favicon.svg" type="image/svg+xml">',
    );
    const icon = await call(`${ctx.url}/dashboard/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers["content-type"]).toBe("image/svg+xml");
    expect(icon.headers["content-security-policy"]).toBe(DASHBOARD_CSP);
    expect(icon.body.toString()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    const again = await call(`${ctx.url}/dashboard/favicon.svg`, {
      headers: { "if-none-match": icon.headers.etag as string },
    });
    expect(again.status).toBe(304);
  });

  it("answers other verbs with 405 and the REST envelope", async () => {
    const res = await call(`${ctx.url}/dashboard`, { method: "POST" });
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe("GET, HEAD");
    expect(JSON.parse(res.body.toString())).toEqual({
      ok: false,
      error: {
        code: "method_not_allowed",
        message: "POST is not allowed on /dashboard; use GET",
      },
    });
  });
});
