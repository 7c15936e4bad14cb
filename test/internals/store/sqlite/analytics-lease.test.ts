/**
 * The analytics file's owner lease (migration 24): one holder at a time,
 * renewed by it, taken over once it lapsed (judged with the injected clock)
 * or at once when its process on this host is gone, given up at a clean stop.
 */
import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AnalyticsLease,
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
  it("has one holder: the first to ask; the other takes it only once it lapsed, and the first then learns it lost it", () => {
    const t = setUp();
    const a = t.lease();
    const b = t.lease();
    const t0 = t.now();
    expect(a.acquire()).toBe(true);
    expect(b.acquire()).toBe(false);
    expect(a.read()).toEqual({ holder: a.holder, acquiredAt: t0, expiresAt: t0 + TTL });
    // Renewed a third of the lease later: the lapse moves with it.
    t.advance(TTL / 3);
    expect(a.renew()).toBe(true);
    expect(a.acquire()).toBe(true);
    t.advance(TTL - 1);
    expect(b.acquire()).toBe(false);
    expect(analyticsLeaseHeld(t.sqlitePath, t.now())).toBe(true);
    // Lapsed (the holder hangs): the other takes it, from that instant.
    t.advance(1);
    expect(analyticsLeaseHeld(t.sqlitePath, t.now())).toBe(false);
    expect(b.acquire()).toBe(true);
    expect(b.read()).toEqual({ holder: b.holder, acquiredAt: t.now(), expiresAt: t.now() + TTL });
    expect(a.renew()).toBe(false);
    expect(a.acquire()).toBe(false);
  });

  it("is free at once after a clean stop gives it up", () => {
    const t = setUp();
    const a = t.lease();
    const b = t.lease();
    expect(a.acquire()).toBe(true);
    b.release();
    expect(b.acquire()).toBe(false);
    a.release();
    expect(a.read()).toBeUndefined();
    expect(b.acquire()).toBe(true);
  });

  it("is taken over at once from a holder of this host whose process is gone, never from a live or remote one", () => {
    const t = setUp();
    const gone = spawnSync(process.execPath, ["-e", ""]).pid;
    const dead = t.lease(`${hostname()}:${gone}:1`);
    expect(dead.acquire()).toBe(true);
    const live = t.lease(`${hostname()}:${process.ppid}:2`);
    const remote = t.lease(`elsewhere.example:${gone}:3`);
    const b = t.lease();
    expect(b.acquire()).toBe(true);
    expect(b.read()?.holder).toBe(b.holder);
    // A live process of this host (this one's parent) keeps it.
    b.release();
    expect(live.acquire()).toBe(true);
    expect(b.acquire()).toBe(false);
    // Another host's holder is judged by the clock alone.
    live.release();
    expect(remote.acquire()).toBe(true);
    expect(b.acquire()).toBe(false);
    t.advance(TTL);
    expect(b.acquire()).toBe(true);
  });
});
