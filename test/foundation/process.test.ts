import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { startChildServer, waitForOutput } from "../helpers/child-server.js";
import { BROWSER_UA, validEvent, validPayment } from "../helpers/fixtures.js";
import { postJson, seedTenantFile } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";

let dir: string;
let storeUrl: string;
let key: string;
let siteId: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ingest-proc-"));
  const path = join(dir, "db.sqlite");
  storeUrl = `sqlite:${path}`;
  ({ key, siteId } = await seedTenantFile(path));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("configuration", () => {
  it.each([
    ["PORT", "abc", 'PORT must be an integer from 0 to 65535, got "abc"'],
    [
      "LOG_LEVEL",
      "loud",
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    ],
    [
      "STORE_URL",
      "postgres://x",
      "STORE_URL must be sqlite:<path> or mongodb://… / mongodb+srv://…, got an unsupported value",
    ],
    [
      "TRUST_PROXY",
      "everyone",
      'TRUST_PROXY must be false, true, a hop count or a comma-separated list of addresses/CIDRs, got "everyone"',
    ],
    [
      "INGEST_QUEUE_CAPACITY",
      "0",
      'INGEST_QUEUE_CAPACITY must be an integer from 1 to 10000000, got "0"',
    ],
    ["ADMIN_TOKEN", "short", "ADMIN_TOKEN must be at least 16 characters"],
  ])("stops start-up on an invalid %s with a one-line message", async (name, value, message) => {
    const child = await startChildServer(
      { STORE_URL: storeUrl, PORT: "1", [name]: value },
      { until: "exit" },
    );
    expect(await child.exited).toBe(2);
    expect(child.output()).toBe(`invalid configuration: ${message}\n`);
  });
});

describe("logs", () => {
  it("never contain a key, an Authorization header, a body or a client IP", async () => {
    const child = await startChildServer({ STORE_URL: storeUrl, LOG_LEVEL: "trace" });
    try {
      const marker = "body-marker-7f3a";
      await postJson(
        `${child.url}/api/v1/payments`,
        { ...validPayment(), metadata: { note: marker } },
        { key, headers: { "x-forwarded-for": "198.51.100.77" } },
      );
      await postJson(
        `${child.url}/api/v1/events`,
        { ...validEvent(siteId), t: marker },
        {
          key,
          headers: { "user-agent": BROWSER_UA },
        },
      );
      await postJson(`${child.url}/api/v1/events`, "{broken", { key });
      // A response can reach the client before its completion line reaches the
      // pipe: wait for the last request's (the 400), not a fixed while.
      await waitForOutput(child, /"statusCode":400[^\n]*"msg":"request completed"/);
      // The start-up line names the server's own address (127.0.0.1), not a client's: left out here.
      const logs = child
        .output()
        .split("\n")
        .filter((l) => !l.includes('"msg":"listening"'))
        .join("\n");
      expect(logs).toContain('"msg":"request completed"');
      expect(logs).toMatch(/"reqId":"[0-9a-f-]{36}"/);
      for (const secret of [
        key,
        key.slice(8),
        "authorization",
        marker,
        "127.0.0.1",
        "198.51.100.77",
        "203.0.113.9",
      ]) {
        expect(logs.toLowerCase()).not.toContain(secret.toLowerCase());
      }
    } finally {
      child.proc.kill("SIGTERM");
      await child.exited;
    }
  });
});

describe("graceful shutdown", () => {
  it("finishes in-flight requests on SIGTERM and exits 0", async () => {
    // A long flush window keeps the payment in flight when the signal arrives.
    const child = await startChildServer({ STORE_URL: storeUrl, INGEST_FLUSH_MS: "400" });
    const pending = postJson(`${child.url}/api/v1/payments`, validPayment("pay_inflight"), { key });
    await new Promise((r) => setTimeout(r, 100));
    child.proc.kill("SIGTERM");
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, data: { payment_id: "pay_inflight" } });
    expect(await child.exited).toBe(0);
    const store = createSqliteStore(storeUrl.slice("sqlite:".length));
    try {
      expect((await store.getPayment(siteId, "pay_inflight"))?.amountMinor).toBe(2999);
    } finally {
      await store.close();
    }
  });

  it("stops accepting new connections after SIGINT", async () => {
    const child = await startChildServer({ STORE_URL: storeUrl });
    child.proc.kill("SIGINT");
    expect(await child.exited).toBe(0);
    await expect(fetch(`${child.url}/healthz`)).rejects.toThrow();
  });
});

describe("WORKERS", () => {
  it("runs N server processes on one port and stops them all on SIGTERM", {
    timeout: scaled(90_000),
  }, async () => {
    const child = await startChildServer({ STORE_URL: storeUrl, WORKERS: "2", LOG_LEVEL: "info" });
    try {
      for (let i = 0; i < 20; i++) {
        const res = await postJson(`${child.url}/api/v1/payments`, validPayment(`pay_w${i}`), {
          key,
        });
        expect(res.status).toBe(200);
      }
      // Workers load TypeScript on start: slow on a busy machine.
      await waitForOutput(child, /"msg":"listening"/, 2);
      const pids = new Set(
        [...child.output().matchAll(/"pid":(\d+)[^\n]*"msg":"listening"/g)].map((m) => m[1]),
      );
      expect(pids.size).toBe(2);
      expect(pids.has(String(child.proc.pid))).toBe(false);
    } finally {
      child.proc.kill("SIGTERM");
    }
    expect(await child.exited).toBe(0);
  });
});
