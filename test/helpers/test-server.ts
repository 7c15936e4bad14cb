/**
 * Starts the whole service on port 0 with a fresh SQLite file, for
 * integration tests that talk to it over real HTTP/1.1, HTTP/2 and gRPC.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type App, createApp } from "../../src/app.js";
import { type Config, loadConfig } from "../../src/config.js";
import { createAdmin } from "../../src/domain/admin.js";
import type { Clock } from "../../src/domain/clock.js";
import type { Observer } from "../../src/metrics/observer.js";
import type { ServiceDeps } from "../../src/services.js";
import type { EventRecord, Store } from "../../src/store/port.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { SyncFile } from "../../src/store/sqlite/wal-sync.js";
import type { StoreUnderTest } from "./stores.js";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

/**
 * The instant every test server's clock starts at unless a test sets another:
 * noon UTC, mid-week, mid-month, so that "an hour ago" and "a minute from now"
 * stay on the same UTC day and month whatever the wall clock says.
 */
export const TEST_NOW = Date.UTC(2026, 2, 11, 12, 0, 0);

/** A clock tests can set and move. */
export interface TestClock extends Clock {
  set(ms: number): void;
  advance(ms: number): void;
}

/** A clock that stands still at `start` until the test moves it. */
export function createTestClock(start = TEST_NOW): TestClock {
  let now = start;
  return {
    now: () => now,
    set: (ms) => {
      now = ms;
    },
    advance: (ms) => {
      now += ms;
    },
  };
}

export interface TestServer {
  app: App;
  /** The server's clock: the one passed in, or a TestClock standing at TEST_NOW. */
  clock: Clock;
  store: Store;
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  dir: string;
  admin: ReturnType<typeof createAdmin>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  /** Environment overrides, as the service would read them (e.g. INGEST_QUEUE_CAPACITY). */
  env?: Record<string, string>;
  /** Defaults to a TestClock at TEST_NOW: tests never depend on the wall clock. */
  clock?: Clock;
  /** Wraps the store, e.g. to slow it down or make it fail. */
  wrapStore?: (store: Store) => Store;
  /** What the app reports to (e.g. createMetrics() from src/metrics/metrics.ts). */
  metrics?: Observer;
  /** Receives the JSON log lines (set env LOG_LEVEL too). */
  logStream?: { write(line: string): void };
  /** Another store than the fresh SQLite file (test/helpers/stores.ts); closed with the server. */
  store?: StoreUnderTest;
  /** How the fresh SQLite store syncs its WAL after a write (to hold or fail it). */
  syncFile?: SyncFile;
  /** Where a MongoDB analytics feed reads (in-memory collections; see services.ts). */
  mongoFeedSource?: ServiceDeps["mongoFeedSource"];
  /** A MongoDB deployment's owner lease (on in-memory collections; see services.ts). */
  mongoLease?: ServiceDeps["mongoLease"];
  /** Wraps the DuckDB engine beneath its admission rules (e.g. to hold its fixed reports). */
  wrapAnalytics?: ServiceDeps["wrapAnalytics"];
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "ingest-test-"));
  const config: Config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    STORE_URL: `sqlite:${join(dir, "ingest.sqlite")}`,
    ADMIN_TOKEN,
    LOG_LEVEL: "silent",
    ...options.env,
  });
  const raw = options.store
    ? await options.store.open({ timeoutMs: config.storeTimeoutMs })
    : createSqliteStore(join(dir, "ingest.sqlite"), {
        busyTimeoutMs: config.sqliteBusyTimeoutMs,
        syncFile: options.syncFile,
      });
  const store = options.wrapStore ? options.wrapStore(raw) : raw;
  const clock = options.clock ?? createTestClock();
  const app = await createApp({
    config,
    store,
    clock,
    metrics: options.metrics,
    logStream: options.logStream,
    ...(options.mongoFeedSource ? { mongoFeedSource: options.mongoFeedSource } : {}),
    ...(options.mongoLease ? { mongoLease: options.mongoLease } : {}),
    ...(options.wrapAnalytics ? { wrapAnalytics: options.wrapAnalytics } : {}),
  });
  const port = await app.listen();
  return {
    app,
    clock,
    store: readingMovedEvents(store, app),
    url: `http://127.0.0.1:${port}`,
    port,
    dir,
    admin: createAdmin({ store, clock }),
    async close() {
      await app.close();
      await options.store?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The store as a test reads it back: with SQLite in a file the feed moves
 * events out of the store's outbox into the analytics file (migration 19),
 * so `listEvents` reads the engine (after the feed caught up), as ListEvents
 * does; everything else is the store's own.
 */
function readingMovedEvents(store: Store, app: App): Store {
  const analytics = app.analytics;
  if (!analytics || store.feedFile === undefined) return store;
  const listEvents: Store["listEvents"] = async (siteId, limit) => {
    const events: EventRecord[] = [];
    let before: number | undefined;
    do {
      const page = await analytics.engine.pageEvents(siteId, {
        from: 0,
        to: Number.MAX_SAFE_INTEGER,
        limit: Math.min(1000, limit - events.length),
        ...(before === undefined ? {} : { before }),
      });
      events.push(...page.events);
      before = page.next;
    } while (before !== undefined && events.length < limit);
    return events;
  };
  // A proxy, not a copy: a test that replaces one of the store's methods (to
  // make it fail) replaces the server's own.
  return new Proxy(store, {
    get: (target, prop) => (prop === "listEvents" ? listEvents : Reflect.get(target, prop, target)),
  });
}

export interface Tenant {
  accountId: string;
  ownerUserId: string;
  siteId: string;
  /** A key with both scopes. */
  key: string;
  keyId: string;
  hostnames: string[];
}

/**
 * Creates an account (Scale unless said otherwise, since only Scale may
 * create keys), a site and a key with both scopes, then moves the account to
 * `plan`.
 */
export async function createTenant(
  server: TestServer,
  options: { plan?: string; hostnames?: string[]; scopes?: string[] } = {},
): Promise<Tenant> {
  const hostnames = options.hostnames ?? ["example.com", "www.example.com"];
  const { accountId, ownerUserId } = await server.admin.createAccount({
    name: "Test account",
    plan: "scale",
    ownerEmail: `owner-${Math.random().toString(16).slice(2)}@example.com`,
  });
  const { siteId } = await server.admin.createSite({ accountId, hostnames });
  const { key, keyId } = await server.admin.createKey({
    siteId,
    name: "test key",
    scopes: options.scopes ?? ["events", "payments"],
    actorUserId: ownerUserId,
  });
  if (options.plan && options.plan !== "scale") {
    await server.admin.setPlan({ accountId, plan: options.plan });
  }
  return { accountId, ownerUserId, siteId, key, keyId, hostnames };
}

/** POSTs JSON (or a raw string) with a bearer key; returns status, headers and parsed body. */
export async function postJson(
  url: string,
  body: unknown,
  options: { key?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: unknown; text: string }> {
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      ...options.headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/**
 * Creates a Scale account, a site on example.com and a key with both scopes
 * directly in a SQLite file, before a server process opens it.
 */
export async function seedTenantFile(
  path: string,
): Promise<{ accountId: string; ownerUserId: string; siteId: string; key: string }> {
  return seedTenant(createSqliteStore(path));
}

/** The same in any store (closed afterwards). */
export async function seedTenant(
  store: Store,
): Promise<{ accountId: string; ownerUserId: string; siteId: string; key: string }> {
  try {
    const admin = createAdmin({ store, clock: createTestClock() });
    const { accountId, ownerUserId } = await admin.createAccount({
      name: "Seeded",
      plan: "scale",
      ownerEmail: `seed-${Math.random().toString(16).slice(2)}@example.com`,
    });
    const { siteId } = await admin.createSite({ accountId, hostnames: ["example.com"] });
    const { key } = await admin.createKey({
      siteId,
      name: "seeded key",
      scopes: ["events", "payments"],
      actorUserId: ownerUserId,
    });
    return { accountId, ownerUserId, siteId, key };
  } finally {
    await store.close();
  }
}
