/**
 * Each door is one encapsulated plugin: its hooks run on its own routes and
 * never on another door's (docs/architecture.md, "The request lifecycle, door
 * by door"). Read from Fastify's own route table with the hooks of each route.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** Every route (full path and methods) with the names of its hooks, by hook. */
interface RouteHooks {
  route: string;
  hooks: Record<string, string[]>;
}

/**
 * Parses `printRoutes({includeHooks: true, commonPrefix: false})`: a tree whose
 * nodes print their path segment at 4 columns per level, and their hooks below.
 */
function routeHooks(printed: string): RouteHooks[] {
  const routes: RouteHooks[] = [];
  const segments: string[] = [];
  for (const line of printed.split("\n")) {
    const hook = /• \((\w+)\) (\[.*\])$/.exec(line);
    if (hook) {
      const names = (JSON.parse(hook[2] as string) as string[]).map((n) => n.replace(/\(\)$/, ""));
      (routes.at(-1) as RouteHooks).hooks[hook[1] as string] = names;
      continue;
    }
    const node = /^([│├└─\s]*)(\S.*) \(([A-Z, ]+)\)$/.exec(line);
    if (!node) continue;
    const depth = Math.floor((node[1] as string).length / 4);
    segments.length = depth + 1;
    segments[depth] = node[2] as string;
    routes.push({ route: `${segments.join("")} (${node[3]})`, hooks: {} });
  }
  return routes;
}

describe("doors as encapsulated plugins", () => {
  let server: TestServer;
  let routes: RouteHooks[];

  beforeAll(async () => {
    server = await startTestServer();
    routes = routeHooks(
      server.app.fastify.printRoutes({ includeHooks: true, commonPrefix: false }),
    );
  });
  afterAll(() => server.close());

  const having = (hook: string, name: string) =>
    routes.filter((r) => r.hooks[hook]?.includes(name)).map((r) => r.route);

  it("reads every route it serves", () => {
    const all = routes.map((r) => r.route);
    expect(all).toContain("/api/v1/events (POST)");
    expect(all).toContain("/api/v1/collect (POST)");
    expect(all.some((r) => r.startsWith("/ingest.v1.EventsService/RecordEvents ("))).toBe(true);
    expect(routes.length).toBeGreaterThan(30);
  });

  it("runs the server's own hooks first on every route", () => {
    for (const { route, hooks } of routes) {
      expect(hooks.onRequest?.slice(0, 2), route).toEqual([
        "openRequest",
        "dropDuplicateCredentials",
      ]);
    }
  });

  it("runs the RPC body guard on the RPC door's routes only (API, health, reflection), on all of them", () => {
    const rpc = routes.filter((r) => /^\/(ingest\.v1|grpc)\./.test(r.route)).map((r) => r.route);
    expect(rpc.length).toBeGreaterThan(10);
    expect(having("onRequest", "refuseRpcVerbOrType").sort()).toEqual([...rpc].sort());
    expect(having("preParsing", "checkRpcBody").sort()).toEqual([...rpc].sort());
    expect(having("preValidation", "useDecodedJson").sort()).toEqual([...rpc].sort());
  });

  it("runs the REST door's decompression and authentication on its routes only", () => {
    const rest = having("preParsing", "decompressRestBody");
    expect(rest.every((r) => /^\/api\/v1\/(events|payments) /.test(r))).toBe(true);
    expect(having("onRequest", "authenticate").sort()).toEqual([
      "/api/v1/events (POST)",
      "/api/v1/payments (POST)",
    ]);
  });

  it("runs the collect door's CORS and rate limit on POST /api/v1/collect only", () => {
    expect(having("onRequest", "corsAndRateLimit")).toEqual(["/api/v1/collect (POST)"]);
  });
});
