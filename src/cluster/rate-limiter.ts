/**
 * Rate limits that hold across WORKERS. With node:cluster every worker would
 * otherwise count on its own and a client would get WORKERS times its limit,
 * so the buckets live in one process: the cluster primary, which every worker
 * asks over the cluster's IPC channel (one small message each way, well under
 * a millisecond; see docs/tracker.md for the measurement). Without a cluster
 * the buckets live in the server process itself. The store is not used: a
 * database write per browser request would cost more than the request.
 */
import type { Worker } from "node:cluster";
import { canonicalIp } from "../domain/events/visitor-id.js";
import { createTokenBuckets, type TakeResult, type TokenBuckets } from "../lib/token-buckets.js";

/**
 * Takes `cost` tokens (default 1) from a key's allowance; `perMinute` sizes
 * that key's bucket (default: the limiter's own, COLLECT_RATE_LIMIT).
 */
export interface RateLimiter {
  take(key: string, cost?: number, perMinute?: number): Promise<TakeResult>;
}

const ASK = "ingest:rate-limit:take";
const ANSWER = "ingest:rate-limit:result";
/** How long a worker waits for the primary before letting the request through. */
const ANSWER_TIMEOUT_MS = 1_000;

interface Ask {
  type: typeof ASK;
  id: number;
  key: string;
  cost?: number;
  perMinute?: number;
}
interface Answer {
  type: typeof ANSWER;
  id: number;
  result: TakeResult;
}

/** Buckets in this process. */
export function createLocalRateLimiter(buckets: TokenBuckets): RateLimiter {
  return { take: async (key, cost, perMinute) => buckets.take(key, cost, perMinute) };
}

/** In the cluster primary: answers the workers' questions from one set of buckets. */
export function serveRateLimits(
  cluster: { on(event: "message", fn: (worker: Worker, message: unknown) => void): unknown },
  options: { perMinute: number; now: () => number },
): TokenBuckets {
  const buckets = createTokenBuckets(options);
  cluster.on("message", (worker, message) => {
    const ask = message as Partial<Ask> | null;
    if (ask?.type !== ASK || typeof ask.id !== "number" || typeof ask.key !== "string") return;
    const cost = positive(ask.cost) ?? 1;
    const result = buckets.take(ask.key, cost, positive(ask.perMinute));
    const answer: Answer = { type: ANSWER, id: ask.id, result };
    if (worker.isConnected()) worker.send(answer);
  });
  return buckets;
}

function positive(n: unknown): number | undefined {
  return typeof n === "number" && Number.isFinite(n) && n > 0 ? n : undefined;
}

/**
 * In a cluster worker: asks the primary. Should the primary not answer in
 * time (it is busy or restarting), the request goes through: the limit is
 * there against floods, and refusing visitors' events for our own fault
 * would lose data.
 */
export function createWorkerRateLimiter(
  channel: Pick<NodeJS.Process, "send" | "on"> = process,
): RateLimiter {
  const send = channel.send?.bind(channel);
  if (!send) throw new Error("createWorkerRateLimiter needs an IPC channel (a cluster worker)");
  const waiting = new Map<number, (result: TakeResult) => void>();
  let nextId = 0;
  channel.on("message", (message: unknown) => {
    const answer = message as Partial<Answer> | null;
    if (answer?.type !== ANSWER || typeof answer.id !== "number" || !answer.result) return;
    waiting.get(answer.id)?.(answer.result);
  });
  return {
    take(key, cost, perMinute) {
      const id = nextId++;
      return new Promise<TakeResult>((resolve) => {
        const done = (result: TakeResult) => {
          clearTimeout(timer);
          waiting.delete(id);
          resolve(result);
        };
        const timer = setTimeout(() => done({ ok: true }), ANSWER_TIMEOUT_MS);
        waiting.set(id, done);
        const ask: Ask = { type: ASK, id, key };
        if (cost !== undefined) ask.cost = cost;
        if (perMinute !== undefined) ask.perMinute = perMinute;
        try {
          send(ask);
        } catch {
          done({ ok: true });
        }
      });
    },
  };
}

/**
 * The key a client is counted under: its address, with IPv6 addresses cut
 * to their /64 network (one host usually holds a whole /64, so counting single
 * IPv6 addresses would give it billions of allowances).
 */
export function clientKeyOf(rawIp: string): string {
  const ip = canonicalIp(rawIp) ?? rawIp;
  if (!ip.includes(":")) return ip;
  // canonicalIp compresses IPv6 (RFC 5952): expand the `::` to count groups.
  const [head = "", tail] = ip.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups =
    tail === undefined
      ? left
      : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return `${groups.slice(0, 4).join(":")}::/64`;
}
