/**
 * Monthly event quota counters: one document per (account, month), raised by
 * one atomic conditional update per batch that never lets the count pass
 * the ceiling.
 */
import type { Document } from "mongodb";
import { toNumber } from "./documents.js";
import { retryDuplicates } from "./retry.js";
import type { Collections } from "./schema.js";

/** The counter document's id. The month (`YYYY-MM`) has no colon, so the id is unambiguous. */
export function quotaId(accountId: string, month: string): string {
  return `${accountId}:${month}`;
}

export interface QuotaCounters {
  /** The count of (account, month); 0 when there is no counter yet. */
  usage(accountId: string, month: string): Promise<number>;
  /**
   * Reserves for several requests of one (account, month) in one atomic round
   * trip, in order: each request's `n` is added only when the count stays at
   * or under its `ceiling`; a request that does not fit is refused and the
   * next ones are still tried (as one-by-one reservations would). Returns,
   * per request, whether it fits and the count after it.
   */
  reserveMany(
    accountId: string,
    month: string,
    requests: readonly { n: number; ceiling: number }[],
  ): Promise<{ ok: boolean; count: number }[]>;
  /** Gives `n` back after the events it was reserved for could not be written. */
  release(accountId: string, month: string, n: number): Promise<void>;
}

export function createQuotaCounters(c: Collections): QuotaCounters {
  const usage = async (accountId: string, month: string) => {
    const d = await c.quota.findOne(
      { _id: quotaId(accountId, month) },
      { projection: { count: 1 } },
    );
    return d ? toNumber(d.count) : 0;
  };

  return {
    usage,

    async reserveMany(accountId, month, requests) {
      if (requests.every((r) => r.n <= 0)) {
        const count = await usage(accountId, month);
        return requests.map(() => ({ ok: true, count }));
      }
      const _id = quotaId(accountId, month);
      // The server replays the requests in order against the stored count
      // ($reduce) and stores the result, atomically; the document as it was
      // before tells this process which requests fitted, by the same replay.
      const before = await retryDuplicates(() =>
        c.quota.findOneAndUpdate({ _id }, reserveManyPipeline(accountId, month, requests), {
          upsert: true,
          returnDocument: "before",
          projection: { count: 1 },
        }),
      );
      return replayReservations(before ? toNumber(before.count) : 0, requests);
    },

    async release(accountId, month, n) {
      await c.quota.updateOne({ _id: quotaId(accountId, month) }, { $inc: { count: -n } });
    },
  };
}

/**
 * The update of `reserveMany`: `count` becomes the count after the requests,
 * in order, each added only when it fits under its ceiling. Every value is a
 * `$literal`, so nothing a caller sends is read as an expression.
 */
export function reserveManyPipeline(
  accountId: string,
  month: string,
  requests: readonly { n: number; ceiling: number }[],
): Document[] {
  const input = requests.map((r) => ({ n: r.n, c: r.ceiling }));
  return [
    {
      $set: {
        account_id: { $literal: accountId },
        month: { $literal: month },
        count: {
          $reduce: {
            input: { $literal: input },
            initialValue: { $ifNull: ["$count", 0] },
            in: {
              $cond: [
                { $lte: [{ $add: ["$$value", "$$this.n"] }, "$$this.c"] },
                { $add: ["$$value", "$$this.n"] },
                "$$value",
              ],
            },
          },
        },
      },
    },
  ];
}

/** The same rule as the pipeline, from the count before: which requests fit, and the count after each. */
export function replayReservations(
  before: number,
  requests: readonly { n: number; ceiling: number }[],
): { ok: boolean; count: number }[] {
  let count = before;
  return requests.map((r) => {
    // Nothing to count always fits (even over a ceiling lowered by a plan change).
    const ok = r.n <= 0 || count + r.n <= r.ceiling;
    if (ok) count += r.n;
    return { ok, count };
  });
}
