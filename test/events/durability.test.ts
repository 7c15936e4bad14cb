/**
 * The real server as child processes on one SQLite file: every acknowledged
 * event survives a kill -9, the quota ceiling holds across processes, and
 * the servers of one data directory choose one owner of the analytics file
 * (the lease of migration 24): the first to start; the other takes over
 * when the owner dies or hangs past its lease.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createAdmin } from "../../src/domain/admin.js";
import { utcMonth } from "../../src/domain/plans.js";
import type { LeaseRow } from "../../src/domain/store/analytics-lease-port.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { type ChildServer, startChildServer } from "../helpers/child-server.js";
import { listEvents, pageview, presetUsage, sendEvents } from "../helpers/events.js";
import { ADMIN_TOKEN, createTestClock, postJson, TEST_NOW } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";

let dir: string;
let dbPath: string;
const children: ChildServer[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ingest-events-kill-"));
  dbPath = join(dir, "db.sqlite");
});
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.proc.exitCode === null && c.proc.signalCode === null) {
      c.proc.kill("SIGKILL");
      await c.exited;
    }
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An account, site and key in the database file, before any server opens it (child servers start at TEST_NOW). */
async function tenant(plan: "free" | "scale", usage?: number) {
  const store = createSqliteStore(dbPath);
  try {
    const admin = createAdmin({ store, clock: createTestClock() });
    const acc = await admin.createAccount({
      name: "Kill",
      plan: "scale",
      ownerEmail: `kill-${Math.random().toString(16).slice(2)}@example.com`,
    });
    const { siteId } = await admin.createSite({
      accountId: acc.accountId,
      hostnames: ["example.com"],
    });
    const { key } = await admin.createKey({
      siteId,
      name: "k",
      scopes: ["events"],
      actorUserId: acc.ownerUserId,
    });
    if (plan !== "scale") await admin.setPlan({ accountId: acc.accountId, plan });
    if (usage !== undefined) {
      await presetUsage(store, acc.accountId, utcMonth(TEST_NOW), usage);
    }
    return { accountId: acc.accountId, siteId, key };
  } finally {
    await store.close();
  }
}

/** The test's start on the monotonic clock: every child's clock starts where the first one's stands now. */
const origin = performance.now();

async function child(env: Record<string, string> = {}): Promise<ChildServer> {
  const c = await startChildServer({
    STORE_URL: `sqlite:${dbPath}`,
    ADMIN_TOKEN,
    INGEST_FLUSH_MS: "2",
    // One clock for the processes of the test, as for the processes of one machine.
    TEST_CLOCK_START_MS: String(TEST_NOW + Math.round(performance.now() - origin)),
    ...env,
  });
  children.push(c);
  const health = await fetch(`${c.url}/healthz`).catch(() => undefined);
  expect(health?.status, c.output()).toBe(200);
  return c;
}

describe("kill -9", () => {
  it("keeps every event acknowledged before the kill", { timeout: scaled(90_000) }, async () => {
    const t = await tenant("scale");
    const first = await child();

    const acked = new Set<number>();
    let seq = 0;
    let killed = false;
    const client = async () => {
      while (!killed) {
        const n = seq++;
        try {
          const res = await sendEvents(first.url, t, pageview(t.siteId, { p: { seq: n } }));
          if (res.status === 204) acked.add(n);
          else throw new Error(`unexpected ${res.status}: ${res.text}`);
        } catch (err) {
          if (killed) return;
          throw err;
        }
        if (acked.size >= 300 && !killed) {
          // Mid-stream: the other clients have requests in flight.
          killed = true;
          first.proc.kill("SIGKILL");
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, client));
    expect(await first.exited).toBe("SIGKILL");
    expect(acked.size).toBeGreaterThanOrEqual(300);

    const second = await child();
    const stored = await listEvents(second.url, t.siteId, 1000);
    const seqs = new Set(stored.map((e) => e.props?.seq as number));
    const lost = [...acked].filter((n) => !seqs.has(n));
    expect(lost).toEqual([]);
    // Stored events and the quota counter were written in the same transactions.
    const store = createSqliteStore(dbPath);
    try {
      expect(await store.getUsage(t.accountId, utcMonth(TEST_NOW))).toBe(stored.length);
    } finally {
      await store.close();
    }
  });
});

/** The analytics lease row as stored (migration 24). */
function leaseRow(): LeaseRow | undefined {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db
      .prepare(
        "SELECT holder, acquired_at AS acquiredAt, expires_at AS expiresAt FROM analytics_lease",
      )
      .get() as LeaseRow | undefined;
  } finally {
    db.close();
  }
}

/** The pid in a holder id (host:pid:random). */
const pidOf = (row: LeaseRow | undefined) => Number(row?.holder.split(":")[1]);

/** ListEvents' refusal by a server that does not own the analytics file. */
async function refusedAsNotOwner(url: string, siteId: string) {
  const err = await listEvents(url, siteId).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  expect((err as ConnectError).code).toBe(Code.Unavailable);
  expect((err as ConnectError).rawMessage).toBe("the analytics store is unavailable, retry later");
}

/** Waits, on the monotonic clock, until `check` holds (a lease turn is a third of the lease). */
async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined) {
  const deadline = performance.now() + scaled(30_000);
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** ListEvents of `url`, or undefined while it answers unavailable (not the owner yet). */
const listedBy = (url: string, siteId: string) =>
  listEvents(url, siteId, 1000).catch((err: unknown) => {
    if (err instanceof ConnectError && err.code === Code.Unavailable) return undefined;
    throw err;
  });

/** Pageviews of the site today, by Query (REST), with the admin token. */
async function pageviews(url: string, siteId: string) {
  const res = await postJson(
    `${url}/api/v1/sites/${siteId}/query`,
    { metrics: ["pageviews"], period: { from_day: "2026-03-11", to_day: "2026-03-11" } },
    { key: ADMIN_TOKEN },
  );
  expect(res.status, res.text).toBe(200);
  return (res.body as { totals: { count: string }[] }).totals[0]?.count;
}

describe("several processes", () => {
  it("never pass the ceiling together: 20 clients over two servers, 10 events left; the first server owns the analytics file", async () => {
    const t = await tenant("free", 10_990);
    const a = await child();
    const b = await child();
    expect(pidOf(leaseRow())).toBe(a.proc.pid);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        sendEvents((i % 2 ? a : b).url, t, pageview(t.siteId, { p: { i } })),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([...new Array(10).fill(204), ...new Array(10).fill(429)]);
    // The first to start owns the analytics file and serves every server's events;
    // the other answers unavailable (docs/operations.md).
    expect(await listEvents(a.url, t.siteId)).toHaveLength(10);
    await refusedAsNotOwner(b.url, t.siteId);
    const store = createSqliteStore(dbPath);
    try {
      expect(await store.getUsage(t.accountId, utcMonth(TEST_NOW))).toBe(11_000);
    } finally {
      await store.close();
    }
  });

  it("kill -9 of the owner: the other server takes the file over within the lease and answers every acknowledged event exactly once", {
    timeout: scaled(120_000),
  }, async () => {
    const LEASE = 3_000;
    const t = await tenant("scale");
    const a = await child({ ANALYTICS_LEASE_MS: String(LEASE) });
    const b = await child({ ANALYTICS_LEASE_MS: String(LEASE) });
    expect(pidOf(leaseRow())).toBe(a.proc.pid);
    await refusedAsNotOwner(b.url, t.siteId);

    const acked = new Set<number>();
    let seq = 0;
    let killed = false;
    let killedAt = Number.NaN;
    // Clients on both servers; the owner is killed mid-stream, the other keeps acknowledging.
    const client = (server: ChildServer) => async () => {
      for (;;) {
        if (server === a && killed) return;
        if (server === b && acked.size >= 600) return;
        const n = seq++;
        try {
          const res = await sendEvents(server.url, t, pageview(t.siteId, { p: { seq: n } }));
          if (res.status === 204) acked.add(n);
          else throw new Error(`unexpected ${res.status}: ${res.text}`);
        } catch (err) {
          if (server === a && killed) return;
          throw err;
        }
        if (acked.size >= 300 && !killed) {
          killed = true;
          killedAt = TEST_NOW + Math.round(performance.now() - origin);
          a.proc.kill("SIGKILL");
        }
      }
    };
    await Promise.all([
      ...Array.from({ length: 4 }, client(a)),
      ...Array.from({ length: 4 }, client(b)),
    ]);
    expect(await a.exited).toBe("SIGKILL");

    const stored = await until("the other server to own the analytics file", () =>
      listedBy(b.url, t.siteId),
    );
    const taken = leaseRow();
    expect(pidOf(taken)).toBe(b.proc.pid);
    // Taken within the lease of the kill (its process gone on this host: at its next turn).
    expect((taken?.acquiredAt ?? Number.NaN) - killedAt).toBeLessThanOrEqual(scaled(LEASE));
    const seqs = stored.map((e) => e.props?.seq as number);
    const lost = [...acked].filter((n) => !seqs.includes(n));
    expect(lost).toEqual([]);
    expect(seqs.length).toBe(new Set(seqs).size);
    expect(await pageviews(b.url, t.siteId)).toBe(String(stored.length));
    const store = createSqliteStore(dbPath);
    try {
      expect(await store.getUsage(t.accountId, utcMonth(TEST_NOW))).toBe(stored.length);
    } finally {
      await store.close();
    }
  });

  it("an owner that hangs past its lease loses the file: the other takes the lease once it lapsed, opens the file once the owner closed it, and serves", {
    timeout: scaled(120_000),
  }, async () => {
    const LEASE = 2_000;
    const t = await tenant("scale");
    const a = await child({ ANALYTICS_LEASE_MS: String(LEASE) });
    const b = await child({ ANALYTICS_LEASE_MS: String(LEASE) });
    for (let i = 0; i < 5; i++) {
      expect((await sendEvents(b.url, t, pageview(t.siteId, { p: { i } }))).status).toBe(204);
    }
    expect(await listEvents(a.url, t.siteId)).toHaveLength(5);
    a.proc.kill("SIGSTOP");
    try {
      const stopped = leaseRow();
      expect(pidOf(stopped)).toBe(a.proc.pid);
      // The hung owner's lease lapses, judged by the clock: only then is it taken.
      const taken = await until("the lease to be taken", () => {
        const row = leaseRow();
        return pidOf(row) === b.proc.pid ? row : undefined;
      });
      expect(taken.acquiredAt).toBeGreaterThanOrEqual(stopped?.expiresAt ?? Number.NaN);
      // The hung owner still has the file open: the new holder cannot open it yet.
      await refusedAsNotOwner(b.url, t.siteId);
    } finally {
      a.proc.kill("SIGCONT");
    }
    // The owner wakes, learns at its renewal that it lost the lease, and closes the file.
    const stored = await until("the new holder to serve", () => listedBy(b.url, t.siteId));
    expect(stored).toHaveLength(5);
    await refusedAsNotOwner(a.url, t.siteId);
    expect((await sendEvents(a.url, t, pageview(t.siteId, { p: { i: 5 } }))).status).toBe(204);
    expect(
      await until("the event sent to the old owner to be served", async () => {
        const n = await pageviews(b.url, t.siteId);
        return n === "6" ? n : undefined;
      }),
    ).toBe("6");
  });
});
