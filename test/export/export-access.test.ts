/**
 * Who may export (issue 24): ADMIN_TOKEN for every site, or a site's reports
 * key for its own site only, the rule of ReportsService, the same over REST
 * (`GET /api/v1/export/{events,payments}`), Connect and gRPC, with the same
 * messages; a key of another site, a write key, an unknown or deleted key
 * are refused before anything is read.
 */
import type { ServiceError } from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { sendTagged } from "../helpers/events.js";
import { expectRefusals, type Refusal } from "../helpers/refusals.js";
import { describeRpcError, grpcJsClient, type Protocol } from "../helpers/rpc-clients.js";
import { payment, write } from "../helpers/store-contract.js";
import { createTenant, TEST_NOW, type Tenant } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();
const iso = (ms: number) => new Date(ms).toISOString();
const T = TEST_NOW - 86_400_000;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const RANGE = `from=${iso(T)}&to=${iso(TEST_NOW)}`;
const url = (kind: "events" | "payments") => (query: string) =>
  `${ctx.url}/api/v1/export/${kind}?${query}`;

const FOREIGN = "api key does not belong to this site";
const NO_SCOPE = "API key lacks the reports scope";
const UNKNOWN = "unknown or revoked API key";

describe("the exports' access", () => {
  let reportsKey: string;
  let other: Tenant;
  let otherReportsKey: string;
  let deletedKey: string;

  beforeAll(async () => {
    const create = async (siteId: string, ownerUserId: string, name: string) =>
      ctx.server.admin.createKey({ siteId, name, scopes: ["reports"], actorUserId: ownerUserId });
    reportsKey = (await create(ctx.siteId, ctx.tenant.ownerUserId, "export")).key;
    other = await createTenant(ctx.server);
    otherReportsKey = (await create(other.siteId, other.ownerUserId, "export")).key;
    const deleted = await create(ctx.siteId, ctx.tenant.ownerUserId, "gone");
    await ctx.server.admin.deleteKey({ keyId: deleted.keyId, actorUserId: ctx.tenant.ownerUserId });
    deletedKey = deleted.key;
    await sendTagged(ctx.url, ctx.tenant, [1], () => TEST_NOW - 60_000);
    await ctx.store.commitPayments([
      write(payment(ctx.siteId, "pay_1", { paidAt: T + 1000, createdAt: T, updatedAt: T })),
      write(payment(other.siteId, "pay_o", { paidAt: T + 1000, createdAt: T, updatedAt: T })),
    ]);
  });

  it.each(["events", "payments"] as const)(
    "gives a site's reports key the same %s export as ADMIN_TOKEN over REST",
    async (kind) => {
      const query = `site_id=${ctx.siteId}&${RANGE}`;
      const admin = await fetch(url(kind)(query), { headers: ctx.adminHeaders });
      const byKey = await fetch(url(kind)(query), { headers: bearer(reportsKey) });
      expect(byKey.status).toBe(200);
      expect(byKey.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8");
      const text = await byKey.text();
      expect(text).toBe(await admin.text());
      expect(JSON.parse(text)).toMatchObject(
        kind === "payments" ? { paymentId: "pay_1" } : { url: "https://example.com/1" },
      );
    },
  );

  it("gives a site's reports key its payments as CSV", async () => {
    const res = await fetch(url("payments")(`site_id=${ctx.siteId}&${RANGE}&format=csv`), {
      headers: bearer(reportsKey),
    });
    expect(res.status).toBe(200);
    expect((await res.text()).split("\r\n")[1]?.startsWith("pay_1,cus_1,charge,")).toBe(true);
  });

  it.each(["events", "payments"] as const)(
    "refuses other keys on the REST %s export with the RPC's messages in the envelope",
    async (kind) => {
      const site = `site_id=${ctx.siteId}&${RANGE}`;
      const cases: Refusal[] = [
        [site, bearer(otherReportsKey), 403, "forbidden", FOREIGN],
        [`site_id=${other.siteId}&${RANGE}`, bearer(reportsKey), 403, "forbidden", FOREIGN],
        ["site_id=site_nope", bearer(reportsKey), 403, "forbidden", FOREIGN],
        ["site_id=", bearer(reportsKey), 403, "forbidden", FOREIGN],
        [site, bearer(ctx.key), 403, "forbidden", NO_SCOPE],
        [site, bearer(deletedKey), 401, "unauthorized", UNKNOWN],
        [site, bearer(`mk_live_${"0".repeat(48)}`), 401, "unauthorized", UNKNOWN],
        [
          site,
          bearer("not-the-admin-token"),
          401,
          "unauthorized",
          "missing or invalid admin token",
        ],
        // A key with no single site_id learns only that the query is wrong.
        ["", bearer(reportsKey), 400, "invalid_input", "site_id: required"],
        [
          `${site}&site_id=x`,
          bearer(reportsKey),
          400,
          "invalid_input",
          "site_id: must be given once",
        ],
        [
          `${site}&format=xml`,
          bearer(reportsKey),
          400,
          "invalid_input",
          "format: must be ndjson or csv",
        ],
      ];
      await expectRefusals(url(kind), cases);
    },
  );

  /** Reads a whole export over RPC: the ids it gave, or its error. */
  async function exportOver(
    protocol: Protocol,
    kind: "events" | "payments",
    siteId: string,
    token: string,
  ) {
    const client = ctx.client(ReportsService, protocol);
    const req = { siteId, from: iso(T), to: iso(TEST_NOW) };
    const options = { headers: bearer(token) };
    try {
      const ids: string[] = [];
      if (kind === "payments") {
        for await (const m of client.exportPayments(req, options)) {
          ids.push(...m.payments.map((p) => p.paymentId));
        }
      } else {
        for await (const m of client.exportEvents(req, options)) {
          ids.push(...m.events.map((e) => e.url));
        }
      }
      return { ids };
    } catch (err) {
      return describeRpcError(err);
    }
  }

  it.each(["connect", "grpc"] as Protocol[])(
    "applies the same rule to ExportEvents and ExportPayments over %s",
    async (protocol) => {
      expect(await exportOver(protocol, "payments", ctx.siteId, reportsKey)).toEqual({
        ids: ["pay_1"],
      });
      expect(await exportOver(protocol, "events", ctx.siteId, reportsKey)).toEqual({
        ids: ["https://example.com/1"],
      });
      for (const kind of ["events", "payments"] as const) {
        expect(await exportOver(protocol, kind, other.siteId, reportsKey)).toEqual({
          code: "permission_denied",
          message: FOREIGN,
          reason: "forbidden",
        });
        expect(await exportOver(protocol, kind, ctx.siteId, ctx.key)).toEqual({
          code: "permission_denied",
          message: NO_SCOPE,
          reason: "forbidden",
        });
        expect(await exportOver(protocol, kind, ctx.siteId, deletedKey)).toEqual({
          code: "unauthenticated",
          message: UNKNOWN,
          reason: "unauthorized",
        });
      }
    },
  );

  it("applies the same rule to an independent grpc-js client's streams", async () => {
    const c = grpcJsClient("reports.proto", "ReportsService", ctx.server.port);
    const req = (site: string) => ({ site_id: site, from: iso(T), to: iso(TEST_NOW) });
    const read = (method: string, site: string, token: string) =>
      c
        .readStream<{ payments?: { payment_id: string }[]; events?: { url: string }[] }>(
          method,
          req(site),
          bearer(token),
        )
        .catch((e: ServiceError) => [e.code, e.details]);
    try {
      expect(await read("ExportPayments", ctx.siteId, reportsKey)).toMatchObject([
        { payments: [{ payment_id: "pay_1" }] },
      ]);
      expect(await read("ExportEvents", ctx.siteId, reportsKey)).toMatchObject([
        { events: [{ url: "https://example.com/1" }] },
      ]);
      expect(await read("ExportPayments", other.siteId, reportsKey)).toEqual([7, FOREIGN]);
      expect(await read("ExportEvents", ctx.siteId, ctx.key)).toEqual([7, NO_SCOPE]);
      expect(await read("ExportPayments", ctx.siteId, deletedKey)).toEqual([16, UNKNOWN]);
    } finally {
      c.close();
    }
  });

  /** Posts an ExportPayments Connect stream with no message at all; its status and end-of-stream envelope. */
  async function post(headers: Record<string, string>) {
    const res = await fetch(`${ctx.url}/ingest.v1.ReportsService/ExportPayments`, {
      method: "POST",
      headers: { "content-type": "application/connect+json", ...headers },
      body: new Uint8Array(),
    });
    const bytes = new Uint8Array(await res.arrayBuffer());
    // One envelope: a flags byte (2: end of stream), a 4-byte length, the JSON.
    return {
      status: res.status,
      flags: bytes[0],
      end: JSON.parse(new TextDecoder().decode(bytes.slice(5))),
    };
  }

  it("answers a streaming export without its one message as before, and refuses a key for it (no site)", async () => {
    expect(await post(ctx.adminHeaders)).toEqual({
      status: 200,
      flags: 2,
      end: {
        error: {
          code: "unimplemented",
          message: "protocol error: missing input message for server-streaming method",
        },
      },
    });
    const byKey = await post(bearer(reportsKey));
    expect(byKey.end.error).toMatchObject({ code: "permission_denied", message: FOREIGN });
  });
});
