/**
 * Who owns the analytics store, with MongoDB's lease at the driver boundary:
 * two servers (each its own analytics file, as on two hosts) share one
 * in-memory `analytics_lease` collection and the model server's clock; each
 * opens a real DuckDB file with the MongoDB feed over in-memory collections.
 * Turns are driven one at a time (`turn()`, what `start` runs every third of
 * the lease) with the clock moved between them, so no timer decides. Proven:
 * the first server owns, the other stands by and takes over only once the
 * lease lapsed; an owner whose renewals fail closes its file before its
 * lease can lapse, so at no turn do both own; a clean stop gives the lease
 * up at once.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AnalyticsOwnership,
  createAnalyticsOwnership,
} from "../../src/analytics-ownership.js";
import { createDuckDbAnalytics } from "../../src/store/duckdb/analytics-engine.js";
import { openAnalyticsStore } from "../../src/store/duckdb/analytics-store.js";
import { createMongoAnalyticsFeed } from "../../src/store/mongo/analytics-feed.js";
import { networkError } from "../helpers/mongo/driver-errors.js";
import { memoryDeployment } from "../helpers/mongo/memory-deployment.js";
import { useTempDirs } from "../helpers/temp-dirs.js";

const T0 = Date.UTC(2026, 2, 2, 10);
/** The lease: a turn every 100 ms of the clock (a renewal that hangs fails after 100 real ms). */
const LEASE_MS = 300;
const TURN = LEASE_MS / 3;
const tempDir = useTempDirs("ownership-");
const running: AnalyticsOwnership[] = [];
afterEach(async () => {
  for (const o of running.splice(0)) await o.close();
});

function deployment() {
  const { clock, leases, source, lease } = memoryDeployment(T0);
  /** Servers whose connection to the database is cut: each driver call of their lease fails. */
  const cut = new Set<string>();
  const leasesOf = (name: string) =>
    new Proxy(leases, {
      get(target, p, receiver) {
        const v = Reflect.get(target, p, receiver);
        if (typeof v !== "function") return v;
        return (...args: unknown[]) =>
          cut.has(name) ? Promise.reject(networkError()) : v.apply(target, args);
      },
    });
  const warnings: string[] = [];
  /** One server: its own directory, the deployment's collections and lease. */
  const server = async (name: string) => {
    const dir = tempDir();
    const o = await createAnalyticsOwnership({
      lease: lease({
        leases: leasesOf(name),
        ttlMs: LEASE_MS,
        holder: `${name}.example:1:${name}`,
      }),
      leaseMs: LEASE_MS,
      async open() {
        const store = await openAnalyticsStore({
          path: join(dir, "analytics.duckdb"),
          threads: 1,
          memoryLimit: "256MB",
        });
        const feed = createMongoAnalyticsFeed({
          source,
          analytics: store,
          intervalMs: 60_000,
        });
        const engine = createDuckDbAnalytics({ analytics: store, timeoutMs: 10_000, perSite: 2 });
        return { store, feed, engine };
      },
      compactIntervalMs: 3_600_000,
      now: () => clock.now,
      log: () => ({
        warn: (_fields, message) => warnings.push(message),
        info: () => {},
      }),
    });
    running.push(o);
    return o;
  };
  const owners = (...servers: AnalyticsOwnership[]) =>
    servers.map((s) => s.current() !== undefined);
  return { clock, leases, cut, server, owners, warnings };
}

describe("the analytics store's owner on a MongoDB deployment", () => {
  it("is the first server; the other stands by, and takes over once the owner stopped renewing and the lease lapsed", async () => {
    const d = deployment();
    const a = await d.server("a");
    const b = await d.server("b");
    expect(d.owners(a, b)).toEqual([true, false]);
    // Renewed every turn: the other never takes it.
    for (let i = 0; i < 6; i++) {
      d.clock.now += TURN;
      await a.turn();
      await b.turn();
      expect(d.owners(a, b)).toEqual([true, false]);
    }
    // The owner hangs (no turn): the lease lapses a whole lease after its last renewal.
    d.clock.now += LEASE_MS - 1;
    await b.turn();
    expect(d.owners(a, b)).toEqual([true, false]);
    d.clock.now += 1;
    await b.turn();
    expect(d.leases.docs[0]?.holder).toBe("b.example:1:b");
    // The old owner's next turn finds the lease gone: it closes its file.
    await a.turn();
    expect(d.owners(a, b)).toEqual([false, true]);
    expect(d.warnings).toContain(
      "the analytics store's lease lapsed and another server took it: closing the file here",
    );
  });

  it("closes its file when its renewals fail, before the lease can lapse, so that two servers never own at once", async () => {
    const d = deployment();
    const a = await d.server("a");
    const b = await d.server("b");
    const both: boolean[][] = [];
    const turn = async () => {
      d.clock.now += TURN;
      await a.turn();
      both.push(d.owners(a, b));
      await b.turn();
      both.push(d.owners(a, b));
    };
    // The owner's network to the primary is cut: every call of its lease fails.
    d.cut.add("a");
    await turn();
    // One failure: a lease's third left before the next renewal, it still owns.
    expect(d.owners(a, b)).toEqual([true, false]);
    await turn();
    // A second: the next renewal could come too late. It gave up, the lease still runs.
    expect(d.owners(a, b)).toEqual([false, false]);
    expect(d.warnings).toContain(
      "the analytics store's lease could not be renewed before it lapses: closing the file here",
    );
    await turn();
    // Lapsed: the other server takes it.
    expect(d.owners(a, b)).toEqual([false, true]);
    expect(both.some(([x, y]) => x && y)).toBe(false);
    expect(d.leases.docs[0]?.holder).toBe("b.example:1:b");
    // Back on the network, it stands by.
    d.cut.delete("a");
    await turn();
    expect(d.owners(a, b)).toEqual([false, true]);
  });

  it("counts a renewal that does not answer within a turn as failed", async () => {
    const d = deployment();
    const a = await d.server("a");
    const b = await d.server("b");
    const leases = d.leases as unknown as { updateOne: (...x: unknown[]) => Promise<unknown> };
    const answering = leases.updateOne.bind(d.leases);
    leases.updateOne = () => new Promise(() => {});
    d.clock.now += TURN;
    await a.turn();
    d.clock.now += TURN;
    await a.turn();
    expect(d.owners(a, b)).toEqual([false, false]);
    leases.updateOne = answering;
    // The lease is still this server's: it takes it again and reopens its file.
    await a.turn();
    expect(d.owners(a, b)).toEqual([true, false]);
  });

  it("gives the lease up at a clean stop: the other owns at its next turn, without waiting for a lapse", async () => {
    const d = deployment();
    const a = await d.server("a");
    const b = await d.server("b");
    await a.close();
    expect(d.leases.docs).toEqual([]);
    await b.turn();
    expect(d.owners(a, b)).toEqual([false, true]);
  });
});
