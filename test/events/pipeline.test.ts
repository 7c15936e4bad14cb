/**
 * The ingest pipeline: group commit, acknowledgement after the durable write,
 * back pressure (503 when the queue is full) and store failures.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { EventGroup, Store } from "../../src/store/port.js";
import { batchOf, envelope, listEvents, pageview, sendEvents } from "../helpers/events.js";
import {
  createTenant,
  startTestServer,
  type Tenant,
  type TestServer,
} from "../helpers/test-server.js";

/** A store whose event writes wait for `open()` and are recorded. */
function gatedStore() {
  let release: () => void = () => {};
  let gate = Promise.resolve();
  const batches: EventGroup[][] = [];
  // Each request with countable events reads the quota counter just before it is queued.
  let usageReads = 0;
  let readsWanted = 0;
  let readsReached: () => void = () => {};
  let entered: () => void = () => {};
  let writing = new Promise<void>((r) => {
    entered = r;
  });
  return {
    batches,
    /** Makes the next writes wait until open() is called. */
    close() {
      gate = new Promise<void>((r) => {
        release = r;
      });
      writing = new Promise<void>((r) => {
        entered = r;
      });
    },
    open: () => release(),
    /** Resolves when a write has started (and is waiting on the gate). */
    writing: () => writing,
    /** Resolves once `n` requests in all have read the quota counter (and so are being queued). */
    usageReads: (n: number) =>
      new Promise<void>((r) => {
        readsWanted = n;
        readsReached = r;
        if (usageReads >= n) r();
      }),
    wrap: (store: Store): Store => ({
      ...store,
      async getUsage(accountId, month) {
        usageReads += 1;
        if (usageReads >= readsWanted) readsReached();
        return store.getUsage(accountId, month);
      },
      async commitEvents(groups) {
        batches.push(groups);
        entered();
        await gate;
        return store.commitEvents(groups);
      },
    }),
  };
}

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(env: Record<string, string>, wrapStore: (s: Store) => Store) {
  server = await startTestServer({ env, wrapStore });
  const tenant: Tenant = await createTenant(server);
  return { server, tenant };
}

const settled = async (p: Promise<unknown>, ms: number) =>
  Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), ms))]);

describe("back pressure", () => {
  it("answers 503 rate_limited with Retry-After: 2 at once when the queue is full", async () => {
    const gate = gatedStore();
    const { server, tenant } = await start({ INGEST_QUEUE_CAPACITY: "1" }, gate.wrap);
    gate.close();
    const first = sendEvents(server.url, tenant, pageview(tenant.siteId, { p: { n: "first" } }));
    await gate.writing();

    const started = performance.now();
    const full = await sendEvents(
      server.url,
      tenant,
      pageview(tenant.siteId, { p: { n: "second" } }),
    );
    expect(performance.now() - started).toBeLessThan(1000);
    expect(full.status).toBe(503);
    expect(full.headers.get("retry-after")).toBe("2");
    expect(full.body).toEqual(envelope("rate_limited", "ingest queue is full, retry later"));

    gate.open();
    expect((await first).status).toBe(204);
    expect((await listEvents(server.url, tenant.siteId)).map((e) => e.props?.n)).toEqual(["first"]);

    // Room again: the next request goes through.
    expect((await sendEvents(server.url, tenant, pageview(tenant.siteId))).status).toBe(204);
  });

  it("a request larger than the whole capacity still goes through an empty queue", async () => {
    const gate = gatedStore();
    const { server, tenant } = await start({ INGEST_QUEUE_CAPACITY: "10" }, gate.wrap);
    const res = await sendEvents(server.url, tenant, batchOf(tenant.siteId, 50));
    expect(res.status).toBe(204);
    expect(await listEvents(server.url, tenant.siteId)).toHaveLength(50);
  });

  it("answers 204 only once the event's batch is written", async () => {
    const gate = gatedStore();
    const { server, tenant } = await start({}, gate.wrap);
    gate.close();
    const pending = sendEvents(server.url, tenant, pageview(tenant.siteId));
    await gate.writing();
    expect(await settled(pending, 300)).toBe(false);
    expect(await listEvents(server.url, tenant.siteId)).toEqual([]);
    gate.open();
    expect((await pending).status).toBe(204);
    expect(await listEvents(server.url, tenant.siteId)).toHaveLength(1);
  });
});

describe("group commit", () => {
  it("writes many requests in one store write", async () => {
    const gate = gatedStore();
    // One batch at a time: the others gather behind the held one.
    const { server, tenant } = await start(
      { INGEST_FLUSH_MS: "5", INGEST_BATCHES_IN_FLIGHT: "1" },
      gate.wrap,
    );
    gate.close();
    // The first request's write is held; the others gather behind it.
    const first = sendEvents(server.url, tenant, pageview(tenant.siteId));
    await gate.writing();
    const rest = Array.from({ length: 29 }, (_, i) =>
      sendEvents(server.url, tenant, pageview(tenant.siteId, { p: { i } })),
    );
    // Every request has reached the queue (however slow the machine), plus a margin for enrichment.
    await gate.usageReads(30);
    await new Promise((r) => setTimeout(r, 100));
    gate.open();
    const results = await Promise.all([first, ...rest]);
    expect(results.every((r) => r.status === 204)).toBe(true);
    expect(gate.batches.flat()).toHaveLength(30);
    expect(gate.batches.length).toBeLessThan(30);
    expect(Math.max(...gate.batches.map((b) => b.length))).toBe(29);
    expect(await listEvents(server.url, tenant.siteId)).toHaveLength(30);
  });

  it("puts at most INGEST_BATCH_MAX requests in one write", async () => {
    const gate = gatedStore();
    const { server, tenant } = await start(
      { INGEST_BATCH_MAX: "4", INGEST_BATCHES_IN_FLIGHT: "1" },
      gate.wrap,
    );
    gate.close();
    const first = sendEvents(server.url, tenant, pageview(tenant.siteId));
    await gate.writing();
    const rest = Array.from({ length: 12 }, () =>
      sendEvents(server.url, tenant, pageview(tenant.siteId)),
    );
    await new Promise((r) => setTimeout(r, 200));
    gate.open();
    await Promise.all([first, ...rest]);
    expect(gate.batches.flat()).toHaveLength(13);
    expect(Math.max(...gate.batches.map((b) => b.length))).toBe(4);
  });
});

describe("store failures", () => {
  it("answer 503 unavailable and store nothing; the next request works", async () => {
    let fail = true;
    const { server, tenant } = await start({}, (store) => ({
      ...store,
      async commitEvents(groups) {
        if (fail) throw new Error("disk full");
        return store.commitEvents(groups);
      },
    }));
    const res = await sendEvents(server.url, tenant, pageview(tenant.siteId));
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(res.body).toEqual(envelope("unavailable", "the store is unavailable, retry later"));
    fail = false;
    expect((await sendEvents(server.url, tenant, pageview(tenant.siteId))).status).toBe(204);
    expect(await listEvents(server.url, tenant.siteId)).toHaveLength(1);
  });
});

describe("batches in flight", () => {
  it.each([
    ["sqlite", 2],
    ["mongodb", 1],
  ] as const)(
    "on a %s store with INGEST_BATCHES_IN_FLIGHT=4, %i of two batches start while the first is held",
    async (kind, expected) => {
      const gate = gatedStore();
      const { server, tenant } = await start({ INGEST_BATCHES_IN_FLIGHT: "4" }, (s) => ({
        ...gate.wrap(s),
        kind,
        // What each adapter declares (src/store/sqlite/sqlite-store.ts, src/store/mongo/mongo-store.ts).
        commitsInOrder: kind === "sqlite",
      }));
      gate.close();
      const first = sendEvents(server.url, tenant, pageview(tenant.siteId));
      await gate.writing();
      const second = sendEvents(server.url, tenant, pageview(tenant.siteId));
      // SQLite: the second batch starts (however slow the machine); MongoDB: it waits, however long.
      const deadline = Date.now() + 10_000;
      while (gate.batches.length < expected && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 5));
      }
      await new Promise((r) => setTimeout(r, 200));
      expect(gate.batches).toHaveLength(expected);
      gate.open();
      expect((await first).status).toBe(204);
      expect((await second).status).toBe(204);
      expect(gate.batches.flat()).toHaveLength(2);
    },
  );
});
