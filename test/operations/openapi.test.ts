/**
 * The OpenAPI document: valid OpenAPI 3.1, served as committed, rendered at
 * /docs, and true to the server: the REST routes served are the ones it
 * documents, its examples are accepted, its body limits are the enforced
 * ones and its error examples follow the one error table.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { validate } from "@readme/openapi-parser";
import { describe, expect, it } from "vitest";
import { HTTP_ERRORS } from "../../src/edge/http-errors.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { ROOT } from "../helpers/rpc-clients.js";
import { postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

interface Operation {
  "x-body-limit-bytes"?: number;
  requestBody?: {
    content: {
      "application/json": { examples?: Record<string, { value: unknown }>; example?: unknown };
    };
  };
  responses: Record<
    string,
    { content?: Record<string, { examples?: Record<string, { value: unknown }> }> }
  >;
}
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>> };

const committed = JSON.parse(readFileSync(join(ROOT, "openapi", "openapi.json"), "utf8")) as Doc;

/** Every (METHOD, path) in Fastify's route tree (printRoutes with full segments). */
function servedRoutes(tree: string): [string, string][] {
  const out: [string, string][] = [];
  const stack: string[] = [];
  for (const line of tree.split("\n")) {
    const m = /^([│ ]*)[├└]── (\S*) \(([^)]+)\)$/.exec(line);
    if (!m) continue;
    const depth = (m[1] as string).length / 4;
    stack.length = depth;
    stack.push(m[2] as string);
    // Fastify's `:name` parameters are OpenAPI's `{name}`.
    const path = stack.join("").replace(/:(\w+)/g, "{$1}");
    for (const method of (m[3] as string).split(", ")) out.push([method, path]);
  }
  return out;
}

/** Routes the document is not about: RPC methods (POST /pkg.Service/Method) and Swagger UI's files. */
const isRpc = (path: string) => /^\/[a-z0-9_.]+\.[A-Z]\w*\/[A-Z]\w*$/.test(path);
const isUiAsset = (path: string) => path.startsWith("/docs/");
/**
 * The page's own routes: the front door (it sends a browser to the dashboard
 * and answers API clients 404, asserted below), `/dashboard/` and the icon
 * (test/dashboard/ covers them).
 */
const isFrontDoor = (path: string) => path === "/" || /^\/dashboard\/(favicon\.svg)?$/.test(path);

describe("OpenAPI document", () => {
  const ctx = useTestServer({ tenant: { hostnames: ["acme.test"] } });

  it("is valid OpenAPI 3.1", async () => {
    expect(committed.openapi).toBe("3.1.0");
    const result = await validate(structuredClone(committed) as never);
    expect(result.valid ? [] : result.errors).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("is served at /openapi.json as committed and rendered at /docs", async () => {
    const res = await fetch(`${ctx.url}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(await res.json()).toEqual(committed);

    const ui = await fetch(`${ctx.url}/docs`);
    expect(ui.status).toBe(200);
    expect(ui.headers.get("content-type")).toContain("text/html");
    expect(await ui.text()).toContain("swagger-ui");
    const init = await fetch(`${ctx.url}/docs/static/swagger-initializer.js`);
    expect(init.status).toBe(200);
    const uiDoc = await fetch(`${ctx.url}/docs/json`);
    expect(await uiDoc.json()).toEqual(committed);
  });

  it("documents every REST route the server serves, and serves every documented one", async () => {
    const served = servedRoutes(ctx.server.app.fastify.printRoutes({ commonPrefix: false }))
      .filter(
        ([method, path]) =>
          method !== "HEAD" && !isRpc(path) && !isUiAsset(path) && !isFrontDoor(path),
      )
      .map(([method, path]) => `${method} ${path}`);
    const documented = Object.entries(committed.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((verb) => `${verb.toUpperCase()} ${path}`),
    );
    // Other verbs on a documented path are there only to answer 405 with Allow.
    const extra = served.filter((r) => !documented.includes(r));
    for (const route of extra) {
      const [method, path] = route.split(" ") as [string, string];
      const res = await fetch(`${ctx.url}${path}`, { method });
      expect(res.status, route).toBe(405);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
        "method_not_allowed",
      );
    }
    expect(extra.length).toBeGreaterThan(0);
    const root = await fetch(`${ctx.url}/`, { headers: { accept: "application/json" } });
    expect(root.status).toBe(404);
    expect(((await root.json()) as { error: { code: string } }).error.code).toBe("not_found");
    expect([...documented].sort()).toEqual(served.filter((r) => documented.includes(r)).sort());
    expect(new Set(served)).toEqual(new Set([...documented, ...extra]));
  });

  it("has request examples the server accepts", async () => {
    for (const [path, ops] of Object.entries(committed.paths)) {
      const post = ops.post;
      // A templated path (a connector's) names no real resource to post to. The first
      // run's calls need the one-time token of a store with no account: they are
      // test/foundation/first-run.test.ts's.
      if (!post?.requestBody || path.includes("{") || path.startsWith("/dashboard/setup")) continue;
      const success = Object.keys(post.responses).find((s) => s.startsWith("2"));
      const json = post.requestBody.content["application/json"];
      const examples = json.examples ?? { example: { value: json.example } };
      for (const [name, example] of Object.entries(examples)) {
        // Examples name a placeholder site; this tenant's site stands in for it.
        const body = JSON.parse(JSON.stringify(example.value).replaceAll("site_123", ctx.siteId));
        // As a browser would send it (the collect endpoint drops library user agents as bots).
        const res = await postJson(`${ctx.url}${path}`, body, {
          key: ctx.key,
          headers: { "user-agent": BROWSER_UA },
        });
        expect(`${path} ${name}: ${res.status} ${res.text}`).toBe(
          `${path} ${name}: ${success} ${res.text}`,
        );
      }
    }
  });

  it("states the body limits the server enforces", async () => {
    const limits = Object.entries(committed.paths).flatMap(([path, ops]) =>
      ops.post?.["x-body-limit-bytes"] ? [[path, ops.post["x-body-limit-bytes"]] as const] : [],
    );
    expect(Object.fromEntries(limits)).toEqual({
      "/api/v1/collect": 8192,
      "/api/v1/events": 8192,
      "/api/v1/payments": 65536,
    });
    for (const [path, limit] of limits) {
      const over = JSON.stringify({ pad: "x".repeat(limit) });
      const res = await postJson(`${ctx.url}${path}`, over, { key: ctx.key });
      expect(res.status).toBe(413);
      expect(res.body).toEqual({
        ok: false,
        error: { code: "invalid_input", message: `request body larger than ${limit / 1024} KB` },
      });
    }
  });

  it("gives error examples whose status and code follow the error table", () => {
    let seen = 0;
    for (const ops of Object.values(committed.paths)) {
      for (const op of Object.values(ops)) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          const examples = response.content?.["application/json"]?.examples ?? {};
          for (const { value } of Object.values(examples)) {
            const { code } = (value as { error: { code: string } }).error;
            const allowed = Object.values(HTTP_ERRORS).filter((e) => e.status === Number(status));
            expect(
              allowed.map((e) => e.code),
              `${status} ${code}`,
            ).toContain(code);
            seen++;
          }
        }
      }
    }
    expect(seen).toBeGreaterThan(20);
  });
});
