/**
 * The cluster side of the collect rate limit: the client key (IPv6 by /64)
 * and the worker side of the cluster limiter (answers matched by id; lets
 * requests through when the primary does not answer). Its token buckets are
 * tested in test/internals/lib/token-buckets.test.ts.
 */
import { EventEmitter } from "node:events";
import { describe, expect, it, vi } from "vitest";
import {
  clientKeyOf,
  createWorkerRateLimiter,
  serveRateLimits,
} from "../../../src/cluster/rate-limiter.js";
import { createTestClock } from "../../helpers/test-server.js";

describe("client key", () => {
  it.each([
    ["198.51.100.7", "198.51.100.7"],
    ["::ffff:198.51.100.7", "198.51.100.7"],
    ["2001:db8:1:2::9", "2001:db8:1:2::/64"],
    ["2001:DB8:1:2:ffff:0:0:1", "2001:db8:1:2::/64"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["::1", "0:0:0:0::/64"],
  ])("%s is counted as %s", (ip, key) => {
    expect(clientKeyOf(ip)).toBe(key);
  });
});

/** A fake cluster: workers' messages go to the primary's handler and back. */
function fakeCluster() {
  const primary = new EventEmitter();
  const worker = new EventEmitter() as EventEmitter & {
    send(m: unknown): boolean;
    isConnected(): boolean;
  };
  const channel = new EventEmitter() as EventEmitter & { send(m: unknown): boolean };
  channel.send = (m) => {
    queueMicrotask(() => primary.emit("message", worker, m));
    return true;
  };
  worker.send = (m) => {
    queueMicrotask(() => channel.emit("message", m));
    return true;
  };
  worker.isConnected = () => true;
  return { primary, channel };
}

describe("the cluster limiter", () => {
  it("counts every worker's requests in the primary's buckets", async () => {
    const { primary, channel } = fakeCluster();
    const clock = createTestClock(0);
    serveRateLimits(primary as never, { perMinute: 3, now: clock.now });
    const limiter = createWorkerRateLimiter(channel as never);
    const results = await Promise.all(Array.from({ length: 5 }, () => limiter.take("ip")));
    expect(results.map((r) => r.ok)).toEqual([true, true, true, false, false]);
    expect(results[3]).toEqual({ ok: false, retryAfterSeconds: 20 });
  });

  it("lets the request through when the primary does not answer within a second", async () => {
    vi.useFakeTimers();
    try {
      const channel = new EventEmitter() as EventEmitter & { send(m: unknown): boolean };
      channel.send = () => true; // nobody answers
      const limiter = createWorkerRateLimiter(channel as never);
      const pending = limiter.take("ip");
      await vi.advanceTimersByTimeAsync(999);
      let settled = false;
      pending.then(() => {
        settled = true;
      });
      await Promise.resolve();
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(await pending).toEqual({ ok: true });
    } finally {
      vi.useRealTimers();
    }
  });
});
