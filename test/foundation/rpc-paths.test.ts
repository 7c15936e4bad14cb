/**
 * Every spelling of an RPC path gets that method's limits and checks (they
 * hang on the matched route, not the raw URL), and every answer on an RPC
 * path is a Connect or gRPC error: 405 with Allow, 415 with a body, never
 * the REST envelope. Probes refuse other methods with 405.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { EventsService, RecordEventsRequestSchema } from "../../gen/ingest/v1/events_pb.js";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { h2Request } from "../helpers/raw-h2.js";
import { frame, grpcWebTrailer, rawPost } from "../helpers/robustness.js";
import { grpcJsClient, rpcError } from "../helpers/rpc-clients.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();

/** Spellings of /ingest.v1.EventsService/RecordEvents that reach the same route. */
const SPELLINGS = [
  "/ingest.v1.EventsService/Record%45vents",
  "/ingest.v1.%45ventsService/RecordEvents",
  "/%69ngest.v1.EventsService/RecordEvents",
  "/ingest.v1.EventsService/RecordEvents?x=1",
];

/** An event whose URL makes the body about 30 KB, past the 8 KB limit. */
function bigEvent() {
  return {
    s: ctx.siteId,
    e: "pageview",
    u: `https://example.com/${"a".repeat(30_000)}`,
    ua: "Mozilla/5.0",
  };
}

async function eventCount(): Promise<number> {
  return (await ctx.store.listEvents(ctx.siteId, 1000)).length;
}

describe("encoded RPC paths keep their method's limits", () => {
  it.each(SPELLINGS)(
    "Connect JSON on %s: 30 KB is 400 invalid_argument, nothing stored",
    async (path) => {
      const before = await eventCount();
      const res = await fetch(ctx.url + path, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${ctx.key}` },
        body: JSON.stringify(bigEvent()),
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { code: string; message: string };
      expect(body.code).toBe("invalid_argument");
      expect(body.message).toBe("request body larger than 8 KB");
      expect(await eventCount()).toBe(before);
    },
  );

  it.each(SPELLINGS)(
    "Connect binary on %s: garbage is 400 invalid_argument, not 500",
    async (path) => {
      const res = await fetch(ctx.url + path, {
        method: "POST",
        headers: { "content-type": "application/proto", authorization: `Bearer ${ctx.key}` },
        body: new Uint8Array([0xff, 0xff, 0xff, 0xff]),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        code: "invalid_argument",
        message: "invalid protobuf: the body is not a ingest.v1.RecordEventsRequest",
      });
    },
  );

  it("gRPC-Web on an encoded path: 30 KB is invalid_argument in the trailers", async () => {
    const msg = toBinary(RecordEventsRequestSchema, create(RecordEventsRequestSchema, bigEvent()));
    const ans = await rawPost(
      `${ctx.url}${SPELLINGS[0]}`,
      { "content-type": "application/grpc-web+proto", authorization: `Bearer ${ctx.key}` },
      frame(msg),
    );
    expect(ans.status).toBe(200);
    const status = ans.headers["grpc-status"] ?? grpcWebTrailer(ans.bytes)?.["grpc-status"];
    const message = ans.headers["grpc-message"] ?? grpcWebTrailer(ans.bytes)?.["grpc-message"];
    expect(status).toBe("3");
    expect(decodeURIComponent(String(message))).toBe("request body larger than 8 KB");
  });

  it("gRPC on an encoded path: a malformed frame is invalid_argument, not internal", async () => {
    const ans = await h2Request(
      ctx.url,
      SPELLINGS[0] as string,
      { "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${ctx.key}` },
      frame(new Uint8Array([0xff, 0xff, 0xff])),
    );
    expect(ans.status).toBe(200);
    const status = ans.trailers["grpc-status"];
    expect(status).toBe("3");
    expect(
      decodeURIComponent(String(ans.headers["grpc-message"] ?? ans.trailers["grpc-message"])),
    ).toBe("invalid protobuf: the body is not a ingest.v1.RecordEventsRequest");
  });

  it("gRPC on an encoded path: 30 KB is invalid_argument", async () => {
    const msg = toBinary(RecordEventsRequestSchema, create(RecordEventsRequestSchema, bigEvent()));
    const ans = await h2Request(
      ctx.url,
      SPELLINGS[1] as string,
      { "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${ctx.key}` },
      frame(msg),
    );
    expect(ans.trailers["grpc-status"]).toBe("3");
    expect(
      decodeURIComponent(String(ans.headers["grpc-message"] ?? ans.trailers["grpc-message"])),
    ).toBe("request body larger than 8 KB");
  });
});

describe("encoded REST paths keep their route's limit", () => {
  it.each(["/api/v1/%65vents", "/api/v1/event%73", "/%61pi/v1/events"])(
    "%s: 30 KB is 413 with the envelope",
    async (path) => {
      const res = await fetch(ctx.url + path, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${ctx.key}` },
        body: JSON.stringify(bigEvent()),
      });
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual({
        ok: false,
        error: { code: "invalid_input", message: "request body larger than 8 KB" },
      });
    },
  );
});

describe("every answer on an RPC path is a Connect error", () => {
  const path = "/ingest.v1.EventsService/RecordEvents";

  it.each(["GET", "PUT", "DELETE", "PATCH"])(
    "%s gets 405, Allow: POST and a Connect error body",
    async (method) => {
      const res = await fetch(ctx.url + path, { method });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(await res.json()).toMatchObject({
        code: "not_found",
        message: `${method} is not allowed on ${path}; use POST`,
        details: [{ type: "google.rpc.ErrorInfo", debug: { reason: "method_not_allowed" } }],
      });
    },
  );

  it("GET on an encoded spelling gets the same 405", async () => {
    const res = await fetch(`${ctx.url}/ingest.v1.EventsService/Record%45vents`);
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
  });

  it.each([
    ["text/plain", "text/plain"],
    ["a form", "application/x-www-form-urlencoded"],
    ["Connect streaming on a unary method", "application/connect+json"],
  ])("%s gets 415 with a Connect error body", async (_name, type) => {
    const res = await fetch(ctx.url + path, {
      method: "POST",
      headers: { "content-type": type },
      body: "{}",
    });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({
      code: "invalid_argument",
      message:
        "Content-Type must be application/json, application/proto, application/grpc or application/grpc-web",
      details: [{ debug: { reason: "invalid_input", metadata: { http_status: "415" } } }],
    });
  });

  it("a missing Content-Type gets the Connect 415, not the REST envelope", async () => {
    const res = await fetch(ctx.url + path, { method: "POST", body: new Uint8Array([1, 2]) });
    expect(res.status).toBe(415);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).not.toHaveProperty("ok");
    expect(body.code).toBe("invalid_argument");
  });

  it("side-effect-free methods take Connect GET, and say so in Allow", async () => {
    const client = createClient(
      ReportsService,
      createConnectTransport({ baseUrl: ctx.url, httpVersion: "1.1", useHttpGet: true }),
    );
    const res = await client.listEvents(
      { siteId: ctx.siteId, limit: 1 },
      { headers: ctx.adminHeaders },
    );
    expect(res.events).toEqual([]);
    const put = await fetch(`${ctx.url}/ingest.v1.ReportsService/ListEvents`, { method: "PUT" });
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("GET, POST");
    expect(((await put.json()) as { message: string }).message).toBe(
      "PUT is not allowed on /ingest.v1.ReportsService/ListEvents; use GET or POST",
    );
  });

  it("connect-es clients still work on the canonical path", async () => {
    const client = ctx.client(EventsService);
    const err = await rpcError(client.recordEvents({ s: ctx.siteId, e: "pageview" }));
    expect(err).toEqual({
      code: "unauthenticated",
      message: "missing or malformed API key",
      reason: "unauthorized",
    });
  });
});

describe("an RPC path that names no method is unimplemented, in the caller's protocol", () => {
  const path = "/ingest.v1.EventsService/Nope";
  const message = "unknown method Nope for service ingest.v1.EventsService";

  it("Connect JSON: 501 (Connect's status for unimplemented) with a Connect error body", async () => {
    const res = await fetch(ctx.url + path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(501);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await res.json()) as { code: string; message: string };
    expect({ code: body.code, message: body.message }).toEqual({ code: "unimplemented", message });
  });

  it("gRPC-Web: 200 with grpc-status 12 (unimplemented)", async () => {
    const res = await fetch(`${ctx.url}/ingest.v1.NoSuchService/Record`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: frame(new Uint8Array()),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("grpc-status")).toBe("12");
    expect(decodeURIComponent(res.headers.get("grpc-message") ?? "")).toBe(
      "unknown method Record for service ingest.v1.NoSuchService",
    );
  });

  it("gRPC through an independent grpc-js client: status 12 UNIMPLEMENTED", async () => {
    const client = new grpc.Client(
      `127.0.0.1:${ctx.server.port}`,
      grpc.credentials.createInsecure(),
    );
    try {
      const err = await new Promise<grpc.ServiceError>((resolve, reject) => {
        client.makeUnaryRequest(
          path,
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.alloc(0),
          (e) => (e ? resolve(e) : reject(new Error("the call succeeded"))),
        );
      });
      expect({ code: err.code, details: err.details }).toEqual({ code: 12, details: message });
      expect(err.details).toBe(message);
    } finally {
      client.close();
    }
  });

  it("grpc-js reads errors the body guard answers (a 30 KB event) as INVALID_ARGUMENT", async () => {
    const events = grpcJsClient("events.proto", "EventsService", ctx.server.port);
    try {
      const err = (await events
        .call("RecordEvents", bigEvent(), { authorization: `Bearer ${ctx.key}` })
        .then(
          () => undefined,
          (e: grpc.ServiceError) => e,
        )) as grpc.ServiceError | undefined;
      expect({ code: err?.code, details: err?.details }).toEqual({
        code: grpc.status.INVALID_ARGUMENT,
        details: "request body larger than 8 KB",
      });
    } finally {
      events.close();
    }
  });

  it("REST paths keep the REST 404", async () => {
    const res = await fetch(`${ctx.url}/api/v1/nope`, { method: "POST" });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      ok: false,
      error: { code: "not_found", message: "no route for POST /api/v1/nope" },
    });
  });
});

describe("probes", () => {
  it.each(["/healthz", "/readyz"])("POST %s gets 405 with Allow: GET, HEAD", async (path) => {
    const res = await fetch(ctx.url + path, { method: "POST" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD");
    expect(await res.json()).toEqual({
      ok: false,
      error: { code: "method_not_allowed", message: `POST is not allowed on ${path}; use GET` },
    });
  });
});
