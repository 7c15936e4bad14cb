/** The token buckets of the collect rate limit: burst, refill, Retry-After, memory bound. */
import { describe, expect, it } from "vitest";
import { createTokenBuckets } from "../../../src/lib/token-buckets.js";
import { createTestClock } from "../../helpers/test-server.js";

describe("token buckets", () => {
  it("allows a burst of the limit, then one request per 60/limit seconds", () => {
    const clock = createTestClock(0);
    const buckets = createTokenBuckets({ perMinute: 6, now: clock.now });
    for (let i = 0; i < 6; i++) expect(buckets.take("a")).toEqual({ ok: true });
    expect(buckets.take("a")).toEqual({ ok: false, retryAfterSeconds: 10 });
    expect(buckets.take("b")).toEqual({ ok: true });
    clock.advance(9_500);
    expect(buckets.take("a")).toEqual({ ok: false, retryAfterSeconds: 1 });
    clock.advance(500);
    expect(buckets.take("a")).toEqual({ ok: true });
    expect(buckets.take("a")).toEqual({ ok: false, retryAfterSeconds: 10 });
    // A long pause refills to the limit, never above it.
    clock.advance(3_600_000);
    for (let i = 0; i < 6; i++) expect(buckets.take("a").ok).toBe(true);
    expect(buckets.take("a").ok).toBe(false);
  });

  it("takes a cost of several tokens, or none, and sizes a key's bucket by its own perMinute", () => {
    const clock = createTestClock(0);
    const buckets = createTokenBuckets({ perMinute: 120, now: clock.now });
    expect(buckets.take("ip", 50)).toEqual({ ok: true });
    expect(buckets.take("ip", 50)).toEqual({ ok: true });
    // 20 left: 30 missing at 120 a minute is 15 s, and nothing is spent.
    expect(buckets.take("ip", 50)).toEqual({ ok: false, retryAfterSeconds: 15 });
    expect(buckets.take("ip", 20)).toEqual({ ok: true });
    // A cost above the bucket's size is never granted; it is told to wait for a full bucket.
    expect(buckets.take("other", 500)).toEqual({ ok: false, retryAfterSeconds: 60 });

    expect(buckets.take("site:a", 600, 600)).toEqual({ ok: true });
    expect(buckets.take("site:a", 50, 600)).toEqual({ ok: false, retryAfterSeconds: 5 });
    // A smaller setting applies at once; a larger one grants no fresh burst but refills at its rate.
    clock.advance(60_000);
    expect(buckets.take("site:a", 101, 100)).toEqual({ ok: false, retryAfterSeconds: 60 });
    expect(buckets.take("site:a", 100, 100)).toEqual({ ok: true });
    expect(buckets.take("site:a", 1, 6_000)).toEqual({ ok: false, retryAfterSeconds: 1 });
    clock.advance(1_000);
    expect(buckets.take("site:a", 100, 6_000)).toEqual({ ok: true });
  });

  it("forgets refilled buckets and never holds more than maxKeys", () => {
    const clock = createTestClock(0);
    const buckets = createTokenBuckets({ perMinute: 60, now: clock.now, maxKeys: 100 });
    for (let i = 0; i < 1_000; i++) buckets.take(`ip${i}`);
    expect(buckets.size).toBeLessThanOrEqual(100);
    clock.advance(60_000);
    for (let i = 0; i < 100; i++) buckets.take("same");
    expect(buckets.size).toBeLessThanOrEqual(2);
  });
});
