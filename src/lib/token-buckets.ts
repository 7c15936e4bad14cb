/**
 * Per-key token buckets: each key may spend `perMinute` tokens in a burst
 * and earns them back at `perMinute` per minute. A take may cost more than
 * one token (the collect door counts events, not requests) and may name its
 * own `perMinute` (the per-site ceilings, one size per site). A bucket that
 * is full again is forgotten, so memory follows the keys active in the last
 * minute; past `maxKeys` the least recently created buckets go first.
 */

/** A decision for one request. */
export type TakeResult = { ok: true } | { ok: false; retryAfterSeconds: number };

export interface TokenBuckets {
  /**
   * Spends `cost` tokens (default 1) of `key`'s bucket, or spends none and says
   * when they will be there. `perMinute` sizes this key's bucket (default: the
   * buckets' own); a cost above the bucket's size is never granted.
   */
  take(key: string, cost?: number, perMinute?: number): TakeResult;
  /** Buckets held (for tests and metrics). */
  readonly size: number;
}

interface Bucket {
  tokens: number;
  at: number;
  /** The bucket's size and refill per minute. */
  size: number;
}

export function createTokenBuckets(options: {
  perMinute: number;
  now: () => number;
  /** At most this many keys are tracked at once. */
  maxKeys?: number;
}): TokenBuckets {
  const { perMinute, now } = options;
  const maxKeys = options.maxKeys ?? 100_000;
  const buckets = new Map<string, Bucket>();
  let sinceSweep = 0;

  const refill = (b: Bucket, t: number) => {
    b.tokens = Math.min(b.size, b.tokens + Math.max(0, t - b.at) * (b.size / 60_000));
    b.at = t;
  };

  /** Drops full buckets (same as absent); then the oldest while still too many. */
  const sweep = (t: number) => {
    sinceSweep = 0;
    for (const [key, b] of buckets) {
      refill(b, t);
      if (b.tokens >= b.size) buckets.delete(key);
    }
    for (const key of buckets.keys()) {
      if (buckets.size < maxKeys) break;
      buckets.delete(key);
    }
  };

  return {
    take(key, cost = 1, size = perMinute) {
      const t = now();
      if (++sinceSweep >= maxKeys || buckets.size >= maxKeys) sweep(t);
      let b = buckets.get(key);
      if (!b) {
        b = { tokens: size, at: t, size };
        buckets.set(key, b);
      } else {
        // A changed setting takes effect at once, without granting a fresh burst.
        if (b.size !== size) {
          b.tokens = Math.min(b.tokens, size);
          b.size = size;
        }
        refill(b, t);
      }
      if (b.tokens >= cost) {
        b.tokens -= cost;
        return { ok: true };
      }
      // More than a bucket holds is never granted: a minute is the honest answer.
      if (cost > size) return { ok: false, retryAfterSeconds: 60 };
      return {
        ok: false,
        retryAfterSeconds: Math.max(1, Math.ceil((cost - b.tokens) / (size / 60_000) / 1000)),
      };
    },
    get size() {
      return buckets.size;
    },
  };
}
