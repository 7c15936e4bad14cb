/**
 * The stored events' reads of a CLI command (`export events`, `erase …`).
 * On SQLite the moved events live in the analytics file (migration 19),
 * which one process at a time may open (DuckDB's lock): when no server holds
 * it (neither the data directory's lease, migration 24, nor the file), the command opens it, applies what SQLite's log holds (the feed, run
 * once) and reads from it, then closes it (rewritten when rows left it, as a
 * server's stop does). When a running server holds it, `reads` is absent:
 * the command says so instead of answering with a part of the events.
 */
import type { Config } from "../config.js";
import { type StoredEventReads, storedEventReads } from "../domain/analytics/event-reads.js";
import type { Store } from "../domain/store/store.js";
import { createDuckDbAnalytics } from "../store/duckdb/analytics-engine.js";
import { compactedCopy, createAnalyticsFeed } from "../store/duckdb/analytics-feed.js";
import {
  type AnalyticsStore,
  analyticsPathBeside,
  closeCompacted,
  isHeldByAnotherProcess,
  openAnalyticsStore,
} from "../store/duckdb/analytics-store.js";
import { analyticsLeaseHeld } from "../store/sqlite/analytics-lease.js";

/** A command's event reads and how to let go of them. */
export interface CliEventReads {
  /** Absent when another process (a running server) holds the analytics file. */
  reads?: StoredEventReads;
  close(): Promise<void>;
}

/** Opens the event reads of `store` for one command. */
export async function openCliEventReads(
  config: Config,
  store: Store,
  now: () => number,
): Promise<CliEventReads> {
  const sqlitePath = store.feedFile;
  if (sqlitePath === undefined) {
    // MongoDB (or SQLite in memory): the store keeps its events.
    return {
      reads: storedEventReads({ store, engine: undefined, eventsInEngine: false }),
      close: async () => {},
    };
  }
  // A running owner closes the file for a moment while it rewrites it: its
  // lease, not a free file, says whether a server owns it.
  if (analyticsLeaseHeld(sqlitePath, now())) return { close: async () => {} };
  let analytics: AnalyticsStore;
  try {
    analytics = await openAnalyticsStore({
      path: analyticsPathBeside(sqlitePath),
      threads: config.analyticsThreads,
      memoryLimit: config.analyticsMemoryLimit,
    });
  } catch (err) {
    if (!isHeldByAnotherProcess(err)) throw err;
    return { close: async () => {} };
  }
  const feed = createAnalyticsFeed({
    sqlitePath,
    analytics,
    now,
    intervalMs: config.analyticsFeedIntervalMs,
  });
  const engine = createDuckDbAnalytics({
    analytics,
    timeoutMs: config.analyticsQueryTimeoutMs,
    perSite: config.analyticsQueriesPerSite,
    removals: feed.removals,
  });
  const caughtUp =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      await feed.catchUp();
      return f(...a);
    };
  return {
    reads: storedEventReads({
      store,
      engine: {
        ...engine,
        pageEvents: caughtUp(engine.pageEvents),
        countEvents: caughtUp(engine.countEvents),
      },
      eventsInEngine: true,
    }),
    async close() {
      // What the command logged (an erasure) is applied before the file closes.
      await feed.runOnce();
      await feed.stop();
      if (feed.removedRows()) await closeCompacted(analytics, compactedCopy);
      else analytics.close();
    },
  };
}
