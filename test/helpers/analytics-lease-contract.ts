/**
 * The analytics owner lease's contract (src/domain/store/analytics-lease-port.ts),
 * asked of each adapter (SQLite's row, MongoDB's document): one holder at a
 * time, the first to ask; renewed by it; taken over once it lapsed by the
 * adapter's clock, or at once from a dead process of this host, never from a
 * live or remote one; given up at a clean stop. Each adapter's own test file
 * calls it beside the cases only that adapter has.
 */
import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { expect, it } from "vitest";
import type { AnalyticsLease } from "../../src/domain/store/analytics-lease-port.js";

/** One adapter's lease over a fresh store, with the clock its leases are judged by. */
export interface LeaseFixture {
  /** A lease of `holder` (default: this process's own holder id). */
  lease(holder?: string): AnalyticsLease;
  /** Moves the adapter's clock on. */
  advance(ms: number): void;
  now(): number;
}

/** Declares the contract's cases (inside the caller's describe) with leases of `ttlMs`. */
export function analyticsLeaseContract(setUp: () => LeaseFixture, ttlMs: number): void {
  it("has one holder: the first to ask; renewed, it lasts; lapsed, the other takes it and the first learns it lost it", async () => {
    const t = setUp();
    const a = t.lease();
    const b = t.lease();
    const t0 = t.now();
    expect(await a.acquire()).toBe(true);
    expect(await b.acquire()).toBe(false);
    expect(await a.read()).toEqual({ holder: a.holder, acquiredAt: t0, expiresAt: t0 + ttlMs });
    // Renewed a third of the lease later: the lapse moves with it.
    t.advance(ttlMs / 3);
    expect(await a.renew()).toBe(true);
    expect((await a.read())?.expiresAt).toBe(t.now() + ttlMs);
    expect(await a.acquire()).toBe(true);
    t.advance(ttlMs - 1);
    expect(await b.acquire()).toBe(false);
    // Lapsed (the holder hangs): the other takes it, from that instant.
    t.advance(1);
    expect(await b.acquire()).toBe(true);
    expect(await b.read()).toEqual({
      holder: b.holder,
      acquiredAt: t.now(),
      expiresAt: t.now() + ttlMs,
    });
    expect(await a.renew()).toBe(false);
    expect(await a.acquire()).toBe(false);
  });

  it("is free at once after a clean stop gives it up; a non-holder's give-up changes nothing", async () => {
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
    t.advance(ttlMs);
    expect(await b.acquire()).toBe(true);
  });
}
