import type { ServiceError } from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { EventsService } from "../../gen/ingest/v1/events_pb.js";
import { PaymentsService } from "../../gen/ingest/v1/payments_pb.js";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { validEvent, validPayment } from "../helpers/fixtures.js";
import { grpcJsClient, rpcError } from "../helpers/rpc-clients.js";
import { createTenant, postJson, type Tenant } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
const PERIOD = { from: "2026-03-01T00:00:00Z", to: "2026-03-12T00:00:00Z" };

describe("a reports key", () => {
  let reportsKey: string;
  let other: Tenant;

  beforeAll(async () => {
    // Created through AdminService, as an operator would.
    const created = await ctx.client(AdminService).createKey(
      {
        siteId: ctx.siteId,
        name: "dashboard",
        scopes: ["reports"],
        actorUserId: ctx.tenant.ownerUserId,
      },
      { headers: ctx.adminHeaders },
    );
    reportsKey = created.key;
    other = await createTenant(ctx.server);
  });

  it("is stored with the reports scope only", async () => {
    const keys = await ctx
      .client(AdminService)
      .listKeys({ siteId: ctx.siteId }, { headers: ctx.adminHeaders });
    expect(keys.keys.find((k) => k.name === "dashboard")?.scopes).toEqual(["reports"]);
  });

  it("reads its own site's reports over Connect", async () => {
    const res = await ctx
      .client(ReportsService)
      .siteOverview({ siteId: ctx.siteId, ...PERIOD }, bearer(reportsKey));
    expect(res.days).toHaveLength(11);
  });

  it("is refused for another site with permission_denied", async () => {
    for (const call of [
      ctx
        .client(ReportsService)
        .siteOverview({ siteId: other.siteId, ...PERIOD }, bearer(reportsKey)),
      ctx.client(ReportsService).mrr({ siteId: other.siteId }, bearer(reportsKey)),
      ctx.client(ReportsService).getPayment({ siteId: "", paymentId: "x" }, bearer(reportsKey)),
    ]) {
      expect(await rpcError(call)).toEqual({
        code: "permission_denied",
        message: "api key does not belong to this site",
        reason: "forbidden",
      });
    }
  });

  it("never writes: both write doors answer the spec's missing-scope error", async () => {
    const payment = await postJson(`${ctx.url}/api/v1/payments`, validPayment(), {
      key: reportsKey,
    });
    expect([payment.status, payment.body]).toEqual([
      403,
      { ok: false, error: { code: "forbidden", message: "API key lacks the payments scope" } },
    ]);
    const events = await postJson(`${ctx.url}/api/v1/events`, validEvent(ctx.siteId), {
      key: reportsKey,
    });
    expect([events.status, events.body]).toEqual([
      403,
      { ok: false, error: { code: "forbidden", message: "API key lacks the events scope" } },
    ]);
    expect(
      await rpcError(ctx.client(PaymentsService).recordPayment(validPayment(), bearer(reportsKey))),
    ).toMatchObject({ code: "permission_denied", message: "API key lacks the payments scope" });
    expect(
      await rpcError(ctx.client(EventsService).recordEvents({ s: ctx.siteId }, bearer(reportsKey))),
    ).toMatchObject({ code: "permission_denied", message: "API key lacks the events scope" });
  });

  it("is not an admin credential: AdminService refuses it", async () => {
    expect(
      await rpcError(ctx.client(AdminService).listKeys({ siteId: ctx.siteId }, bearer(reportsKey))),
    ).toMatchObject({ code: "unauthenticated", message: "missing or invalid admin token" });
  });

  it("gets the same rules over grpc-js", async () => {
    const c = grpcJsClient("reports.proto", "ReportsService", ctx.server.port);
    try {
      const auth = { authorization: `Bearer ${reportsKey}` };
      const ok = await c.call<{ days: unknown[] }>(
        "SiteOverview",
        { site_id: ctx.siteId, ...PERIOD },
        auth,
      );
      expect(ok.days).toHaveLength(11);
      const err = (await c
        .call("SiteOverview", { site_id: other.siteId, ...PERIOD }, auth)
        .catch((e: ServiceError) => e)) as ServiceError;
      expect([err.code, err.details]).toEqual([7, "api key does not belong to this site"]);
    } finally {
      c.close();
    }
  });

  it("refuses write keys on ReportsService: they lack the reports scope", async () => {
    expect(
      await rpcError(ctx.client(ReportsService).mrr({ siteId: ctx.siteId }, bearer(ctx.key))),
    ).toEqual({
      code: "permission_denied",
      message: "API key lacks the reports scope",
      reason: "forbidden",
    });
  });

  it("stops working as soon as it is deleted", async () => {
    const { key, keyId } = await ctx.server.admin.createKey({
      siteId: ctx.siteId,
      name: "short-lived",
      scopes: ["reports"],
      actorUserId: ctx.tenant.ownerUserId,
    });
    await ctx.client(ReportsService).mrr({ siteId: ctx.siteId }, bearer(key));
    await ctx.server.admin.deleteKey({ keyId, actorUserId: ctx.tenant.ownerUserId });
    expect(
      await rpcError(ctx.client(ReportsService).mrr({ siteId: ctx.siteId }, bearer(key))),
    ).toEqual({
      code: "unauthenticated",
      message: "unknown or revoked API key",
      reason: "unauthorized",
    });
  });

  it("GetAccess tells a key's holder its site, and the operator that it reads every site", async () => {
    const reports = ctx.client(ReportsService);
    expect(await reports.getAccess({}, bearer(reportsKey))).toMatchObject({
      kind: "reports_key",
      siteId: ctx.siteId,
    });
    expect(await reports.getAccess({}, { headers: ctx.adminHeaders })).toMatchObject({
      kind: "admin_token",
      siteId: "",
    });
    // With a site: its host names; a key may name only its own site.
    expect(
      await reports.getAccess({ siteId: other.siteId }, { headers: ctx.adminHeaders }),
    ).toMatchObject({ kind: "admin_token", siteId: "", hostnames: other.hostnames });
    expect(await reports.getAccess({ siteId: ctx.siteId }, bearer(reportsKey))).toMatchObject({
      kind: "reports_key",
      siteId: ctx.siteId,
      hostnames: ["example.com", "www.example.com"],
    });
    expect(
      await rpcError(reports.getAccess({ siteId: other.siteId }, bearer(reportsKey))),
    ).toMatchObject({ code: "permission_denied", message: "api key does not belong to this site" });
    expect(await rpcError(reports.getAccess({}, bearer(ctx.key)))).toMatchObject({
      code: "permission_denied",
      message: "API key lacks the reports scope",
    });
    expect(await rpcError(reports.getAccess({}, bearer("not-the-token")))).toMatchObject({
      code: "unauthenticated",
      message: "missing or invalid admin token",
    });
  });

  it("leaves ADMIN_TOKEN reading every site", async () => {
    const res = await ctx
      .client(ReportsService)
      .mrr({ siteId: other.siteId }, { headers: ctx.adminHeaders });
    expect(res.rows).toEqual([]);
  });
});

describe("creating a reports key", () => {
  it("refuses to combine reports with a write scope", async () => {
    expect(
      await rpcError(
        ctx.client(AdminService).createKey(
          {
            siteId: ctx.siteId,
            name: "mixed",
            scopes: ["reports", "payments"],
            actorUserId: ctx.tenant.ownerUserId,
          },
          { headers: ctx.adminHeaders },
        ),
      ),
    ).toEqual({
      code: "invalid_argument",
      message: "the reports scope is read-only and cannot be combined with events or payments",
      reason: "invalid_input",
    });
  });

  it("names the three scopes when one is unknown", async () => {
    expect(
      await rpcError(
        ctx.client(AdminService).createKey(
          {
            siteId: ctx.siteId,
            name: "x",
            scopes: ["read"],
            actorUserId: ctx.tenant.ownerUserId,
          },
          { headers: ctx.adminHeaders },
        ),
      ),
    ).toMatchObject({
      code: "invalid_argument",
      message: "scopes must be events, payments or both, or reports",
    });
  });
});
