/**
 * Logs that help on a bad day, read from the real process's output: the error
 * code of a refused request, the real gRPC status (gRPC answers errors with
 * HTTP 200), and one warning per store outage plus one on recovery.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PaymentsService } from "../../gen/ingest/v1/payments_pb.js";
import { type ChildServer, startChildServer } from "../helpers/child-server.js";
import { validPayment } from "../helpers/fixtures.js";
import { rpcClient } from "../helpers/rpc-clients.js";
import { postJson, seedTenantFile } from "../helpers/test-server.js";

let dir: string;
let dbPath: string;
let key: string;
let child: ChildServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ingest-logs-"));
  dbPath = join(dir, "db.sqlite");
  ({ key } = await seedTenantFile(dbPath));
  child = await startChildServer({
    STORE_URL: `sqlite:${dbPath}`,
    LOG_LEVEL: "info",
    SQLITE_BUSY_TIMEOUT_MS: "100",
  });
});
afterAll(async () => {
  child.proc.kill("SIGTERM");
  await child.exited;
  rmSync(dir, { recursive: true, force: true });
});

/** The JSON log lines written so far. */
function logLines(): Record<string, unknown>[] {
  return child
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l));
}

/** Waits for the "request completed" line of the request with this id. */
async function completion(reqId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 100; i++) {
    const line = logLines().find((l) => l.reqId === reqId && l.msg === "request completed");
    if (line) return line;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no completion logged for ${reqId}:\n${child.output()}`);
}

describe("request logs", () => {
  it("carry the error code of a REST error", async () => {
    const res = await postJson(`${child.url}/api/v1/payments`, validPayment(), {
      key: `mk_live_${"0".repeat(48)}`,
      headers: { "x-request-id": "log-rest-401" },
    });
    expect(res.status).toBe(401);
    expect((await completion("log-rest-401")).res).toEqual({
      statusCode: 401,
      code: "unauthorized",
    });
  });

  it("carry the real gRPC status, code and reason of a gRPC error", async () => {
    const client = rpcClient(PaymentsService, child.url, "grpc");
    await expect(
      client.recordPayment(
        { paymentId: "p" },
        { headers: { authorization: `Bearer ${key}`, "x-request-id": "log-grpc-3" } },
      ),
    ).rejects.toThrow();
    expect((await completion("log-grpc-3")).res).toEqual({
      statusCode: 200,
      grpcStatus: 3,
      rpcCode: "invalid_argument",
      code: "invalid_input",
    });
  });

  it("carry the Connect code of a Connect error, without a gRPC status", async () => {
    const client = rpcClient(PaymentsService, child.url, "connect");
    await expect(
      client.recordPayment(validPayment() as never, {
        headers: { authorization: "Bearer nope", "x-request-id": "log-connect-16" },
      }),
    ).rejects.toThrow();
    expect((await completion("log-connect-16")).res).toEqual({
      statusCode: 401,
      rpcCode: "unauthenticated",
      code: "unauthorized",
    });
  });
});

describe("store outage", () => {
  it("is warned about once when it starts and once when the store answers again", async () => {
    const warnings = () =>
      logLines()
        .filter((l) => l.level === 40)
        .map((l) => ({ msg: l.msg, store: l.store }));
    expect(warnings()).toEqual([]);

    // Another process holds the write lock: every write fails after SQLITE_BUSY_TIMEOUT_MS.
    const other = new Database(dbPath);
    other.exec("BEGIN IMMEDIATE");
    try {
      for (let i = 0; i < 3; i++) {
        const res = await postJson(`${child.url}/api/v1/payments`, validPayment(`pay_out${i}`), {
          key,
        });
        expect(res.status).toBe(503);
      }
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    const ok = await postJson(`${child.url}/api/v1/payments`, validPayment("pay_back"), { key });
    expect(ok.status).toBe(200);

    // Log lines reach the pipe a little after the answers.
    for (let i = 0; i < 250 && warnings().length < 2; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(warnings()).toEqual([
      { msg: "store unavailable", store: "sqlite" },
      { msg: "store available again", store: "sqlite" },
    ]);
    const down = logLines().find((l) => l.msg === "store unavailable");
    expect(down?.err).toMatchObject({ type: "SqliteError" });
  });
});
