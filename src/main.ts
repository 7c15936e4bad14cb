/**
 * Entry point: `npm start`. With WORKERS=N (N > 1) the primary process
 * prepares the store once and forks N server processes that share the port
 * (node:cluster); each opens its own store connection.
 */
import cluster from "node:cluster";
import { createApp } from "./app.js";
import { type Config, ConfigError, loadConfig } from "./config.js";
import { systemClock } from "./domain/clock.js";
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
    storeTimeoutMs: config.storeTimeoutMs,
  });
  const app = await createApp({ config, store, clock: systemClock });
  await app.listen();

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.fastify.log.info({ signal }, "shutting down");
    app.close().then(
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

async function main(): Promise<void> {
  const config = readConfig();
  if (config.workers > 1 && cluster.isPrimary) await supervise(config);
  else await serve(config);
}

main().catch((err: unknown) => {
  process.stderr.write(`start-up failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
