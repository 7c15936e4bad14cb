/** The retention part of the store port: per-site retention of raw events, and the pruning steps. */

/**
 * An event received this long after a pruning horizon, and every event
 * stored after it, is newer than the horizon: the API's `ts` tolerance is
 * one hour in the past (it replaces older times by the time of receipt);
 * the second hour covers batching and the clocks of other workers. Both
 * stores end a pass there instead of reading every later event.
 */
export const STOP_AFTER_MS = 2 * 3_600_000;

/** A site whose raw events are kept a limited number of days. */
export interface EventsRetention {
  siteId: string;
  days: number;
}

/** What one pruning step did. */
export interface PruneStep {
  /** Events removed by this step (at most the step's limit; MongoDB: whole buckets, see below). */
  removed: number;
  /**
   * Where the next step of the same pass starts; undefined when the pass is
   * over (nothing older than the horizon is left to find). Opaque, the
   * store's own.
   */
  cursor?: string;
}

/** The retention part of the store port. Every method may reject when the database is unreachable. */
export interface StoreRetentionPart {
  /** Sets (days) or clears (undefined: keep) a site's retention; false when the site is unknown. */
  setEventsRetention(siteId: string, days: number | undefined): Promise<boolean>;
  /** A site's retention in days; undefined when it keeps its events (or is unknown). */
  getEventsRetention(siteId: string): Promise<number | undefined>;
  /** Every site with a retention set, by site id. */
  listEventsRetention(): Promise<EventsRetention[]>;
  /**
   * One small, bounded step of removing `siteId`'s events whose `ts` is
   * before `before` (Unix ms), starting at `cursor` (from the previous step
   * of the same pass; none for the first). Removes at most `limit` events
   * (MongoDB removes whole buckets only: at most `max(1, ⌊limit / 200⌋)`
   * buckets, each fully before the horizon). Nothing else is touched: first
   * touches, identify links, stitches, customers, payments and quota
   * counters stay. Each step is its own short transaction, so writers wait
   * for one step at most.
   */
  pruneEventsStep(
    siteId: string,
    before: number,
    limit: number,
    cursor?: string,
  ): Promise<PruneStep>;
}
