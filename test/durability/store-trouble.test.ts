/**
 * When the store fails or stalls, requests get 503 in bounded time, /readyz
 * turns 503, nothing acknowledged is lost, and service resumes by itself.
 */

import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { classifyErrors } from "../../src/store/mongo/errors.js";
import { checkWritablePrimary } from "../../src/store/mongo/mongo-store.js";
import type { Store } from "../../src/store/port.js";
import { STORE_UNAVAILABLE, validEvent, validPayment } from "../helpers/fixtures.js";
import { serverError } from "../helpers/mongo/driver-errors.js";
import { describeEachStore, freshStore } from "../helpers/stores.js";
import { postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

async function timed<T>(p: Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const v = await p;
  return [v, performance.now() - start];
}

describe("SQLite locked by another process", () => {
  // SQLite only: another process's write lock is SQLite's own trouble.
  const ctx = useTestServer({ env: { SQLITE_BUSY_TIMEOUT_MS: "300" } });

  it("answers 503 within a bounded time, turns /readyz 503, and resumes when the lock goes", async () => {
    const ok = await postJson(`${ctx.url}/api/v1/payments`, validPayment("pay_before"), {
      key: ctx.key,
    });
    expect(ok.status).toBe(200);

    // Another process (here: another connection) holds the write lock.
    const other = new Database(join(ctx.server.dir, "ingest.sqlite"));
    other.exec("BEGIN IMMEDIATE");
    try {
      const [payment, paymentMs] = await timed(
        postJson(`${ctx.url}/api/v1/payments`, validPayment("pay_locked"), { key: ctx.key }),
      );
      expect(payment.status).toBe(503);
      expect(payment.headers.get("retry-after")).toBe("2");
      expect(payment.body).toEqual(STORE_UNAVAILABLE);
      expect(paymentMs).toBeLessThan(2_000);

      const [event, eventMs] = await timed(
        postJson(`${ctx.url}/api/v1/events`, validEvent(ctx.siteId), { key: ctx.key }),
      );
      expect(event.status).toBe(503);
      expect((event.body as { error: { code: string } }).error.code).toBe("unavailable");
      expect(eventMs).toBeLessThan(2_000);

      const ready = await fetch(`${ctx.url}/readyz`);
      expect(ready.status).toBe(503);
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }

    expect((await fetch(`${ctx.url}/readyz`)).status).toBe(200);
    const again = await postJson(`${ctx.url}/api/v1/payments`, validPayment("pay_after"), {
      key: ctx.key,
    });
    expect(again.status).toBe(200);
    const event = await postJson(`${ctx.url}/api/v1/events`, validEvent(ctx.siteId), {
      key: ctx.key,
    });
    expect(event.status).toBe(204);
    expect(await ctx.store.getPayment(ctx.siteId, "pay_before")).toBeDefined();
    expect(await ctx.store.getPayment(ctx.siteId, "pay_after")).toBeDefined();
    expect(await ctx.store.getPayment(ctx.siteId, "pay_locked")).toBeUndefined();
  });
});

describeEachStore("MongoDB stalling: the driver's limits answer, not a parallel timer", (kind) => {
  /** How long a stalled call takes before the server gives up (maxTimeMS): longer than STORE_TIMEOUT_MS. */
  const DRIVER_MS = 700;
  const state = { stalled: false, writablePrimary: true };

  /**
   * Presents the SQLite store as MongoDB: while stalled, every call answers
   * only after DRIVER_MS, with the server's MaxTimeMSExpired (50), classified
   * by the adapter's classifier; `ping` is the adapter's readiness check.
   */
  function stalling(inner: Store): Store {
    const classified = classifyErrors({
      stall: async () => {
        await new Promise((r) => setTimeout(r, DRIVER_MS));
        throw serverError(50, "operation exceeded time limit");
      },
      ping: () =>
        checkWritablePrimary(
          { command: async () => ({ ok: 1, isWritablePrimary: state.writablePrimary }) } as never,
          300,
        ),
    });
    return new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === "kind") return "mongodb";
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== "function" || prop === "close") return value;
        return (...args: unknown[]) => {
          if (state.stalled) return classified.stall();
          if (prop === "ping") return classified.ping();
          return value.apply(target, args);
        };
      },
    });
  }

  const ctx = useTestServer(async () => ({
    store: await freshStore(kind),
    env: { STORE_TIMEOUT_MS: "300" },
    wrapStore: stalling,
  }));

  it("answers 503 when the driver gives up, never earlier, and recovers without a restart", async () => {
    state.stalled = true;
    const [payment, ms] = await timed(
      postJson(`${ctx.url}/api/v1/payments`, validPayment("pay_stalled"), { key: ctx.key }),
    );
    expect(payment.status).toBe(503);
    expect(payment.body).toEqual(STORE_UNAVAILABLE);
    // No 503 at STORE_TIMEOUT_MS while the write might still go on: the
    // answer waits for the driver's own verdict.
    expect(ms).toBeGreaterThanOrEqual(DRIVER_MS - 50);
    const [event] = await timed(
      postJson(`${ctx.url}/api/v1/events`, validEvent(ctx.siteId), { key: ctx.key }),
    );
    expect(event.status).toBe(503);
    expect((await fetch(`${ctx.url}/readyz`)).status).toBe(503);

    state.stalled = false;
    expect((await fetch(`${ctx.url}/readyz`)).status).toBe(200);
    const ok = await postJson(`${ctx.url}/api/v1/payments`, validPayment("pay_back"), {
      key: ctx.key,
    });
    expect(ok.status).toBe(200);
  });

  it("/readyz is 503 while no writable primary answers (hello), 200 again once one does", async () => {
    state.writablePrimary = false;
    const down = await fetch(`${ctx.url}/readyz`);
    expect(down.status).toBe(503);
    expect(await down.json()).toEqual({
      ok: false,
      error: { code: "unavailable", message: "the store cannot take writes" },
    });
    state.writablePrimary = true;
    expect((await fetch(`${ctx.url}/readyz`)).status).toBe(200);
  });
});

describe("SQLite that answers reads but cannot write (disk full, read-only)", () => {
  const ctx = useTestServer();

  it("turns /readyz 503 while writes fail and back to 200 by itself when they work again", async () => {
    expect((await fetch(`${ctx.url}/readyz`)).status).toBe(200);
    // Another connection makes every write of the probe and of events fail with SQLite's
    // disk-full message, while reads (key lookups, SELECT 1) keep working.
    const other = new Database(join(ctx.server.dir, "ingest.sqlite"));
    const full = "SELECT RAISE(FAIL, 'database or disk is full')";
    other.exec(`
      CREATE TRIGGER probe_full BEFORE UPDATE ON readiness_probe BEGIN ${full}; END;
      CREATE TRIGGER probe_full_insert BEFORE INSERT ON readiness_probe BEGIN ${full}; END;
      CREATE TRIGGER events_full BEFORE INSERT ON events BEGIN ${full}; END;`);
    try {
      const ready = await fetch(`${ctx.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.headers.get("retry-after")).toBe("2");
      expect(await ready.json()).toEqual({
        ok: false,
        error: { code: "unavailable", message: "the store cannot take writes" },
      });
      const event = await postJson(`${ctx.url}/api/v1/events`, validEvent(ctx.siteId), {
        key: ctx.key,
      });
      expect(event.status).toBe(503);
      // Still 503 on the next probe: nothing is cached as ready.
      expect((await fetch(`${ctx.url}/readyz`)).status).toBe(503);
    } finally {
      other.exec(
        "DROP TRIGGER probe_full; DROP TRIGGER probe_full_insert; DROP TRIGGER events_full;",
      );
      other.close();
    }
    expect((await fetch(`${ctx.url}/readyz`)).status).toBe(200);
    const event = await postJson(`${ctx.url}/api/v1/events`, validEvent(ctx.siteId), {
      key: ctx.key,
    });
    expect(event.status).toBe(204);
  });
});
