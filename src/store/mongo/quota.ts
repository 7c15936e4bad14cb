/**
 * Monthly event quota counters: one document per (account, month), raised by a
 * conditional atomic `$inc` that never lets the count pass the ceiling.
 */
import { toNumber } from "./documents.js";
import { isDuplicateKey } from "./retry.js";
import type { Collections } from "./schema.js";

/** The counter document's id. The month (`YYYY-MM`) has no colon, so the id is unambiguous. */
export function quotaId(accountId: string, month: string): string {
  return `${accountId}:${month}`;
}

export interface QuotaCounters {
  /** The count of (account, month); 0 when there is no counter yet. */
  usage(accountId: string, month: string): Promise<number>;
  /**
   * Raises the counter by `n` when the result stays at or under `ceiling`.
   * Returns whether it did, and the count after the attempt.
   */
  reserve(
    accountId: string,
    month: string,
    n: number,
    ceiling: number,
  ): Promise<{ ok: boolean; count: number }>;
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

    async reserve(accountId, month, n, ceiling) {
      // More than the whole ceiling can never fit; without this check the
      // upsert below would create a counter already past the ceiling.
      if (n > ceiling) return { ok: false, count: await usage(accountId, month) };
      const _id = quotaId(accountId, month);
      // The filter matches only a counter with room for n. When it does not
      // match, the upsert tries to insert a new counter with the same _id and
      // the unique _id index refuses it with E11000: the counter exists and is
      // too high. The same error also comes from a genuine race, two first
      // reservations of the month inserting at once; the second attempt then
      // finds the winner's counter and either matches it or fails again, and a
      // second failure can only mean "no room", since counters are never deleted.
      for (let attempt = 1; ; attempt++) {
        try {
          const d = await c.quota.findOneAndUpdate(
            { _id, count: { $lte: ceiling - n } },
            { $inc: { count: n }, $setOnInsert: { account_id: accountId, month } },
            { upsert: true, returnDocument: "after", projection: { count: 1 } },
          );
          return { ok: true, count: d ? toNumber(d.count) : n };
        } catch (err) {
          if (!isDuplicateKey(err)) throw err;
          if (attempt >= 2) return { ok: false, count: await usage(accountId, month) };
        }
      }
    },

    async release(accountId, month, n) {
      await c.quota.updateOne({ _id: quotaId(accountId, month) }, { $inc: { count: -n } });
    },
  };
}
