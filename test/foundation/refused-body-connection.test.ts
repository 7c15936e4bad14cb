/**
 * A body refused before it was read to its end (413 past a route's limit,
 * compressed or not) leaves no half-read keep-alive connection behind (issue
 * 31, defect 3): on every door that has a body limit, a raw socket sends
 * about 300 KB of gzip (the connectors door: 1.2 MB, past its 1 MB) with
 * keep-alive, reads the 413, and then finds that the answer said
 * `Connection: close` and the server closed the connection; the service
 * chose closing over draining, so a refused body is never read to its end.
 * A follow-up sent on that connection gets no answer, and a new connection
 * is answered at once. A body refused before it is read at all (401) closes
 * the same way.
 */
import { randomBytes } from "node:crypto";
import { gzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { openRawConnection } from "../helpers/raw-http1.js";
import { useTestServer } from "../helpers/use-test-server.js";

/** About 300 KB of gzip: random bytes do not compress. */
const GZIP_300KB = gzipSync(randomBytes(300 * 1024));
/** Past the connectors door's 1 MB limit. */
const PLAIN_1200KB = Buffer.alloc(1_200_000, "a");

describe("a refused body closes its connection", () => {
  const ctx = useTestServer();
  let connectorPath = "";

  beforeAll(async () => {
    const c = await ctx.server.admin.createConnector({
      siteId: ctx.tenant.siteId,
      provider: "stripe",
      secret: "whsec_refusedbodytestsecret",
      actorUserId: ctx.tenant.ownerUserId,
    });
    connectorPath = c.urlPath;
  });

  const doors = () => [
    {
      door: "REST events",
      path: "/api/v1/events",
      headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" },
      gzip: true,
      status: 413,
      error: {
        ok: false,
        error: { code: "invalid_input", message: "request body larger than 8 KB" },
      },
    },
    {
      door: "REST payments",
      path: "/api/v1/payments",
      headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" },
      gzip: true,
      status: 413,
      error: {
        ok: false,
        error: { code: "invalid_input", message: "request body larger than 64 KB" },
      },
    },
    {
      door: "collect",
      path: "/api/v1/collect",
      headers: { "content-type": "text/plain", origin: "https://example.com" },
      gzip: false,
      status: 413,
      error: {
        ok: false,
        error: { code: "invalid_input", message: "request body larger than 8 KB" },
      },
    },
    {
      door: "RPC (Connect JSON)",
      path: "/ingest.v1.EventsService/RecordEvents",
      headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" },
      gzip: true,
      // Connect's own status for invalid_argument; the REST status rides in the details.
      status: 400,
      error: expect.objectContaining({
        code: "invalid_argument",
        message: "request body larger than 8 KB",
      }),
    },
    {
      door: "connector webhook",
      path: connectorPath,
      headers: { "content-type": "application/json", "stripe-signature": "t=1,v1=00" },
      gzip: false,
      body: PLAIN_1200KB,
      status: 413,
      error: {
        ok: false,
        error: { code: "invalid_input", message: "request body larger than 1024 KB" },
      },
    },
    {
      // Refused before the body is read at all: the same.
      door: "REST events, unknown key",
      path: "/api/v1/events",
      headers: { authorization: "Bearer mk_live_unknown", "content-type": "application/json" },
      gzip: true,
      status: 401,
      error: { ok: false, error: { code: "unauthorized", message: "unknown or revoked API key" } },
    },
  ];

  it.each([
    "REST events",
    "REST payments",
    "collect",
    "RPC (Connect JSON)",
    "connector webhook",
    "REST events, unknown key",
  ])("%s: refused, Connection: close, and the server closes", async (name) => {
    const d = doors().find((x) => x.door === name);
    if (!d) throw new Error(`no door ${name}`);
    const body = d.body ?? (d.gzip ? GZIP_300KB : gzipAsPlain());
    const head = [
      `POST ${d.path} HTTP/1.1`,
      "host: localhost",
      "connection: keep-alive",
      `content-length: ${body.length}`,
      ...Object.entries(d.headers).map(([k, v]) => `${k}: ${v}`),
      ...(d.gzip ? ["content-encoding: gzip"] : []),
      "",
      "",
    ].join("\r\n");
    const conn = await openRawConnection(ctx.url);
    try {
      conn.write(head);
      conn.write(body);
      const refused = await conn.answer();
      expect({
        door: d.door,
        status: refused.status,
        connection: refused.headers.connection,
        error: JSON.parse(refused.body.toString()),
      }).toEqual({ door: d.door, status: d.status, connection: "close", error: d.error });
      conn.write("GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n");
      await conn.closed;
      expect(conn.isClosed()).toBe(true);
    } finally {
      conn.destroy();
    }
    // The server itself is fine: a new connection is answered.
    expect((await fetch(`${ctx.url}/healthz`)).status).toBe(200);
  });
});

/** The 300 KB of gzip sent as a plain body, for a door that takes no Content-Encoding. */
function gzipAsPlain(): Buffer {
  return GZIP_300KB;
}
