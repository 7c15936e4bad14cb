/**
 * The analytics file's owner lease (migration 24): one holder at a time,
 * renewed by it, taken over once it lapsed (judged with the injected clock)
 * or at once when its process on this host is gone, given up at a clean stop.
 */
import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnalyticsLease } from "../../../../src/domain/store/analytics-lease-port.js";
import {
  analyticsLeaseHeld,
  openAnalyticsLease,
} from "../../../../src/store/sqlite/analytics-lease.js";
import { openSqlite } from "../../../../src/store/sqlite/open-sqlite.js";
import { useTempDirs } from "../../../helpers/temp-dirs.js";

const tempDir = useTempDirs("analytics-lease-");
const opened: { close(): void }[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
});

const TTL = 15_000;

function setUp() {
  const sqlitePath = join(tempDir(), "ingest.sqlite");
  opened.push(openSqlite(sqlitePath));
  let now = 1_700_000_000_000;
  const lease = (holder?: string): AnalyticsLease => {
    const l = openAnalyticsLease({
      sqlitePath,
      ttlMs: TTL,
      now: () => now,
      busyTimeoutMs: 1_000,
      ...(holder ? { holder } : {}),
    });
    opened.push(l);
    return l;
  };
  return {
    sqlitePath,
    lease,
    advance: (ms: number) => {
      now += ms;
    },
    now: () => now,
  };
}

describe("the analytics owner's lease", () => {
  it("has one holder: the first to ask; the other takes it only once it lapsed, and the first then learns it lost it", async () => {
    const t = setUp();
    const a = t.lease();
    const b = t.lease();
    const t0 = t.now();
    expect(await a.acquire()).toBe(true);
    expect(await b.acquire()).toBe(false);
    expect(await a.read()).toEqual({ holder: a.holder, acquiredAt: t0, expiresAt: t0 + TTL });
    // Renewed a third of the lease later: the lapse moves with it.
    t.advance(TTL / 3);
    expect(await a.renew()).toBe(true);
    expect(await a.acquire()).toBe(true);
    t.advance(TTL - 1);
    expect(await b.acquire()).toBe(false);
    expect(analyticsLeaseHeld(t.sqlitePath, t.now())).toBe(true);
    // Lapsed (the holder hangs): the other takes it, from that instant.
    t.advance(1);
    expect(analyticsLeaseHeld(t.sqlitePath, t.now())).toBe(false);
    expect(await b.acquire()).toBe(true);
    expect(await b.read()).toEqual({
      holder: b.holder,
      acquiredAt: t.now(),
      expiresAt: t.now() + TTL,
    });
    expect(await a.renew()).toBe(false);
    expect(await a.acquire()).toBe(false);
  });

  it("is free at once after a clean stop gives it up", async () => {
    const t = setUp();
    const a = t.lease();
    const b = t.lease();
    expect(await a.acquire()).toBe(true);
    await b.release();
    expect(await b.acquire()).toBe(false);
    await a.release();
    expect(await a.read()).toBeUndefined();
    expect(await b.acquire()).toBe(true);
  });

  it("is taken over at once from a holder of this host whose process is gone, never from a live or remote one", async () => {
    const t = setUp();
    const gone = spawnSync(process.execPath, ["-e", ""]).pid;
    const dead = t.lease(`${hostname()}:${gone}:1`);
    expect(await dead.acquire()).toBe(true);
    const live = t.lease(`${hostname()}:${process.ppid}:2`);
    const remote = t.lease(`elsewhere.example:${gone}:3`);
    const b = t.lease();
    expect(await b.acquire()).toBe(true);
    expect((await b.read())?.holder).toBe(b.holder);
    // A live process of this host (this one's parent) keeps it.
    await b.release();
    expect(await live.acquire()).toBe(true);
    expect(await b.acquire()).toBe(false);
    // Another host's holder is judged by the clock alone.
    await live.release();
    expect(await remote.acquire()).toBe(true);
    expect(await b.acquire()).toBe(false);
    t.advance(TTL);
    expect(await b.acquire()).toBe(true);
  });
});
