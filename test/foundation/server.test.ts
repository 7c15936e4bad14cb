import { describe, expect, it } from "vitest";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import type { Store } from "../../src/store/port.js";
import { STORE_UNAVAILABLE, validEvent } from "../helpers/fixtures.js";
import { PROTOCOLS, rpcError } from "../helpers/rpc-clients.js";
import { ADMIN_TOKEN, createTenant, postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

/** A store whose failures a test can switch on. */
function faultyStore(inner: Store) {
  const state = { down: false, brokenKeys: false, garbage: false };
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === "ping" && state.down) return () => Promise.reject(new Error("down"));
      if (prop === "getSite" && state.down) return () => Promise.reject(new Error("secret detail"));
      // Down means every read fails, the directory version too (else cached sites would answer).
      if (prop === "directoryVersion" && state.down) return () => Promise.reject(new Error("down"));
      if (prop === "getPayment" && state.garbage) {
        // A programming error: a record that cannot be shown.
        return async () => ({ paymentId: "p", currency: "USD", amountMinor: "not a number" });
      }
      if (prop === "findKeyByHash" && state.brokenKeys) {
        // A programming error: a record without scopes.
        return async () => ({ id: "k", siteId: "s", accountId: "a" });
      }
      return Reflect.get(target, prop, receiver);
    },
  });
  return { store, state };
}

let faults: ReturnType<typeof faultyStore>["state"];

const ctx = useTestServer({
  wrapStore: (s) => {
    const f = faultyStore(s);
    faults = f.state;
    return f.store;
  },
});

describe("health", () => {
  it("answers /healthz", async () => {
    const res = await fetch(`${ctx.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, data: { status: "alive" } });
  });

  it("answers /readyz 200 while the store answers and 503 while it does not", async () => {
    const ok = await fetch(`${ctx.url}/readyz`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ ok: true, data: { status: "ready", store: "sqlite" } });
    faults.down = true;
    try {
      const down = await fetch(`${ctx.url}/readyz`);
      expect(down.status).toBe(503);
      expect(await down.json()).toEqual({
        ok: false,
        error: { code: "unavailable", message: "the store cannot take writes" },
      });
    } finally {
      faults.down = false;
    }
  });
});

describe("error envelope", () => {
  it("answers an unknown route with 404 not_found", async () => {
    const res = await fetch(`${ctx.url}/api/v2/payments`, { method: "POST" });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      ok: false,
      error: { code: "not_found", message: "no route for POST /api/v2/payments" },
    });
  });

  it("answers a wrong method with 405 and Allow", async () => {
    const res = await fetch(`${ctx.url}/api/v1/events`, { method: "GET" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    expect(await res.json()).toEqual({
      ok: false,
      error: {
        code: "method_not_allowed",
        message: "GET is not allowed on /api/v1/events; use POST",
      },
    });
  });

  it("refuses a body that is not JSON by its Content-Type with 415", async () => {
    const res = await postJson(`${ctx.url}/api/v1/payments`, "a=1", {
      key: ctx.key,
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(415);
    expect(res.body).toEqual({
      ok: false,
      error: { code: "invalid_input", message: "Content-Type must be application/json" },
    });
  });

  it("answers malformed JSON with invalid JSON and no echo of the body", async () => {
    const res = await postJson(`${ctx.url}/api/v1/payments`, '{"payment_id": "secret-abc",', {
      key: ctx.key,
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      ok: false,
      error: {
        code: "invalid_input",
        message: "invalid JSON: syntax error at position 28",
      },
    });
  });

  it("hides the cause of a 500 and shows no stack", async () => {
    // A new tenant: its key is not in the process's directory cache yet, so it is read.
    const fresh = await createTenant(ctx.server);
    faults.brokenKeys = true;
    try {
      const res = await postJson(`${ctx.url}/api/v1/payments`, {}, { key: fresh.key });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({
        ok: false,
        error: { code: "internal", message: "internal error" },
      });
    } finally {
      faults.brokenKeys = false;
    }
  });

  it("answers 503 unavailable when the store fails during authentication", async () => {
    const inner = ctx.store;
    // A new tenant: its key is not in the process's directory cache yet, so it is read.
    const fresh = await createTenant(ctx.server);
    const res = await (async () => {
      const original = inner.findKeyByHash;
      (inner as { findKeyByHash: Store["findKeyByHash"] }).findKeyByHash = () =>
        Promise.reject(new Error("connection refused"));
      try {
        return await postJson(`${ctx.url}/api/v1/payments`, {}, { key: fresh.key });
      } finally {
        (inner as { findKeyByHash: Store["findKeyByHash"] }).findKeyByHash = original;
      }
    })();
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(res.body).toEqual(STORE_UNAVAILABLE);
  });

  it("answers 503 unavailable when the directory version cannot be read, even for a cached key", async () => {
    const inner = ctx.store;
    const warm = await postJson(`${ctx.url}/api/v1/events`, validEvent(ctx.siteId), {
      key: ctx.key,
    });
    expect(warm.status).toBe(204);
    const original = inner.directoryVersion;
    (inner as { directoryVersion: Store["directoryVersion"] }).directoryVersion = () =>
      Promise.reject(new Error("connection refused"));
    let res: Awaited<ReturnType<typeof postJson>>;
    try {
      res = await postJson(`${ctx.url}/api/v1/events`, validEvent(ctx.siteId), { key: ctx.key });
    } finally {
      (inner as { directoryVersion: Store["directoryVersion"] }).directoryVersion = original;
    }
    expect(res.status).toBe(503);
    expect(res.body).toEqual(STORE_UNAVAILABLE);
  });

  it("hides internal RPC causes too", async () => {
    faults.garbage = true;
    try {
      const client = ctx.client(ReportsService);
      expect(
        await rpcError(
          client.getPayment({ siteId: ctx.siteId, paymentId: "p" }, { headers: ctx.adminHeaders }),
        ),
      ).toEqual({ code: "internal", message: "internal error", reason: "internal" });
    } finally {
      faults.garbage = false;
    }
  });

  it("answers unavailable over RPC when the store fails", async () => {
    faults.down = true;
    try {
      const client = ctx.client(ReportsService, "grpc");
      expect(
        await rpcError(client.listEvents({ siteId: ctx.siteId }, { headers: ctx.adminHeaders })),
      ).toEqual({
        code: "unavailable",
        message: "the store is unavailable, retry later",
        reason: "unavailable",
      });
    } finally {
      faults.down = false;
    }
  });

  it("echoes a safe X-Request-Id and makes one otherwise", async () => {
    const given = await fetch(`${ctx.url}/healthz`, { headers: { "x-request-id": "abc-123" } });
    expect(given.headers.get("x-request-id")).toBe("abc-123");
    const unsafe = await fetch(`${ctx.url}/healthz`, {
      headers: { "x-request-id": "bad id with spaces" },
    });
    expect(unsafe.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("AdminService token", () => {
  it.each(PROTOCOLS)("refuses a wrong token over %s", async (protocol) => {
    const client = ctx.client(AdminService, protocol);
    expect(
      await rpcError(
        client.getUsage(
          { accountId: ctx.tenant.accountId },
          { headers: { authorization: "Bearer wrong-token-0123456789" } },
        ),
      ),
    ).toEqual({
      code: "unauthenticated",
      message: "missing or invalid admin token",
      reason: "unauthorized",
    });
  });

  it("answers with the right token", async () => {
    const client = ctx.client(AdminService, "grpc");
    const usage = await client.getUsage(
      { accountId: ctx.tenant.accountId },
      { headers: ctx.adminHeaders },
    );
    expect(usage.plan).toBe("scale");
    expect(usage.allowance).toBe(10_000_000n);
    expect(usage.ceiling).toBe(20_000_000n);
  });

  it("creates accounts, sites and keys the same way the CLI does", async () => {
    const client = ctx.client(AdminService);
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const acc = await client.createAccount(
      { name: "Via RPC", plan: "starter", ownerEmail: "rpc@example.com" },
      { headers },
    );
    const site = await client.createSite(
      { accountId: acc.accountId, hostnames: ["rpc.example.com"] },
      { headers },
    );
    expect(
      await rpcError(
        client.createKey(
          { siteId: site.siteId, name: "k", scopes: ["events"], actorUserId: acc.ownerUserId },
          { headers },
        ),
      ),
    ).toEqual({
      code: "failed_precondition",
      message: `creating API keys requires the scale plan; account ${acc.accountId} is on the starter plan`,
      reason: "forbidden",
    });
    await client.setPlan({ accountId: acc.accountId, plan: "scale" }, { headers });
    const key = await client.createKey(
      { siteId: site.siteId, name: "k", scopes: ["events"], actorUserId: acc.ownerUserId },
      { headers },
    );
    expect(key.key).toMatch(/^mk_live_[0-9a-f]{48}$/);
    const listed = await client.listKeys({ siteId: site.siteId }, { headers });
    expect(listed.keys.map((k) => k.keyId)).toEqual([key.keyId]);
    expect(JSON.stringify(listed)).not.toContain(key.key);
  });
});

describe("AdminService without ADMIN_TOKEN", () => {
  const bare = useTestServer({ env: { ADMIN_TOKEN: "" }, tenant: false });

  it("refuses every call", async () => {
    const client = bare.client(AdminService);
    expect(
      await rpcError(
        client.getUsage({ accountId: "x" }, { headers: { authorization: "Bearer anything" } }),
      ),
    ).toEqual({
      code: "unauthenticated",
      message: "admin API is disabled: ADMIN_TOKEN is not set",
      reason: "unauthorized",
    });
  });
});

describe("wrong methods", () => {
  it.each(["PUT", "PATCH", "DELETE"])(
    "answers %s with a form body 405, not 415",
    async (method) => {
      const res = await fetch(`${ctx.url}/api/v1/payments`, {
        method,
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "a=1",
      });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(await res.json()).toEqual({
        ok: false,
        error: {
          code: "method_not_allowed",
          message: `${method} is not allowed on /api/v1/payments; use POST`,
        },
      });
    },
  );
});
