/**
 * Entry point: `node dist/src/main.js` (what `npm start` runs after building).
 * With WORKERS=N (N > 1) the primary process opens the store once (SQLite's
 * migrations run; MongoDB's schema, which `admin store migrate` creates, is
 * only verified) and forks N server processes that share the port
 * (node:cluster); each opens its own store connection.
 *
 * Exit codes: 0 after a signal-driven shutdown; 2 when a setting is invalid or
 * names something that cannot be used (one line on stderr naming the
 * variable); 1 for anything else.
 */
import cluster from "node:cluster";
import { pino } from "pino";
import { createApp } from "./app.js";
import { createRemotePort, relayPorts, servePort } from "./cluster/port-relay.js";
import { createWorkerRateLimiter, serveRateLimits } from "./cluster/rate-limiter.js";
import { type Config, ConfigError, loadConfig } from "./config.js";
import type { AnalyticsEngine } from "./domain/analytics/query-plan.js";
import { systemClock } from "./domain/clock.js";
import { errors } from "./domain/errors.js";
import { SETUP_TOKEN_TTL_MS } from "./domain/first-run.js";
import { scrub } from "./lib/scrub.js";
import type { MetricsServer } from "./metrics/metrics-server.js";
import { checkGeoDb, listenError, openStartupStore, StartupError } from "./start-up.js";
import { openStore } from "./store/open-store.js";

/** Consecutive workers that exit before listening, after which the primary gives up. */
const MAX_START_FAILURES = 3;

/**
 * Set to "1" in the environment of the one worker that runs the retention
 * pruner: two pruners would only race for the same rows.
 */
const PRUNER_ENV = "INGEST_RETENTION_PRUNER";

/** The cluster port the analytics engine is served on (src/cluster/port-relay.ts). */
const ANALYTICS_PORT = "analytics";
/**
 * How much longer than ANALYTICS_QUERY_TIMEOUT_MS a worker waits for the
 * owner's answer: the owner's own limit answers first, with its own error;
 * this one catches an owner that cannot answer at all.
 */
const ANALYTICS_IPC_MARGIN_MS = 5_000;

/** A worker tells the primary why it could not start (the line it would print). */
interface StartFailureMessage {
  startFailure: string;
  exitCode: number;
}

/** The one line and exit code for a start-up failure. */
function describeFailure(err: unknown): { line: string; exitCode: number } {
  if (err instanceof ConfigError)
    return { line: `invalid configuration: ${err.message}`, exitCode: 2 };
  if (err instanceof StartupError) return { line: `cannot start: ${err.message}`, exitCode: 2 };
  const message = err instanceof Error ? err.message : String(err);
  return { line: `start-up failed: ${message.split("\n")[0]}`, exitCode: 1 };
}

/** Stops start-up: a worker reports to its primary, a lone process prints. */
function fail(err: unknown): void {
  const { line, exitCode } = describeFailure(err);
  if (cluster.isWorker && process.send) {
    const msg: StartFailureMessage = { startFailure: line, exitCode };
    process.send(msg, () => process.exit(exitCode));
    return;
  }
  process.stderr.write(`${line}\n`);
  process.exit(exitCode);
}

function openConfiguredStore(config: Config) {
  return openStartupStore(config.storeUrl, (url) =>
    openStore(url, {
      sqliteBusyTimeoutMs: config.sqliteBusyTimeoutMs,
      storeTimeoutMs: config.storeTimeoutMs,
    }),
  );
}

/** One server process: open the store, serve, stop gracefully on a signal. */
async function serve(config: Config): Promise<void> {
  await checkGeoDb(config.geoipDb);
  const store = await openConfiguredStore(config);
  // Under WORKERS the primary holds the collect endpoint's rate limits for every worker.
  const collectLimiter = cluster.isWorker ? createWorkerRateLimiter() : undefined;
  // prom-client is loaded only when metrics are served (METRICS_PORT).
  const metrics =
    config.metricsPort === undefined
      ? undefined
      : (await import("./metrics/metrics.js")).createMetrics();
  // Under WORKERS one worker prunes (the primary says which in its environment).
  const firstProcess = !cluster.isWorker || process.env[PRUNER_ENV] === "1";
  const pruneEvents = firstProcess;
  // One worker may own the DuckDB file: the one that prunes (with SQLite it
  // owns it while it holds the data directory's lease, src/analytics-ownership.ts).
  // The other workers reach its engine over the cluster's IPC, unless
  // ANALYTICS_OWNER=false keeps this server out of the choice (docs/mongodb.md).
  const ownsAnalytics = pruneEvents;
  const remoteAnalytics =
    cluster.isWorker && !ownsAnalytics && config.analyticsOwner !== false
      ? createRemotePort<AnalyticsEngine>(ANALYTICS_PORT, {
          // A fixed report's plan may first wait for a lane (report-admission.ts).
          timeoutMs:
            config.analyticsQueryTimeoutMs + config.analyticsReportWaitMs + ANALYTICS_IPC_MARGIN_MS,
          unavailable: (cause) => errors.analyticsUnavailable(cause),
        })
      : undefined;
  const app = await createApp({
    config,
    store,
    clock: systemClock,
    collectLimiter,
    metrics,
    pruneEvents,
    ownsAnalytics,
    ...(remoteAnalytics ? { remoteAnalytics } : {}),
  });
  // The owner worker serves its engine to the others (the primary routes their calls).
  const servedAnalytics =
    cluster.isWorker && app.analyticsEngine
      ? servePort(ANALYTICS_PORT, app.analyticsEngine, {
          onInternalError: (method, err) =>
            app.fastify.log.error({ method, err: scrub(err) }, "analytics call failed"),
          onCall: (method) =>
            app.fastify.log.debug({ method }, "analytics call from another worker"),
          onCancelled: (method) =>
            app.fastify.log.info({ method }, "analytics call cancelled by its caller"),
        })
      : undefined;
  if (servedAnalytics) app.fastify.log.info("serving the analytics engine to the other workers");
  // A worker's metrics are served by the primary, aggregated; a lone process serves its own.
  // A worker joins the primary's scrapes before it listens, so none of its requests is missed.
  let metricsServer: MetricsServer | undefined;
  if (metrics && config.metricsPort !== undefined) {
    const served = await import("./metrics/metrics-server.js");
    if (cluster.isWorker) served.reportToPrimary(metrics.registry);
    else {
      const source = served.registrySource(metrics.registry);
      metricsServer = await serveMetrics(config, config.metricsPort, source);
    }
  }
  let port: number;
  try {
    port = await app.listen();
  } catch (err) {
    await store.close().catch(() => {});
    await metricsServer?.close().catch(() => {});
    throw listenError(err, config.host, config.port);
  }
  // First run: one process (the lone one, or the first worker) prints the
  // one-time setup URL, once, as a plain line (docs/running.md, docs/security.md).
  if (firstProcess) {
    const url = await app.setupUrl(port);
    if (url) {
      process.stdout.write(
        `No account yet: open ${url} to create the owner's account, first site and dashboard key (one use, valid ${SETUP_TOKEN_TTL_MS / 60_000} minutes; a restart prints a new link).\n`,
      );
    }
  }

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.fastify.log.info({ signal }, "shutting down");
    servedAnalytics?.close();
    Promise.all([app.close(), metricsServer?.close()]).then(
      () => process.exit(0),
      (err) => {
        app.fastify.log.error({ type: (err as Error)?.name }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

/**
 * The cluster primary: open the store once, fork, restart crashed workers,
 * relay signals. Workers that keep failing to start (the port is taken, the store
 * refuses them) are not restarted forever: after MAX_START_FAILURES in a row
 * the primary stops the others and exits with the workers' error.
 */
async function supervise(config: Config): Promise<void> {
  await checkGeoDb(config.geoipDb);
  // Once, before any worker opens the store: SQLite's migrations run, MongoDB's schema is checked.
  await (await openConfiguredStore(config)).close();
  // Structured clone on the IPC channel: analytics answers hold bigint (money in minor units).
  cluster.setupPrimary({ serialization: "advanced" });
  // Calls of the workers that do not own the analytics file go to the one that does.
  relayPorts(cluster);
  // Always: the per-site ceilings of the collect door are counted here too.
  serveRateLimits(cluster, {
    perMinute: Math.max(1, config.collectRateLimit),
    now: systemClock.now,
  });
  if (config.metricsPort !== undefined) {
    const { clusterSource } = await import("./metrics/metrics-server.js");
    await serveMetrics(config, config.metricsPort, clusterSource());
  }
  let stopping = false;
  let startFailures = 0;
  let giveUpCode: number | undefined;
  const listened = new Set<number>();
  // The worker that runs the retention pruner; its replacement takes it over.
  let prunerWorker: number | undefined;
  const fork = (pruner: boolean) => {
    const worker = cluster.fork({ [PRUNER_ENV]: pruner ? "1" : "0" });
    if (pruner) prunerWorker = worker.id;
  };
  const reasons = new Map<number, StartFailureMessage>();

  const stopAll = (signal: NodeJS.Signals) => {
    stopping = true;
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) return false;
    for (const w of workers) w?.process.kill(signal);
    return true;
  };

  cluster.on("listening", (worker) => {
    listened.add(worker.id);
    startFailures = 0;
  });
  cluster.on("message", (worker, msg: Partial<StartFailureMessage>) => {
    if (typeof msg?.startFailure === "string") {
      reasons.set(worker.id, { startFailure: msg.startFailure, exitCode: msg.exitCode ?? 1 });
    }
  });
  cluster.on("exit", (worker, code, signal) => {
    const reason = reasons.get(worker.id);
    reasons.delete(worker.id);
    const started = listened.delete(worker.id);
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(giveUpCode ?? 0);
      return;
    }
    if (!started) startFailures += 1;
    const why = reason?.startFailure ?? `exited (${signal ?? code})`;
    if (!started && startFailures >= MAX_START_FAILURES) {
      giveUpCode = reason?.exitCode ?? (typeof code === "number" && code > 0 ? code : 1);
      process.stderr.write(
        `${why} (${startFailures} workers failed to start in a row; giving up)\n`,
      );
      if (!stopAll("SIGTERM")) process.exit(giveUpCode);
      return;
    }
    process.stderr.write(`worker ${worker.process.pid}: ${why}; starting another\n`);
    fork(worker.id === prunerWorker);
  });

  for (let i = 0; i < config.workers; i++) fork(i === 0);
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    if (!stopAll(signal)) process.exit(0);
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

/** Starts the metrics listener on METRICS_HOST:METRICS_PORT. */
async function serveMetrics(
  config: Config,
  port: number,
  source: Parameters<typeof import("./metrics/metrics-server.js").startMetricsServer>[0],
): Promise<MetricsServer> {
  const { startMetricsServer } = await import("./metrics/metrics-server.js");
  const server = await startMetricsServer(source, config.metricsHost, port);
  pino({ level: config.logLevel }).info(
    { host: config.metricsHost, port: server.port },
    "metrics listening",
  );
  return server;
}

async function main(): Promise<void> {
  const config = loadConfig();
  if (config.workers > 1 && cluster.isPrimary) await supervise(config);
  else await serve(config);
}

main().catch(fail);
