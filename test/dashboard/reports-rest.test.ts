/**
 * SiteOverview, CustomerJourney and GetAccess over REST (their
 * google.api.http GET rules, served by the reports door) through a listening
 * server: the same JSON as Connect, byte for byte; the same access rule
 * (ADMIN_TOKEN, or a reports key for its own site only) with the REST
 * envelope; the query checked with exact messages; 405 for other verbs.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { DEMO, seedDashboardDemo } from "../helpers/dashboard-data.js";
import { createTenant, createTestClock, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const clock = createTestClock(TEST_NOW);
const ctx = useTestServer({ clock });
const FROM = "2026-03-09T00:00:00Z";
const TO = "2026-03-12T00:00:00Z";

/** A REST GET: status, body text and the headers the tests read. */
async function get(path: string, authorization?: string, method = "GET") {
  const res = await fetch(`${ctx.url}${path}`, {
    method,
    headers: authorization === undefined ? {} : { authorization },
  });
  return {
    status: res.status,
    text: await res.text(),
    type: res.headers.get("content-type"),
    cache: res.headers.get("cache-control"),
    allow: res.headers.get("allow"),
  };
}

/** The same call over Connect's unary JSON protocol, as its body text. */
async function connect(method: string, body: unknown, authorization: string) {
  const res = await fetch(`${ctx.url}/ingest.v1.ReportsService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return res.text();
}

/** The REST error envelope a refusal must carry. */
const refusal = (code: string, message: string) =>
  JSON.stringify({ ok: false, error: { code, message } });

const overviewPath = (siteId: string, query = `from=${FROM}&to=${TO}`) =>
  `/api/v1/sites/${siteId}/overview${query ? `?${query}` : ""}`;

describe("ReportsService over REST", () => {
  const admin = () => ctx.adminHeaders.authorization;
  let reportsKey = "";

  beforeAll(async () => {
    await seedDashboardDemo({ url: ctx.url, siteId: ctx.siteId, key: ctx.key, clock });
    reportsKey = `Bearer ${await ctx.keyWith(["reports"])}`;
  });

  it("GET /api/v1/sites/{site_id}/overview answers the Connect JSON of SiteOverview, byte for byte", async () => {
    for (const auth of [admin(), reportsKey]) {
      const rest = await get(overviewPath(ctx.siteId), auth);
      expect(rest.status).toBe(200);
      expect(rest.type).toBe("application/json; charset=utf-8");
      expect(rest.cache).toBe("no-store");
      const rpc = await connect("SiteOverview", { siteId: ctx.siteId, from: FROM, to: TO }, auth);
      expect(rest.text).toBe(rpc);
      // The demo's numbers are there (the RPC's own test checks every one).
      const json = JSON.parse(rest.text) as { newVisitors: string; channels: unknown[] };
      expect(json.newVisitors).toBe("5");
      expect(json.channels).toHaveLength(5);
    }
  });

  it("GET .../customers/{customer_id}/journey and GET /api/v1/access answer as Connect does", async () => {
    const path = `/api/v1/sites/${ctx.siteId}/customers/${DEMO.googleCustomer}/journey`;
    const rest = await get(path, reportsKey);
    expect(rest.status).toBe(200);
    const rpc = await connect(
      "CustomerJourney",
      { siteId: ctx.siteId, customerId: DEMO.googleCustomer },
      reportsKey,
    );
    expect(rest.text).toBe(rpc);
    expect((JSON.parse(rest.text) as { payments: unknown[] }).payments).toHaveLength(3);

    const asKey = await get("/api/v1/access", reportsKey);
    expect(asKey.status).toBe(200);
    expect(asKey.text).toBe(await connect("GetAccess", {}, reportsKey));
    expect(JSON.parse(asKey.text)).toEqual({
      kind: "reports_key",
      siteId: ctx.siteId,
      hostnames: ["example.com", "www.example.com"],
    });
    const asAdmin = await get("/api/v1/access", admin());
    expect(asAdmin.text).toBe(await connect("GetAccess", {}, admin()));
    expect(JSON.parse(asAdmin.text)).toEqual({ kind: "admin_token" });
    // Naming a site: its host names, for the operator as for the site's own key.
    const named = await get(`/api/v1/access?site_id=${ctx.siteId}`, admin());
    expect(named.text).toBe(await connect("GetAccess", { siteId: ctx.siteId }, admin()));
    expect(JSON.parse(named.text)).toEqual({
      kind: "admin_token",
      hostnames: ["example.com", "www.example.com"],
    });
    const own = await get(`/api/v1/access?site_id=${ctx.siteId}`, reportsKey);
    expect(own.text).toBe(asKey.text);
  });

  it("refuses a missing or wrong token, an unknown key, write keys and another site's key, exactly", async () => {
    const other = await createTenant(ctx.server);
    const { key: otherReports } = await ctx.server.admin.createKey({
      siteId: other.siteId,
      name: "other reports",
      scopes: ["reports"],
      actorUserId: other.ownerUserId,
    });
    const eventsKey = `Bearer ${await ctx.keyWith(["events"])}`;
    const paymentsKey = `Bearer ${await ctx.keyWith(["payments"])}`;
    const unknownKey = `Bearer mk_live_${"0".repeat(48)}`;
    const badAdmin = refusal("unauthorized", "missing or invalid admin token");
    const journey = `/api/v1/sites/${ctx.siteId}/customers/${DEMO.googleCustomer}/journey`;
    const cases: [string, string | undefined, number, string][] = [
      [overviewPath(ctx.siteId), undefined, 401, badAdmin],
      [overviewPath(ctx.siteId), "Bearer not-the-admin-token", 401, badAdmin],
      ["/api/v1/access", "Basic YWRtaW46YWRtaW4=", 401, badAdmin],
      [
        overviewPath(ctx.siteId),
        unknownKey,
        401,
        refusal("unauthorized", "unknown or revoked API key"),
      ],
      [
        overviewPath(ctx.siteId),
        eventsKey,
        403,
        refusal("forbidden", "API key lacks the reports scope"),
      ],
      [journey, paymentsKey, 403, refusal("forbidden", "API key lacks the reports scope")],
      [
        `/api/v1/access?site_id=${other.siteId}`,
        reportsKey,
        403,
        refusal("forbidden", "api key does not belong to this site"),
      ],
      [
        "/api/v1/access?site_id=site_unknown",
        admin(),
        404,
        refusal("not_found", "site site_unknown not found"),
      ],
      [
        "/api/v1/access",
        // The tenant's key writes events and payments: not a reports key either.
        `Bearer ${ctx.key}`,
        403,
        refusal("forbidden", "API key lacks the reports scope"),
      ],
      [
        overviewPath(ctx.siteId),
        `Bearer ${otherReports}`,
        403,
        refusal("forbidden", "api key does not belong to this site"),
      ],
      [
        journey,
        `Bearer ${otherReports}`,
        403,
        refusal("forbidden", "api key does not belong to this site"),
      ],
    ];
    for (const [path, auth, status, body] of cases) {
      const res = await get(path, auth);
      expect({ path, auth, status: res.status, body: res.text }).toEqual({
        path,
        auth,
        status,
        body,
      });
    }
    // A refused token is refused before the query is read.
    const early = await get(overviewPath(ctx.siteId, "x=1"), undefined);
    expect([early.status, early.text]).toEqual([401, badAdmin]);
  });

  it("refuses a bad query, an unknown site or customer with exact 400s and 404s", async () => {
    const site = ctx.siteId;
    const cases: [string, number, string][] = [
      [overviewPath(site, ""), 400, refusal("invalid_input", "from: required")],
      [overviewPath(site, `from=${FROM}`), 400, refusal("invalid_input", "to: required")],
      [
        overviewPath(site, `from=yesterday&to=${TO}`),
        400,
        refusal("invalid_input", "from: must be RFC 3339, e.g. 2024-01-15T10:30:00Z"),
      ],
      [
        overviewPath(site, `from=${TO}&to=${FROM}`),
        400,
        refusal("invalid_input", "to: must be after from"),
      ],
      [
        overviewPath(site, `from=2025-01-01T00:00:00Z&to=2026-01-03T00:00:00Z`),
        400,
        refusal("invalid_input", "to: must be at most 366 days after from"),
      ],
      [
        overviewPath(site, `from=${FROM}&from=${FROM}&to=${TO}`),
        400,
        refusal("invalid_input", "from: must be given once"),
      ],
      [
        overviewPath(site, `from=${FROM}&to=${TO}&limit=5`),
        400,
        refusal("invalid_input", 'unknown query parameter "limit"'),
      ],
      [
        overviewPath(site, `from=${FROM}&to=${TO}&site_id=${site}`),
        400,
        refusal("invalid_input", 'unknown query parameter "site_id"'),
      ],
      ["/api/v1/access?site=x", 400, refusal("invalid_input", 'unknown query parameter "site"')],
      [
        `/api/v1/sites/${site}/customers/cus_demo_google/journey?from=${FROM}`,
        400,
        refusal("invalid_input", 'unknown query parameter "from"'),
      ],
      [overviewPath("site_nope"), 404, refusal("not_found", "site site_nope not found")],
      [
        `/api/v1/sites/${site}/customers/cus_nope/journey`,
        404,
        refusal("not_found", "customer cus_nope not found"),
      ],
    ];
    for (const [path, status, body] of cases) {
      const res = await get(path, ctx.adminHeaders.authorization);
      expect({ path, status: res.status, body: res.text }).toEqual({ path, status, body });
    }
  });

  it("answers other verbs with 405 and Allow: GET, HEAD, and HEAD like GET without a body", async () => {
    const path = overviewPath(ctx.siteId, "");
    const res = await get(path, ctx.adminHeaders.authorization, "POST");
    expect([res.status, res.allow, res.text]).toEqual([
      405,
      "GET, HEAD",
      refusal(
        "method_not_allowed",
        `POST is not allowed on /api/v1/sites/${ctx.siteId}/overview; use GET`,
      ),
    ]);
    const del = await get("/api/v1/access", ctx.adminHeaders.authorization, "DELETE");
    expect([del.status, del.allow]).toEqual([405, "GET, HEAD"]);
    const head = await get("/api/v1/access", ctx.adminHeaders.authorization, "HEAD");
    expect([head.status, head.text]).toEqual([200, ""]);
  });
});

describe("ReportsService over REST without ADMIN_TOKEN", () => {
  const bare = useTestServer({ env: { ADMIN_TOKEN: "" } });

  it("refuses any other bearer token as the RPC does, and still answers a reports key", async () => {
    const path = `/api/v1/sites/${bare.siteId}/overview?from=${FROM}&to=${TO}`;
    const res = await fetch(`${bare.url}${path}`, {
      headers: { authorization: "Bearer anything" },
    });
    expect([res.status, await res.text()]).toEqual([
      401,
      refusal("unauthorized", "admin API is disabled: ADMIN_TOKEN is not set"),
    ]);
    const key = await bare.keyWith(["reports"]);
    const ok = await fetch(`${bare.url}/api/v1/access`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect([ok.status, await ok.json()]).toEqual([
      200,
      { kind: "reports_key", siteId: bare.siteId, hostnames: bare.tenant.hostnames },
    ]);
  });
});
