/**
 * Per-key token buckets: each key may spend `perMinute` requests in a burst
 * and earns them back at `perMinute` per minute. A bucket that is full again
 * is forgotten, so memory follows the keys active in the last minute; past
 * `maxKeys` the least recently created buckets go first.
 */

/** A decision for one request. */
export type TakeResult = { ok: true } | { ok: false; retryAfterSeconds: number };

export interface TokenBuckets {
  /** Spends one token of `key`'s bucket, or says when one will be there. */
  take(key: string): TakeResult;
  /** Buckets held (for tests and metrics). */
  readonly size: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export function createTokenBuckets(options: {
  perMinute: number;
  now: () => number;
  /** At most this many keys are tracked at once. */
  maxKeys?: number;
}): TokenBuckets {
  const { perMinute, now } = options;
  const maxKeys = options.maxKeys ?? 100_000;
  const perMs = perMinute / 60_000;
  const buckets = new Map<string, Bucket>();
  let sinceSweep = 0;

  const refill = (b: Bucket, t: number) => {
    b.tokens = Math.min(perMinute, b.tokens + Math.max(0, t - b.at) * perMs);
    b.at = t;
  };

  /** Drops full buckets (same as absent); then the oldest while still too many. */
  const sweep = (t: number) => {
    sinceSweep = 0;
    for (const [key, b] of buckets) {
      refill(b, t);
      if (b.tokens >= perMinute) buckets.delete(key);
    }
    for (const key of buckets.keys()) {
      if (buckets.size < maxKeys) break;
      buckets.delete(key);
    }
  };

  return {
    take(key) {
      const t = now();
      if (++sinceSweep >= maxKeys || buckets.size >= maxKeys) sweep(t);
      let b = buckets.get(key);
      if (!b) {
        b = { tokens: perMinute, at: t };
        buckets.set(key, b);
      } else {
        refill(b, t);
      }
      if (b.tokens >= 1) {
        b.tokens -= 1;
        return { ok: true };
      }
      return {
        ok: false,
        retryAfterSeconds: Math.max(1, Math.ceil((1 - b.tokens) / perMs / 1000)),
      };
    },
    get size() {
      return buckets.size;
    },
  };
}
