/**
 * Which process owns the analytics store, and what the owner does while it
 * runs. The servers of one deployment choose one owner by a lease
 * (src/domain/store/analytics-lease-port.ts; in SQLite's `analytics_lease`
 * row for a data directory, in MongoDB's `analytics_lease` collection for a
 * database): the first server to start takes it and renews it every third
 * of ANALYTICS_LEASE_MS; another one stands by, its Query and Funnel
 * answering unavailable, and takes over when the lease lapses (the owner was
 * killed), then opens the file, lets its feed catch up and serves. A clean
 * stop gives the lease up at once. An owner that cannot renew (the store
 * unreachable or busy) closes its file before the lease could lapse, so two
 * servers never own at once; it takes the lease again when it can.
 * ANALYTICS_OWNER=false keeps a process out of the choice.
 *
 * The owner also rewrites its file while it runs, at most
 * ANALYTICS_COMPACT_INTERVAL_MS after a batch removed rows (an erasure, a
 * pruning): the file keeps no erased person's bytes longer than that
 * (issue 30's 24 hours; docs/operations.md).
 */
import type { AnalyticsEngine } from "./domain/analytics/query-plan.js";
import { errors } from "./domain/errors.js";
import type { AnalyticsLease } from "./domain/store/analytics-lease-port.js";
import { scrub } from "./lib/scrub.js";
import type { AnalyticsFeed } from "./store/duckdb/analytics-feed.js";
import { compactedCopy } from "./store/duckdb/analytics-feed.js";
import {
  type AnalyticsStore,
  closeCompacted,
  isHeldByAnotherProcess,
  removeAnalyticsFile,
} from "./store/duckdb/analytics-store.js";

/** The analytics store of this process, its feed and its engine. */
export interface Analytics {
  store: AnalyticsStore;
  /** The mover SQLite → DuckDB: started by listen, stopped by close. */
  feed: AnalyticsFeed;
  engine: AnalyticsEngine;
}

/** Where ownership reports what it does. */
export interface OwnershipLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

/** This process's part in owning the analytics store. */
export interface AnalyticsOwnership {
  /** The analytics store this process owns now; undefined while it stands by. */
  current(): Analytics | undefined;
  /**
   * The engine to hand to the doors: the owned one's, or, while this process
   * stands by, one that answers unavailable (503, retry).
   */
  readonly engine: AnalyticsEngine;
  /** Starts the feed (when owning), the lease's renewal or watch, and the rewrite's timer. */
  start(): void;
  /**
   * One turn of the lease, which `start` runs every third of it: the owner
   * renews (or gives up), a standby takes the lease if it lapsed.
   */
  turn(): Promise<void>;
  /**
   * Stops: the feed applies what SQLite committed, the file closes (rewritten
   * when rows left it), then the lease is given up.
   */
  close(): Promise<void>;
}

export interface AnalyticsOwnershipOptions {
  /** The deployment's lease; absent: this process owns the store outright (a store in memory). */
  lease?: AnalyticsLease;
  /** How long the lease lasts (renewed every third of it; a standby looks as often). */
  leaseMs: number;
  /** Opens the store, its feed and engine; fails with DuckDB's lock error while another process has the file. */
  open(): Promise<Analytics>;
  /** The longest time the file keeps removed rows' bytes while running (ANALYTICS_COMPACT_INTERVAL_MS). */
  compactIntervalMs: number;
  /** The clock the rewrite's delay is judged by. */
  now: () => number;
  log: () => OwnershipLog | undefined;
}

/** How often, at most, the owner looks whether its file is due for a rewrite. */
const COMPACT_CHECK_MAX_MS = 60_000;

/**
 * Creates this process's ownership and makes its first attempt: a lone
 * server owns the store when this resolves. A failure to open the file other
 * than another process's lock fails the start, as before.
 */
export async function createAnalyticsOwnership(
  options: AnalyticsOwnershipOptions,
): Promise<AnalyticsOwnership> {
  const { lease } = options;
  let current: Analytics | undefined;
  let started = false;
  let closed = false;
  let busy = false;
  let compacting = false;
  let waitingSaid = false;
  const timers: NodeJS.Timeout[] = [];
  /**
   * When the lease this process holds lapses at the earliest: the last
   * successful renewal's start (by `now`) plus the lease's length.
   */
  let leasedUntil = 0;
  const turnMs = Math.max(100, Math.floor(options.leaseMs / 3));

  /** Takes the lease if it is free or lapsed, then opens the file. */
  const take = async (first: boolean) => {
    if (lease) {
      let held: boolean;
      const asked = options.now();
      try {
        held = await lease.acquire();
      } catch (err) {
        // The store busy or unreachable: looked at again at the next turn.
        if (first) throw err;
        return;
      }
      if (held) leasedUntil = asked + options.leaseMs;
      if (!held) {
        if (!waitingSaid) {
          waitingSaid = true;
          const row = await lease.read().catch(() => undefined);
          options
            .log()
            ?.info(
              { holder: row?.holder, expiresAt: row?.expiresAt },
              "another server owns the analytics store: Query and Funnel answer unavailable here until its lease lapses",
            );
        }
        return;
      }
    }
    let analytics: Analytics;
    try {
      analytics = await options.open();
    } catch (err) {
      // With a lease: it is ours but the last owner still has the file open (it
      // is closing, or learns at its next renewal that it lost the lease).
      // Without one: another process has the file open; this one opens it once
      // that one has closed it.
      if (!isHeldByAnotherProcess(err)) throw err;
      if (!lease && !waitingSaid) {
        waitingSaid = true;
        options
          .log()
          ?.warn(
            { err: scrub(err) },
            "analytics store is held by another process: Query and Funnel are unavailable here until it closes the file",
          );
      }
      return;
    }
    if (closed) {
      await closeAnalytics(analytics, options.log());
      return;
    }
    current = analytics;
    waitingSaid = false;
    if (started) analytics.feed.start();
    options.log()?.info({ holder: lease?.holder }, "this server owns the analytics store");
  };

  /**
   * The lease was taken by another server (ours lapsed), or could not be
   * renewed in time: the file is closed, for the next holder.
   */
  const giveUp = async (why: string) => {
    const analytics = current;
    if (!analytics) return;
    current = undefined;
    options.log()?.warn({ holder: lease?.holder }, `${why}: closing the file here`);
    await analytics.feed.stop();
    analytics.store.close();
  };

  /** One turn of the lease: the owner renews, a standby looks whether it lapsed. */
  const leaseTurn = async () => {
    if (busy || closed) return;
    busy = true;
    try {
      if (!lease) {
        if (!current) await take(false);
      } else if (current) {
        const asked = options.now();
        let kept: boolean;
        try {
          kept = await withinTurn(lease.renew(), turnMs);
        } catch (err) {
          // Renewed at the next turn, unless that could come too late: an
          // owner must have closed its file before its lease may lapse.
          options.log()?.warn({ err: scrub(err) }, "analytics lease not renewed; tried again");
          if (options.now() + turnMs >= leasedUntil - turnMs / 2) {
            await giveUp("the analytics store's lease could not be renewed before it lapses");
          }
          return;
        }
        if (kept) leasedUntil = asked + options.leaseMs;
        else await giveUp("the analytics store's lease lapsed and another server took it");
      } else {
        await take(false);
      }
    } catch (err) {
      options.log()?.warn({ err: scrub(err) }, "analytics store ownership: turn failed; retried");
    } finally {
      busy = false;
    }
  };

  /** Rewrites the owned file when removed rows' bytes have waited long enough. */
  const compactTurn = async () => {
    const analytics = current;
    if (!analytics || compacting || closed) return;
    const since = analytics.feed.dirtySince();
    if (since === undefined || options.now() - since < options.compactIntervalMs) return;
    compacting = true;
    try {
      const report = await analytics.feed.compact();
      if (report) options.log()?.info(report, "analytics file rewritten");
    } catch (err) {
      options
        .log()
        ?.warn({ err: scrub(err) }, "analytics file not rewritten; tried again at the next turn");
    } finally {
      compacting = false;
    }
  };

  await take(true);

  const unavailable = () => {
    throw errors.analyticsUnavailable();
  };
  const owned = (): AnalyticsEngine => current?.engine ?? unavailable();
  const engine: AnalyticsEngine = {
    query: async (...a) => owned().query(...a),
    funnel: async (...a) => owned().funnel(...a),
    pageEvents: async (...a) => owned().pageEvents(...a),
    report: async (...a) => owned().report(...a),
    countEvents: async (...a) => owned().countEvents(...a),
  };

  return {
    current: () => current,
    engine,
    turn: leaseTurn,
    start() {
      if (started || closed) return;
      started = true;
      current?.feed.start();
      if (lease || !current) {
        const t = setInterval(() => void leaseTurn(), turnMs);
        t.unref();
        timers.push(t);
      }
      const every = Math.max(25, Math.min(COMPACT_CHECK_MAX_MS, options.compactIntervalMs / 4));
      const t = setInterval(() => void compactTurn(), every);
      t.unref();
      timers.push(t);
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const t of timers) clearInterval(t);
      const analytics = current;
      current = undefined;
      if (analytics) await closeAnalytics(analytics, options.log());
      // Only once the file is closed may the next owner open it.
      try {
        await lease?.release();
      } catch (err) {
        options.log()?.warn({ err: scrub(err) }, "analytics lease not given up; it lapses");
      }
      await lease?.close().catch(() => {});
    },
  };
}

/** `call`, or a rejection when it has not answered within `ms` (a renewal that hangs counts as failed). */
function withinTurn<T>(call: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([call, late]).finally(() => clearTimeout(timer));
}

/**
 * Closes the analytics store after the last writes: the feed applies what
 * SQLite committed (an erasure just answered included), stops, and the file
 * is rewritten when rows left it, so no erased or pruned string stays on disk
 * after a clean stop (docs/privacy.md).
 */
async function closeAnalytics(analytics: Analytics, log: OwnershipLog | undefined): Promise<void> {
  try {
    await analytics.feed.runOnce();
  } catch (err) {
    log?.warn(
      { err: scrub(err) },
      "analytics feed failed at close; the next start applies the rest",
    );
  }
  // The feed's batch in progress commits (or rolls back) before DuckDB closes.
  await analytics.feed.stop();
  if (!analytics.feed.removedRows()) return analytics.store.close();
  try {
    await closeCompacted(analytics.store, compactedCopy);
  } catch (err) {
    // The file holds the moved events (SQLite keeps only the outbox): it stays as it
    // is, and the next clean stop rewrites it.
    analytics.store.close();
    removeAnalyticsFile(`${analytics.store.path}.compact`);
    log?.warn(
      { err: scrub(err) },
      "analytics file not rewritten at close; kept, rewritten at the next stop",
    );
  }
}
