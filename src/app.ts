/**
 * The service, wired: the services (store, domain applications, readiness;
 * src/services.ts) behind the server and its doors (src/server.ts), with
 * listen and the order of a graceful close. Tests build it with their own
 * store, clock and settings.
 */
import type { FastifyInstance } from "fastify";
import type { AnalyticsEngine } from "./domain/analytics/query-plan.js";
import type { EventsApp } from "./domain/events/events-app.js";
import { SETUP_PATH } from "./domain/first-run.js";
import type { PaymentsApp } from "./domain/payments/payments-app.js";
import type { RetentionPruner } from "./domain/retention.js";
import type { OnePortServer } from "./http/one-port.js";
import { serviceVersion } from "./lib/version.js";
import type { Observer } from "./metrics/observer.js";
import { createServer } from "./server.js";
import { type Analytics, buildServices, type ServiceDeps, type ServiceLog } from "./services.js";
import { redactStoreUrl } from "./start-up.js";

/** What the service is built from: main.ts passes the real ones, tests their own. */
export interface AppDeps extends ServiceDeps {
  /** Where JSON logs go (stdout when unset); tests read them. */
  logStream?: { write(line: string): void };
}

/** The built service: its Fastify instance, one-port server and application functions. */
export interface App {
  fastify: FastifyInstance;
  server: OnePortServer;
  payments: PaymentsApp;
  events: EventsApp;
  metrics: Observer;
  /** The retention pruner (runs on its timer once listening, unless turned off); tests call `runOnce()`. */
  pruner: RetentionPruner;
  /**
   * The first run: when the store has no account, issues a new one-time
   * setup token and returns the setup page's URL on `port`; undefined once
   * an account exists. main.ts prints it, once per start.
   */
  setupUrl(port: number): Promise<string | undefined>;
  /**
   * The analytics store, feed and engine, while this process owns them
   * (a standby server takes them over when the owner's lease lapses); tests
   * run `feed.runOnce()`.
   */
  readonly analytics?: Analytics;
  /**
   * The engine of this process's analytics ownership (answering unavailable
   * while it stands by); absent when this process may never own the store.
   * main.ts serves it to the other workers.
   */
  analyticsEngine?: AnalyticsEngine;
  /** Listens on config.host:config.port; resolves with the bound port. */
  listen(): Promise<number>;
  /**
   * Graceful stop: stop accepting, finish in-flight requests, write what is
   * queued, close the store.
   */
  close(): Promise<void>;
}

/** The URL a person on this machine opens: a wildcard address is reached on loopback. */
function baseUrl(host: string, port: number): string {
  const reachable = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;
}

/**
 * Builds the service: the services, then the server with every door.
 * Nothing listens until `listen()`; `close()` stops it gracefully.
 */
export async function createApp(deps: AppDeps): Promise<App> {
  const { config } = deps;
  let log: ServiceLog | undefined;
  const services = await buildServices(deps, () => log);
  const { store, readiness, payments, events, metrics, pruner, analytics } = services;
  const { fastify, server } = await createServer(services, {
    ...(deps.logStream ? { logStream: deps.logStream } : {}),
  });
  log = fastify.log;
  let closing: Promise<void> | undefined;

  return {
    fastify,
    server,
    payments,
    events,
    metrics,
    pruner,
    async setupUrl(port) {
      const token = await services.firstRun.issueSetupToken();
      if (token === undefined) return undefined;
      return `${baseUrl(config.host, port)}${SETUP_PATH}?token=${token}`;
    },
    get analytics() {
      return analytics?.current();
    },
    ...(analytics ? { analyticsEngine: analytics.engine } : {}),
    async listen() {
      const address = await server.listen(config.port, config.host);
      if (services.pruneEvents) pruner.start();
      // The feed when this process owns the store; the lease's renewal or watch; the rewrites.
      analytics?.start();
      // The line an operator looks for first: where, which build, which store, admin on or off.
      const host = config.host.includes(":") ? `[${config.host}]` : config.host;
      fastify.log.info(
        {
          url: `http://${host}:${address.port}`,
          port: address.port,
          version: serviceVersion(),
          store: store.kind,
          storeUrl: redactStoreUrl(config.storeUrl),
          adminToken: config.adminToken === undefined ? "unset" : "set",
        },
        "listening",
      );
      return address.port;
    },
    close() {
      closing ??= (async () => {
        // Health watchers hear NOT_SERVING and their streams end, so they do not hold the close.
        readiness.markClosing();
        // The pass in progress ends between two steps; the store closes after it.
        await pruner.stop();
        await server.close(config.shutdownTimeoutMs);
        await Promise.allSettled([payments.drain(), events.drain()]);
        await fastify.close();
        await analytics?.close();
        await store.close();
      })();
      return closing;
    },
  };
}
