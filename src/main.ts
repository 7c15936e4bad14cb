/**
 * Entry point: `npm start`. With WORKERS=N (N > 1) the primary process
 * prepares the store once and forks N server processes that share the port
 * (node:cluster); each opens its own store connection.
 */
import cluster from "node:cluster";
import { pino } from "pino";
import { createApp } from "./app.js";
import { createWorkerRateLimiter, serveRateLimits } from "./cluster/rate-limiter.js";
import { type Config, ConfigError, loadConfig } from "./config.js";
import { systemClock } from "./domain/clock.js";
import type { MetricsServer } from "./metrics/metrics-server.js";
import { openStore } from "./store/open-store.js";

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

/** One server process: open the store, serve, stop gracefully on a signal. */
async function serve(config: Config): Promise<void> {
  const store = await openStore(config.storeUrl, {
    sqliteBusyTimeoutMs: config.sqliteBusyTimeoutMs,
  });
  // Under WORKERS the primary holds the collect endpoint's rate limits for every worker.
  const collectLimiter = cluster.isWorker ? createWorkerRateLimiter() : undefined;
  // prom-client is loaded only when metrics are served (METRICS_PORT).
  const metrics =
    config.metricsPort === undefined
      ? undefined
      : (await import("./metrics/metrics.js")).createMetrics();
  const app = await createApp({ config, store, clock: systemClock, collectLimiter, metrics });
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
  await app.listen();

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.fastify.log.info({ signal }, "shutting down");
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

/** The cluster primary: migrate once, fork, restart crashed workers, relay signals. */
async function supervise(config: Config): Promise<void> {
  // Schema creation and migrations run once, before any worker opens the store.
  await (
    await openStore(config.storeUrl, { sqliteBusyTimeoutMs: config.sqliteBusyTimeoutMs })
  ).close();
  if (config.collectRateLimit > 0) {
    serveRateLimits(cluster, { perMinute: config.collectRateLimit, now: systemClock.now });
  }
  if (config.metricsPort !== undefined) {
    const { clusterSource } = await import("./metrics/metrics-server.js");
    await serveMetrics(config, config.metricsPort, clusterSource());
  }
  let stopping = false;
  for (let i = 0; i < config.workers; i++) cluster.fork();
  cluster.on("exit", (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    process.stderr.write(
      `worker ${worker.process.pid} exited (${signal ?? code}); starting another\n`,
    );
    cluster.fork();
  });
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) process.exit(0);
    for (const w of workers) w?.process.kill(signal);
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
  const config = readConfig();
  if (config.workers > 1 && cluster.isPrimary) await supervise(config);
  else await serve(config);
}

main().catch((err: unknown) => {
  process.stderr.write(`start-up failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
