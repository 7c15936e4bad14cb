/**
 * ReportsService.Query and Funnel end to end: a small hand-made journey sent
 * through the HTTP API, the analytics feed drained on an explicit signal
 * (`feed.runOnce()` resolves once everything committed is applied), then the
 * same questions over REST (POST /api/v1/sites/{site_id}/query and /funnel),
 * Connect, gRPC-Web, gRPC, grpc-js and `buf curl`, with exact answers and
 * the same access rule as the other reports.
 */
import { toJson } from "@bufbuild/protobuf";
import { beforeAll, describe, expect, it } from "vitest";
import { QueryResponseSchema, ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import {
  JOURNEY_QUERY_ANSWER as ANSWER,
  count,
  JOURNEY_FUNNEL as FUNNEL,
  JOURNEY_FUNNEL_ANSWER as FUNNEL_ANSWER,
  JOURNEY_QUERY as QUERY,
  sendJourney,
  usd,
} from "../helpers/query-journey.js";
import { bufCurl, grpcJsClient, PROTOCOLS, rpcError } from "../helpers/rpc-clients.js";
import { createTenant, postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();

/** A Query answer's body over REST. */
const answer = (res: { body: unknown }) => res.body as { rows: unknown[]; totals: unknown[] };

function post(path: string, body: unknown, key: string) {
  return postJson(`${ctx.url}/api/v1/sites/${ctx.siteId}/${path}`, body, { key });
}

describe("ReportsService.Query and Funnel", () => {
  let reportsKey: string;

  beforeAll(async () => {
    reportsKey = await ctx.keyWith(["reports"]);
    await sendJourney(ctx.url, ctx.siteId, ctx.key, { eur: true });
    // The explicit freshness signal: resolves once the feed has applied every committed write.
    await ctx.server.app.analytics?.feed.runOnce();
  });

  it("answers over REST with a reports key: rows, totals and the resolved period", async () => {
    const res = await post("query", QUERY, reportsKey);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.body).toEqual(ANSWER);
  });

  it("answers the same over Connect, gRPC-Web and gRPC", async () => {
    for (const protocol of PROTOCOLS) {
      const res = await ctx.client(ReportsService, protocol).query(
        {
          siteId: ctx.siteId,
          metrics: QUERY.metrics,
          dimensions: QUERY.dimensions,
          period: { fromDay: "2026-03-11", toDay: "2026-03-11" },
          currency: "USD",
          orderBy: [{ field: "net_revenue", desc: true }],
        },
        { headers: { authorization: `Bearer ${reportsKey}` } },
      );
      expect(toJson(QueryResponseSchema, res), protocol).toEqual(ANSWER);
    }
  });

  it("answers the same over grpc-js and buf curl", async () => {
    const c = grpcJsClient("reports.proto", "ReportsService", ctx.server.port);
    try {
      const res = await c.call<{ totals: unknown[] }>(
        "Query",
        { ...QUERY, site_id: ctx.siteId },
        { authorization: `Bearer ${reportsKey}` },
      );
      expect(res.totals).toEqual([
        { count: "2" },
        { count: "3" },
        { count: "4" },
        { number: 66.67 },
        { money: { currency: "USD", minor_units: "2499", decimal: "24.99" } },
      ]);
    } finally {
      c.client.close();
    }
    const curl = await bufCurl(
      `${ctx.url}/ingest.v1.ReportsService/Query`,
      { ...QUERY, site_id: ctx.siteId },
      { protocol: "grpc", authorization: `Bearer ${reportsKey}` },
    );
    expect(curl.exitCode, curl.stderr).toBe(0);
    expect(curl.output).toEqual(ANSWER);
  });

  it("answers a funnel: visitors per step, conversion and median time between steps", async () => {
    const res = await post("funnel", FUNNEL, reportsKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(FUNNEL_ANSWER);
  });

  it("answers by currency without a currency (each row in its own, no total across them), by customer and by days to first payment", async () => {
    const day = { from_day: "2026-03-11", to_day: "2026-03-11" };
    const byCurrency = await post(
      "query",
      { metrics: ["payments", "net_revenue"], dimensions: ["currency"], period: day },
      reportsKey,
    );
    expect(byCurrency.status).toBe(200);
    expect(answer(byCurrency).rows).toEqual([
      {
        dimensions: ["EUR"],
        metrics: [count(1), { money: { currency: "EUR", minorUnits: "1000", decimal: "10.00" } }],
      },
      { dimensions: ["USD"], metrics: [count(1), usd(2499, "24.99")] },
    ]);
    // Amounts are never added across currencies: the total of net revenue is unset.
    expect(answer(byCurrency).totals).toEqual([count(2), {}]);
    const byCustomer = await post(
      "query",
      { metrics: ["net_revenue"], dimensions: ["customer"], period: day, currency: "USD" },
      reportsKey,
    );
    expect(answer(byCustomer).rows).toEqual([
      { dimensions: ["cus_a"], metrics: [usd(2499, "24.99")] },
    ]);
    // cus_a paid 20 minutes after its first visit, cus_b (EUR) 47 minutes after: both day "0".
    const days = await post(
      "query",
      {
        metrics: ["paying_customers"],
        dimensions: ["days_to_first_payment"],
        period: day,
        currency: "EUR",
      },
      reportsKey,
    );
    expect(answer(days).rows).toEqual([{ dimensions: ["0"], metrics: [count(1)] }]);
    expect(
      await post(
        "query",
        { metrics: ["visitors", "payments"], dimensions: ["customer"], period: day },
        reportsKey,
      ),
    ).toMatchObject({
      status: 400,
      body: {
        ok: false,
        error: {
          code: "invalid_input",
          message:
            'dimensions: "customer" describes payments only: it cannot be asked with the traffic metric "visitors"',
        },
      },
    });
    // Without the currency dimension, amounts still need a currency.
    expect(
      await post(
        "query",
        { metrics: ["net_revenue"], dimensions: ["customer"], period: day },
        reportsKey,
      ),
    ).toMatchObject({
      status: 400,
      body: { error: { message: "currency: required with revenue metrics" } },
    });
  });

  it("refuses a bad request with 400 invalid_input naming what is wrong, on every door", async () => {
    const bad = { ...QUERY, metrics: ["visitors", "sessions"] };
    expect(await post("query", bad, reportsKey)).toMatchObject({
      status: 400,
      body: {
        ok: false,
        error: { code: "invalid_input", message: 'metrics: unknown metric "sessions"' },
      },
    });
    expect(await post("query", { ...QUERY, metric: ["visitors"] }, reportsKey)).toMatchObject({
      status: 400,
      body: { ok: false, error: { code: "invalid_input" } },
    });
    expect(
      await rpcError(
        ctx.client(ReportsService).query(
          {
            siteId: ctx.siteId,
            metrics: ["net_revenue"],
            period: { fromDay: "2026-03-11", toDay: "2026-03-11" },
          },
          { headers: { authorization: `Bearer ${reportsKey}` } },
        ),
      ),
    ).toEqual({
      code: "invalid_argument",
      message: "currency: required with revenue metrics",
      reason: "invalid_input",
    });
  });

  it("keeps the reports' access rule: no key 401, another site's key 403, a write key 403", async () => {
    const none = await postJson(`${ctx.url}/api/v1/sites/${ctx.siteId}/query`, QUERY);
    expect(none.status).toBe(401);
    const other = await createTenant(ctx.server);
    const foreign = await post("query", QUERY, other.key);
    expect(foreign.status).toBe(403);
    const write = await post("query", QUERY, ctx.key);
    expect(write.status).toBe(403);
    const admin = await postJson(`${ctx.url}/api/v1/sites/${ctx.siteId}/query`, QUERY, {
      headers: ctx.adminHeaders,
    });
    expect(admin.body).toEqual(ANSWER);
  });

  it("answers 405 with Allow: POST to another verb", async () => {
    const res = await fetch(`${ctx.url}/api/v1/sites/${ctx.siteId}/query`, {
      headers: { authorization: `Bearer ${reportsKey}` },
    });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
  });
});
