/**
 * Two Authorization headers are refused as "missing or malformed API key" on
 * every protocol, even when the first holds a valid key: REST over HTTP/1.1
 * and h2c (curl), Connect, gRPC-Web and gRPC (buf curl), and the admin API.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { validEvent, validPayment } from "../helpers/fixtures.js";
import { PROTOCOLS, ROOT } from "../helpers/rpc-clients.js";
import { ADMIN_TOKEN, createTenant, type Tenant } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const run = promisify(execFile);
let other: Tenant;

const ctx = useTestServer();
beforeAll(async () => {
  other = await createTenant(ctx.server);
});

/** curl sends repeated -H headers as they are, over HTTP/1.1 or HTTP/2 (prior knowledge). */
async function curl(args: string[]): Promise<{ status: number; body: string }> {
  const { stdout } = await run("curl", ["-sS", "-o", "-", "-w", "\n%{http_code}", ...args]).catch(
    (e) => {
      throw new Error(`curl exit ${e.code}: ${e.stderr}`);
    },
  );
  const at = stdout.lastIndexOf("\n");
  return { status: Number(stdout.slice(at + 1)), body: stdout.slice(0, at) };
}

/** buf curl with the given headers; its error JSON (stderr) or output (stdout). */
async function bufCurl(protocol: string, path: string, headers: string[], data: unknown) {
  const args = ["curl", "--schema", ROOT, "--protocol", protocol];
  if (protocol === "grpc") args.push("--http2-prior-knowledge");
  for (const h of headers) args.push("-H", h);
  args.push("-d", JSON.stringify(data), `${ctx.url}${path}`);
  try {
    const { stdout } = await run(`${ROOT}/node_modules/.bin/buf`, args);
    return { ok: true, out: JSON.parse(stdout) as Record<string, unknown> };
  } catch (err) {
    return {
      ok: false,
      out: JSON.parse((err as { stderr: string }).stderr) as Record<string, unknown>,
    };
  }
}

const MISSING = {
  ok: false,
  error: { code: "unauthorized", message: "missing or malformed API key" },
};

describe("REST", () => {
  for (const http of ["--http1.1", "--http2-prior-knowledge"]) {
    it(`two bearer headers are 401 over ${http}, the valid key first or second`, async () => {
      for (const pair of [
        [ctx.key, other.key],
        [ctx.key, ctx.key],
        ["mk_live_x", ctx.key],
      ]) {
        const res = await curl([
          http,
          "-H",
          "Content-Type: application/json",
          "-H",
          `Authorization: Bearer ${pair[0]}`,
          "-H",
          `Authorization: Bearer ${pair[1]}`,
          "-d",
          // Over h2 the 401 comes before the body is read, and curl 7.88 reports the stream
          // reset that ends an unread upload (RST_STREAM NO_ERROR) as an error: send none.
          http === "--http1.1" ? JSON.stringify(validPayment("pay_dup")) : "",
          `${ctx.url}/api/v1/payments`,
        ]);
        expect(res.status).toBe(401);
        expect(JSON.parse(res.body)).toEqual(MISSING);
      }
      expect(await ctx.store.getPayment(ctx.siteId, "pay_dup")).toBeUndefined();
    });
  }

  it("one bearer header still works (control)", async () => {
    const res = await curl([
      "--http2-prior-knowledge",
      "-H",
      "Content-Type: application/json",
      "-H",
      `Authorization: Bearer ${ctx.key}`,
      "-d",
      JSON.stringify(validEvent(ctx.siteId)),
      `${ctx.url}/api/v1/events`,
    ]);
    expect(res.status).toBe(204);
  });
});

describe.each(PROTOCOLS)("%s (buf curl)", (protocol) => {
  it("two bearer headers are unauthenticated, missing or malformed API key", async () => {
    const res = await bufCurl(
      protocol,
      "/ingest.v1.PaymentsService/RecordPayment",
      [`Authorization: Bearer ${ctx.key}`, `Authorization: Bearer ${other.key}`],
      validPayment(`pay_dup_${protocol}`),
    );
    expect(res.ok).toBe(false);
    expect(res.out).toMatchObject({
      code: "unauthenticated",
      message: "missing or malformed API key",
    });
    expect(await ctx.store.getPayment(ctx.siteId, `pay_dup_${protocol}`)).toBeUndefined();
  });

  it("two admin tokens are refused by the admin API", async () => {
    const res = await bufCurl(
      protocol,
      "/ingest.v1.ReportsService/ListEvents",
      [`Authorization: Bearer ${ADMIN_TOKEN}`, `Authorization: Bearer ${ADMIN_TOKEN}`],
      { site_id: ctx.siteId, limit: 1 },
    );
    expect(res.out).toMatchObject({
      code: "unauthenticated",
      message: "missing or invalid admin token",
    });
  });
});
