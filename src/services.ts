/**
 * The service without its doors: the store with its decorators (outage
 * guard, directory cache), the domain applications and readiness. No
 * Fastify, no Connect: src/server.ts hands these to each door.
 */

import {
  type Analytics,
  type AnalyticsOwnership,
  createAnalyticsOwnership,
} from "./analytics-ownership.js";
import { createLocalRateLimiter, type RateLimiter } from "./cluster/rate-limiter.js";
import type { Config } from "./config.js";
import { type Admin, createAdmin } from "./domain/admin.js";
import { type AnalyticsApp, createAnalyticsApp } from "./domain/analytics/analytics-app.js";
import { storedEventReads } from "./domain/analytics/event-reads.js";
import type { AnalyticsEngine } from "./domain/analytics/query-plan.js";
import { admitReports, REPORTS_QUEUED_PER_SITE } from "./domain/analytics/report-admission.js";
import { createAttributor } from "./domain/attribution/attribute.js";
import { type Authenticator, createAuthenticator } from "./domain/auth.js";
import type { Clock } from "./domain/clock.js";
import { type CollectLimits, createCollectLimits } from "./domain/collect-limits.js";
import { type ConnectorsApp, createConnectorsApp } from "./domain/connectors/connectors-app.js";
import { createErasure, type Erasure, erasureAuditFields } from "./domain/erasure.js";
import { errors } from "./domain/errors.js";
import type { EventsApp } from "./domain/events/events-app.js";
import { createEventsApp } from "./domain/events/events-app.js";
import { createFirstRun, type FirstRun } from "./domain/first-run.js";
import type { PaymentsApp } from "./domain/payments/payments-app.js";
import { createPaymentsApp } from "./domain/payments/payments-app.js";
import { createReports, type Reports } from "./domain/reports.js";
import {
  createRetention,
  createRetentionPruner,
  type Retention,
  type RetentionPruner,
} from "./domain/retention.js";
import type { AnalyticsLease } from "./domain/store/analytics-lease-port.js";
import type { DashboardBundle } from "./http/dashboard/dashboard-bundle.js";
import type { TrackerBundle } from "./http/tracker-script.js";
import { createReadiness, type Readiness } from "./lib/readiness.js";
import { scrub } from "./lib/scrub.js";
import { createTokenBuckets } from "./lib/token-buckets.js";
import { noopObserver, type Observer } from "./metrics/observer.js";
import { cacheDirectory, type DirectoryCachedStore } from "./store/directory-cache.js";
import { createDuckDbAnalytics } from "./store/duckdb/analytics-engine.js";
import { type AnalyticsFeed, createAnalyticsFeed } from "./store/duckdb/analytics-feed.js";
import { analyticsPathBeside, openAnalyticsStore } from "./store/duckdb/analytics-store.js";
import { guardStore } from "./store/guarded-store.js";
import {
  createMongoAnalyticsFeed,
  type MongoFeedSource,
  openMongoFeedSource,
} from "./store/mongo/analytics-feed.js";
import { openMongoAnalyticsLease } from "./store/mongo/analytics-lease.js";
import type { Store } from "./store/port.js";
import { openAnalyticsLease } from "./store/sqlite/analytics-lease.js";

/** What the service is built from: main.ts passes the real ones, tests their own. */
export interface ServiceDeps {
  config: Config;
  store: Store;
  clock: Clock;
  /** Where the app reports what it does (metrics); nothing is observed when omitted. */
  metrics?: Observer;
  /**
   * Where the collect endpoint's per-client limits are counted. Default: in
   * this process, by `clock` (main.ts passes the cluster primary's under WORKERS).
   */
  collectLimiter?: RateLimiter;
  /** The tracking script; default: the bundle `npm run build` wrote to dist/tracker/. */
  trackerBundle?: TrackerBundle;
  /** The dashboard's files; default: what `npm run build` wrote to dist/dashboard/. */
  dashboardBundle?: DashboardBundle;
  /**
   * Whether this process runs the retention pruner (default: yes, when
   * RETENTION_INTERVAL_MS is not 0). Under WORKERS only one worker does (main.ts).
   */
  pruneEvents?: boolean;
  /**
   * Whether this process may own the analytics store (the DuckDB file, its
   * feed and its engine; the deployment's lease chooses one owner). Default:
   * unless ANALYTICS_OWNER=false. Under WORKERS only the worker that prunes
   * may (main.ts).
   */
  ownsAnalytics?: boolean;
  /**
   * The analytics engine of another process, for a process that does not own
   * the analytics store: under WORKERS, the owner worker's, reached over the
   * cluster's IPC (src/cluster/port-relay.ts, wired by main.ts).
   */
  remoteAnalytics?: AnalyticsEngine;
  /**
   * Where the MongoDB feed reads (tests pass in-memory collections); default:
   * its own connection to STORE_URL.
   */
  mongoFeedSource?: () => Promise<MongoFeedSource>;
  /**
   * The MongoDB deployment's owner lease (tests pass one on in-memory
   * collections); default: on its own connection to STORE_URL.
   */
  mongoLease?: (ttlMs: number) => Promise<AnalyticsLease>;
  /**
   * Wraps the owner's DuckDB engine beneath its admission rules and
   * read-your-writes (tests hold its fixed reports to fill their lanes).
   */
  wrapAnalytics?: (engine: AnalyticsEngine) => AnalyticsEngine;
}

export type { Analytics } from "./analytics-ownership.js";

/** Where the services log what no request asked for (the store's outages, erasures' audit lines). */
export interface ServiceLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

/** Everything a door may be handed. */
export interface Services {
  config: Config;
  clock: Clock;
  /** The store, guarded (outages answer 503) and caching the directory. */
  store: DirectoryCachedStore;
  metrics: Observer;
  auth: Authenticator;
  admin: Admin;
  /** The first run's one-time setup token and the setup page's operation. */
  firstRun: FirstRun;
  erasure: Erasure;
  /** Per-site retention of raw events (AdminService, CLI). */
  retention: Retention;
  /** Per-site ceilings of the public collect door (AdminService, CLI). */
  collectLimits: CollectLimits;
  /**
   * The retention pruner: started by listen, stopped by close (src/app.ts);
   * tests run its passes with `runOnce()`.
   */
  pruner: RetentionPruner;
  /** Whether `pruner` runs on its timer in this process. */
  pruneEvents: boolean;
  reports: Reports;
  payments: PaymentsApp;
  events: EventsApp;
  /** Payment-provider webhooks, recorded through `payments`. */
  connectors: ConnectorsApp;
  readiness: Readiness;
  /**
   * Where the collect door's limits are counted: its per-client limit
   * (COLLECT_RATE_LIMIT) and the per-site ceilings, under `site:` keys.
   */
  collectLimiter: RateLimiter;
  /**
   * Whether and when this process owns the analytics store: absent when it
   * never may (a process given ANALYTICS_OWNER=false, a worker that does not
   * prune); the servers of one deployment choose one by a lease
   * (src/analytics-ownership.ts).
   */
  analytics?: AnalyticsOwnership;
  /** ReportsService.Query and Funnel: requests planned, then answered by `analytics`' engine. */
  queries: AnalyticsApp;
  trackerBundle?: TrackerBundle;
  dashboardBundle?: DashboardBundle;
}

/**
 * Builds the services. `log` is asked for at each report (the server that
 * owns the logger is built after the services).
 */
export async function buildServices(
  deps: ServiceDeps,
  log: () => ServiceLog | undefined,
): Promise<Services> {
  const { config, clock } = deps;
  const metrics = deps.metrics ?? noopObserver;
  // Database failures answer 503. No timer of our own: SQLite answers within
  // its busy timeout, and MongoDB's driver and server enforce STORE_TIMEOUT_MS
  // themselves, so the operation is really abandoned when the caller is told
  // to retry (a parallel timer would answer 503 while the write goes on).
  // An outage is logged once when it starts and once when the store answers again.
  // Keys, sites and accounts come from memory while the store's directory version is unchanged.
  const store = cacheDirectory(
    guardStore(deps.store, {
      onStateChange(available, cause) {
        if (available) log()?.warn({ store: deps.store.kind }, "store available again");
        else log()?.warn({ store: deps.store.kind, err: scrub(cause) }, "store unavailable");
      },
      onError: (operation) => metrics.storeError(operation),
    }),
  );
  const queue = {
    capacity: config.ingestQueueCapacity,
    batchMax: config.ingestBatchMax,
    flushMs: config.ingestFlushMs,
    // Batches overlap only where commits keep their order (see Store.commitsInOrder).
    inFlight: deps.store.commitsInOrder ? config.ingestBatchesInFlight : 1,
  };
  // One set of buckets for both of the collect door's limits; under WORKERS the primary's.
  const collectLimiter =
    deps.collectLimiter ??
    createLocalRateLimiter(
      createTokenBuckets({ perMinute: Math.max(1, config.collectRateLimit), now: clock.now }),
    );
  const attribution = createAttributor({ store, clock });
  const payments = createPaymentsApp({
    store,
    clock,
    queue: { ...queue, observer: metrics.queue("payments") },
    attribution,
  });
  const events = metrics.observeEvents(
    await createEventsApp({
      store,
      clock,
      queue: { ...queue, observer: metrics.queue("events") },
      geoipDb: config.geoipDb,
      attribution,
      collectAllowance: {
        take: (key, cost, perMinute) => collectLimiter.take(key, cost, perMinute),
      },
    }),
  );
  const ownership = await openAnalytics(deps, log);
  // SQLite in a file moves its events to the engine (migration 19); MongoDB keeps its own.
  const eventReads = storedEventReads({
    store,
    // A worker that does not own the file reaches the owner's engine over IPC.
    engine: ownership?.engine ?? deps.remoteAnalytics,
    eventsInEngine: deps.store.feedFile !== undefined,
  });
  const readiness = createReadiness({ ping: () => store.ping(), timeoutMs: 2_000 });
  metrics.setReadinessProbe(() => readiness.check());
  const admin = createAdmin({ store, clock });

  return {
    config,
    clock,
    store,
    metrics,
    auth: createAuthenticator({ store, clock }),
    admin,
    firstRun: createFirstRun({ store, clock, admin }),
    erasure: createErasure({
      store,
      attributor: attribution,
      audit: (line) => log()?.info(erasureAuditFields(line), "personal data erased"),
      ...(eventReads.countEvents ? { countEvents: eventReads.countEvents } : {}),
    }),
    retention: createRetention({ store }),
    collectLimits: createCollectLimits({ store }),
    pruner: createRetentionPruner({
      store,
      clock,
      log: {
        info: (fields, message) => log()?.info(fields, message),
        warn: (fields, message) => log()?.warn(fields, message),
      },
      intervalMs: config.retentionIntervalMs,
      stepEvents: config.retentionStepEvents,
      stepPauseMs: config.retentionStepPauseMs,
      onPruned: (count) => metrics.eventsPruned(count),
      ...(eventReads.countEvents ? { countEvents: eventReads.countEvents } : {}),
    }),
    pruneEvents: (deps.pruneEvents ?? true) && config.retentionIntervalMs > 0,
    reports: createReports({
      store,
      clock,
      exportsPerSite: config.exportsPerSite,
      events: eventReads,
      // SiteOverview's traffic is a plan of the query layer (read-your-writes: openAnalytics).
      ...(ownership || deps.remoteAnalytics
        ? { engine: (ownership?.engine ?? deps.remoteAnalytics) as AnalyticsEngine }
        : {}),
    }),
    payments,
    events,
    connectors: createConnectorsApp({
      store,
      payments,
      onRefundExcess: (provider) => metrics.connectorEvent(provider, "refund_exceeds_charge"),
    }),
    readiness,
    collectLimiter,
    ...(ownership ? { analytics: ownership } : {}),
    queries: createAnalyticsApp({ store, engine: ownership?.engine ?? deps.remoteAnalytics }),
    ...(deps.trackerBundle ? { trackerBundle: deps.trackerBundle } : {}),
    ...(deps.dashboardBundle ? { dashboardBundle: deps.dashboardBundle } : {}),
  };
}

/** The analytics file of a MongoDB deployment when ANALYTICS_PATH is unset. */
export const MONGODB_ANALYTICS_PATH = "./data/analytics.duckdb";

/**
 * This process's ownership of the analytics store, when it may own it: with
 * SQLite, the file beside the SQLite file fed from its log, owned by the
 * server holding the data directory's lease (migration 24); with MongoDB,
 * the file of ANALYTICS_PATH fed from the collections, owned by the server
 * holding the database's lease (`analytics_lease`, docs/mongodb.md). A
 * process given ANALYTICS_OWNER=false never owns it; there Query and Funnel
 * answer unavailable.
 */
async function openAnalytics(
  deps: ServiceDeps,
  log: () => ServiceLog | undefined,
): Promise<AnalyticsOwnership | undefined> {
  const { config } = deps;
  const sqlitePath = deps.store.feedFile;
  const database = deps.store.feedDatabase;
  // Every server may own the file; the deployment's lease chooses one.
  if (deps.ownsAnalytics === false || config.analyticsOwner === false) return undefined;
  if (database === undefined && sqlitePath === undefined) return undefined;
  const lease =
    sqlitePath !== undefined
      ? openAnalyticsLease({
          sqlitePath,
          ttlMs: config.analyticsLeaseMs,
          now: deps.clock.now,
          busyTimeoutMs: config.sqliteBusyTimeoutMs,
        })
      : await (
          deps.mongoLease ??
          ((ttlMs) =>
            openMongoAnalyticsLease(
              database as { url: string; dbName: string },
              config.storeTimeoutMs,
              ttlMs,
            ))
        )(config.analyticsLeaseMs);
  try {
    return await createAnalyticsOwnership({
      ...(lease ? { lease } : {}),
      leaseMs: config.analyticsLeaseMs,
      open: () => openOwnedAnalytics(deps, log),
      compactIntervalMs: config.analyticsCompactIntervalMs,
      now: deps.clock.now,
      log,
    });
  } catch (err) {
    await lease?.close();
    throw err;
  }
}

/**
 * Opens the analytics store, its feed and its engine, for the process that
 * owns them; fails with DuckDB's lock error while another process still has
 * the file open.
 */
async function openOwnedAnalytics(
  deps: ServiceDeps,
  log: () => ServiceLog | undefined,
): Promise<Analytics> {
  const { config } = deps;
  const sqlitePath = deps.store.feedFile;
  const database = deps.store.feedDatabase;
  const store = await openAnalyticsStore({
    // With SQLite always beside its file: a restore removes it there (backup.ts).
    path:
      sqlitePath === undefined
        ? (config.analyticsPath ?? MONGODB_ANALYTICS_PATH)
        : analyticsPathBeside(sqlitePath),
    threads: config.analyticsThreads,
    memoryLimit: config.analyticsMemoryLimit,
  });
  const onError = (err: unknown) =>
    log()?.warn({ err: scrub(err) }, "analytics feed batch failed; retried");
  let feed: AnalyticsFeed;
  if (sqlitePath !== undefined) {
    feed = createAnalyticsFeed({
      sqlitePath,
      analytics: store,
      now: deps.clock.now,
      intervalMs: config.analyticsFeedIntervalMs,
      freePagesKept: config.sqliteFreePagesKept,
      onError,
    });
  } else {
    const db = database as { url: string; dbName: string };
    let source: MongoFeedSource;
    try {
      source = await (
        deps.mongoFeedSource ?? (() => openMongoFeedSource(db, config.storeTimeoutMs))
      )();
    } catch (err) {
      store.close();
      throw err;
    }
    feed = createMongoAnalyticsFeed({
      source,
      analytics: store,
      now: deps.clock.now,
      intervalMs: config.analyticsFeedIntervalMs,
      onError,
    });
  }
  const duckdb = createDuckDbAnalytics({
    analytics: store,
    timeoutMs: config.analyticsQueryTimeoutMs,
    perSite: config.analyticsQueriesPerSite,
    removals: feed.removals,
  });
  // The fixed reports' plans in lanes of their own, beside the query slots (docs/reports.md).
  const engine = admitReports(deps.wrapAnalytics?.(duckdb) ?? duckdb, {
    perSite: config.analyticsQueriesPerSite,
    queuedPerSite: REPORTS_QUEUED_PER_SITE,
    waitMs: config.analyticsReportWaitMs,
  });
  // Read-your-writes: every read first waits for the feed to apply what SQLite
  // committed before it began (an event just acknowledged, an erasure). A feed
  // that cannot apply its log (DuckDB failing) makes the read unavailable, never a 500;
  // one that has more to apply than the query's time limit allows (a backlog at
  // start, a burst) answers so then, rather than holding the request: the feed
  // goes on applying it, and the retry finds it in.
  const catchUp = async () => {
    const limitMs = config.analyticsQueryTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(errors.analyticsBehind(limitMs)), limitMs);
    });
    try {
      await Promise.race([
        feed.catchUp().catch((err: unknown) => {
          throw errors.analyticsUnavailable(err);
        }),
        late,
      ]);
    } finally {
      clearTimeout(timer);
    }
  };
  return {
    store,
    feed,
    engine: {
      ...engine,
      query: async (...a) => {
        await catchUp();
        return engine.query(...a);
      },
      funnel: async (...a) => {
        await catchUp();
        return engine.funnel(...a);
      },
      report: async (...a) => {
        await catchUp();
        return engine.report(...a);
      },
      pageEvents: async (...a) => {
        await catchUp();
        return engine.pageEvents(...a);
      },
      countEvents: async (...a) => {
        await catchUp();
        return engine.countEvents(...a);
      },
    },
  };
}
