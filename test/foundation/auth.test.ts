import { fromJson } from "@bufbuild/protobuf";
import type { ServiceError } from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import { EventsService } from "../../gen/ingest/v1/events_pb.js";
import { PaymentsService, RecordPaymentRequestSchema } from "../../gen/ingest/v1/payments_pb.js";
import { validEvent, validPayment } from "../helpers/fixtures.js";
import { bufCurl, grpcJsClient, PROTOCOLS, rpcError } from "../helpers/rpc-clients.js";
import { postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const UNKNOWN_KEY = `mk_live_${"ab".repeat(24)}`;

const ctx = useTestServer();
let eventsOnlyKey: string;
let paymentsOnlyKey: string;

beforeAll(async () => {
  eventsOnlyKey = await ctx.keyWith(["events"]);
  paymentsOnlyKey = await ctx.keyWith(["payments"]);
});

const ENDPOINTS = [
  { path: "/api/v1/payments", scope: "payments", body: () => validPayment() },
  { path: "/api/v1/events", scope: "events", body: () => validEvent(ctx.siteId) },
] as const;

describe.each(ENDPOINTS)("REST $path authentication", ({ path, scope, body }) => {
  const cases: [string, Record<string, string>, number, string, string][] = [
    ["no Authorization header", {}, 401, "unauthorized", "missing or malformed API key"],
    [
      "a Basic header",
      { authorization: "Basic dXNlcjpwYXNz" },
      401,
      "unauthorized",
      "missing or malformed API key",
    ],
    [
      "a key without the mk_live_ prefix",
      { authorization: "Bearer sk_live_abc" },
      401,
      "unauthorized",
      "missing or malformed API key",
    ],
    [
      "an empty bearer",
      { authorization: "Bearer " },
      401,
      "unauthorized",
      "missing or malformed API key",
    ],
    [
      "a key that never existed",
      { authorization: `Bearer ${UNKNOWN_KEY}` },
      401,
      "unauthorized",
      "unknown or revoked API key",
    ],
    [
      "a truncated key",
      { authorization: "Bearer mk_live_abc" },
      401,
      "unauthorized",
      "unknown or revoked API key",
    ],
  ];
  it.each(cases)("rejects %s", async (_name, headers, status, code, message) => {
    const res = await postJson(ctx.url + path, body(), { headers });
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ ok: false, error: { code, message } });
  });

  it("rejects a key without the endpoint's scope with 403", async () => {
    const key = scope === "events" ? paymentsOnlyKey : eventsOnlyKey;
    const res = await postJson(ctx.url + path, body(), { key });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      ok: false,
      error: { code: "forbidden", message: `API key lacks the ${scope} scope` },
    });
  });

  it("checks the key before the body size", async () => {
    const res = await postJson(ctx.url + path, "x".repeat(200 * 1024), {
      headers: { authorization: `Bearer ${UNKNOWN_KEY}` },
    });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      ok: false,
      error: { code: "unauthorized", message: "unknown or revoked API key" },
    });
  });
});

describe.each(PROTOCOLS)("%s authentication", (protocol) => {
  it("rejects a missing key as unauthenticated with the REST message", async () => {
    const client = ctx.client(PaymentsService, protocol);
    expect(
      await rpcError(client.recordPayment(fromJson(RecordPaymentRequestSchema, validPayment()))),
    ).toEqual({
      code: "unauthenticated",
      message: "missing or malformed API key",
      reason: "unauthorized",
    });
  });

  it("rejects an unknown key", async () => {
    const client = ctx.client(EventsService, protocol);
    const headers = { authorization: `Bearer ${UNKNOWN_KEY}` };
    expect(await rpcError(client.recordEvents({ s: ctx.siteId }, { headers }))).toEqual({
      code: "unauthenticated",
      message: "unknown or revoked API key",
      reason: "unauthorized",
    });
  });

  it("rejects a key without the scope as permission_denied", async () => {
    const client = ctx.client(EventsService, protocol);
    const headers = { authorization: `Bearer ${paymentsOnlyKey}` };
    expect(await rpcError(client.recordEvents({ s: ctx.siteId }, { headers }))).toEqual({
      code: "permission_denied",
      message: "API key lacks the events scope",
      reason: "forbidden",
    });
  });
});

describe("buf curl", () => {
  it.each(PROTOCOLS)("gets the 403 over %s", async (protocol) => {
    const res = await bufCurl(
      `${ctx.url}/ingest.v1.PaymentsService/RecordPayment`,
      validPayment(),
      { protocol, authorization: `Bearer ${eventsOnlyKey}` },
    );
    expect(res.exitCode).not.toBe(0);
    expect(res.output).toMatchObject({
      code: "permission_denied",
      message: "API key lacks the payments scope",
    });
  });
});

describe("grpc-js client", () => {
  it("gets UNAUTHENTICATED with the spec's message", async () => {
    const c = grpcJsClient("payments.proto", "PaymentsService", ctx.server.port);
    try {
      const err = (await c
        .call("RecordPayment", validPayment())
        .catch((e: ServiceError) => e)) as ServiceError;
      expect(err.code).toBe(16);
      expect(err.details).toBe("missing or malformed API key");
    } finally {
      c.close();
    }
  });

  it("gets PERMISSION_DENIED for a key without the scope", async () => {
    const c = grpcJsClient("events.proto", "EventsService", ctx.server.port);
    try {
      const err = (await c
        .call("RecordEvents", { s: ctx.siteId }, { authorization: `Bearer ${paymentsOnlyKey}` })
        .catch((e: ServiceError) => e)) as ServiceError;
      expect(err.code).toBe(7);
      expect(err.details).toBe("API key lacks the events scope");
    } finally {
      c.close();
    }
  });
});

describe("key deletion", () => {
  it("fails the very next request after the key is deleted", async () => {
    const { key, keyId } = await ctx.server.admin.createKey({
      siteId: ctx.siteId,
      name: "to delete",
      scopes: ["payments"],
      actorUserId: ctx.tenant.ownerUserId,
    });
    const before = await postJson(`${ctx.url}/api/v1/payments`, { bogus: 1 }, { key });
    expect(before.status).toBe(400);
    await ctx.server.admin.deleteKey({ keyId, actorUserId: ctx.tenant.ownerUserId });
    const after = await postJson(`${ctx.url}/api/v1/payments`, { bogus: 1 }, { key });
    expect(after.status).toBe(401);
    expect(after.body).toEqual({
      ok: false,
      error: { code: "unauthorized", message: "unknown or revoked API key" },
    });
    const rpc = ctx.client(PaymentsService, "grpc");
    expect(
      await rpcError(
        rpc.recordPayment(fromJson(RecordPaymentRequestSchema, validPayment()), {
          headers: { authorization: `Bearer ${key}` },
        }),
      ),
    ).toMatchObject({ code: "unauthenticated", message: "unknown or revoked API key" });
  });

  it("records when a key was last used", async () => {
    const { key, keyId } = await ctx.server.admin.createKey({
      siteId: ctx.siteId,
      name: "usage",
      scopes: ["payments"],
      actorUserId: ctx.tenant.ownerUserId,
    });
    expect((await ctx.store.getKey(keyId))?.lastUsedAt).toBeUndefined();
    await postJson(`${ctx.url}/api/v1/payments`, { bogus: 1 }, { key });
    await new Promise((r) => setTimeout(r, 50));
    expect((await ctx.store.getKey(keyId))?.lastUsedAt).toEqual(expect.any(Number));
  });
});
