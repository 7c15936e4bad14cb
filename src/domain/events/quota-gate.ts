/**
 * The quota's early refusal (step 5a of the events application): a request
 * is refused at once when the store's counter is already too close to the
 * ceiling. The counter is read only when this process's lower bound of it,
 * learnt from its own commits, does not show that the request fits; the
 * group commit's conditional raise stays the authority on the ceiling, so
 * another process's events are still counted (docs/performance.md, "Quota").
 */
import { createBoundedMap } from "../../lib/bounded-map.js";
import { errors } from "../errors.js";
import { secondsUntilNextMonth } from "../plans.js";
import type { Store } from "../store/store.js";
import { fromStore } from "./from-store.js";

/** Most accounts whose counter's lower bound is kept. */
const MAX_COUNTERS = 10_000;

/** The early refusal of one process, shared by its requests. */
export interface QuotaGate {
  /**
   * Throws quota_exceeded when `countable` more events cannot fit under the
   * ceiling. The bound only ever answers "it fits": a refusal is decided on
   * the store's own count, read here, so it is as right as reading on every
   * request (a MongoDB reservation given back after a failed write can leave
   * a bound high for a while).
   */
  check(
    accountId: string,
    month: string,
    countable: number,
    ceiling: number,
    now: number,
  ): Promise<void>;
  /** What a commit left the counter at: raises the bound. */
  note(accountId: string, month: string, used: number): void;
}

/** A quota gate over `store`, with an empty memory of bounds. */
export function createQuotaGate(store: Store): QuotaGate {
  // By account, the bound of its current month's counter: the month changes
  // once a month, so no key string is built per request.
  const usedAtLeast = createBoundedMap<string, { month: string; used: number }>(MAX_COUNTERS);
  return {
    async check(accountId, month, countable, ceiling, now) {
      if (countable <= 0) return;
      const bound = usedAtLeast.get(accountId);
      const known = bound?.month === month ? bound.used : undefined;
      if (known === undefined || known + countable > ceiling) {
        const used = await fromStore(store.getUsage(accountId, month));
        if (used + countable > ceiling) throw errors.quotaExceeded(secondsUntilNextMonth(now));
      }
    },
    note(accountId, month, used) {
      const bound = usedAtLeast.get(accountId);
      if (bound?.month === month) bound.used = Math.max(bound.used, used);
      else usedAtLeast.set(accountId, { month, used });
    },
  };
}
