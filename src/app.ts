/**
 * The one place that wires the service: stores, clock, application functions
 * and both doors (REST and Connect) on one Fastify instance. Tests build it
 * with their own store, clock and settings.
 */
import { randomUUID } from "node:crypto";
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { createContextValues } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import Fastify, { type FastifyError, type FastifyInstance } from "fastify";
import { AdminService } from "../gen/ingest/v1/admin_pb.js";
import { EventsService } from "../gen/ingest/v1/events_pb.js";
import { PaymentsService } from "../gen/ingest/v1/payments_pb.js";
import { ReportsService } from "../gen/ingest/v1/reports_pb.js";
import type { RateLimiter } from "./cluster/rate-limiter.js";
import type { Config } from "./config.js";
import { createAdmin } from "./domain/admin.js";
import { createAttributor } from "./domain/attribution/attribute.js";
import { createAuthenticator } from "./domain/auth.js";
import type { Clock } from "./domain/clock.js";
import { DomainError } from "./domain/errors.js";
import type { EventsApp } from "./domain/events/events-app.js";
import { createEventsApp } from "./domain/events/record-events.js";
import type { PaymentsApp } from "./domain/payments/payments-app.js";
import { createPaymentsApp } from "./domain/payments/record-payment.js";
import { createReports } from "./domain/reports.js";
import { registerCollectRoutes } from "./http/collect-routes.js";
import { fromFastifyError, sendError } from "./http/envelope.js";
import { createOnePortServer, type OnePortServer } from "./http/one-port.js";
import { registerRestRoutes } from "./http/rest-routes.js";
import { registerRpcBodyGuard } from "./http/rpc-body-guard.js";
import {
  loadTrackerBundle,
  registerTrackerScript,
  type TrackerBundle,
} from "./http/tracker-script.js";
import { createAdminService } from "./rpc/admin-service.js";
import { clientInfoKey } from "./rpc/client-info.js";
import { createErrorInterceptor } from "./rpc/connect-errors.js";
import { createEventsService } from "./rpc/events-service.js";
import { createPaymentsService } from "./rpc/payments-service.js";
import { createReportsService } from "./rpc/reports-service.js";
import { cacheDirectory } from "./store/directory-cache.js";
import { guardStore } from "./store/guarded-store.js";
import type { Store } from "./store/port.js";

export interface AppDeps {
  config: Config;
  store: Store;
  clock: Clock;
  /**
   * Where the collect endpoint's per-client limits are counted. Default: in
   * this process, by `clock` (main.ts passes the cluster primary's under WORKERS).
   */
  collectLimiter?: RateLimiter;
  /** The tracking script; default: the bundle `npm run build` wrote to dist/tracker/. */
  trackerBundle?: TrackerBundle;
}

export interface App {
  fastify: FastifyInstance;
  server: OnePortServer;
  payments: PaymentsApp;
  events: EventsApp;
  /** Listens on config.host:config.port; resolves with the bound port. */
  listen(): Promise<number>;
  /**
   * Graceful stop: stop accepting, finish in-flight requests, write what is
   * queued, close the store.
   */
  close(): Promise<void>;
}

/** A request id from X-Request-Id when it is safe to log, a new one otherwise. */
function requestId(header: string | string[] | undefined): string {
  return typeof header === "string" && /^[\w.:-]{1,64}$/.test(header) ? header : randomUUID();
}

export async function createApp(deps: AppDeps): Promise<App> {
  const { config, clock } = deps;
  // Database failures answer 503; an asynchronous store also gets a time limit per call.
  // Keys, sites and accounts come from memory while the store's directory version is unchanged.
  const store = cacheDirectory(
    guardStore(deps.store, {
      timeoutMs: deps.store.kind === "sqlite" ? undefined : config.storeTimeoutMs,
    }),
  );
  const queue = {
    capacity: config.ingestQueueCapacity,
    batchMax: config.ingestBatchMax,
    flushMs: config.ingestFlushMs,
  };
  const auth = createAuthenticator({ store, clock });
  const admin = createAdmin({ store, clock });
  const reports = createReports({ store, clock });
  const attribution = createAttributor({ store, clock });
  const payments = createPaymentsApp({ store, clock, queue, attribution });
  const events = await createEventsApp({
    store,
    clock,
    queue,
    geoipDb: config.geoipDb,
    attribution,
  });

  let server: OnePortServer | undefined;
  const fastify = Fastify({
    logger: {
      level: config.logLevel,
      // Never a key, an Authorization header, a body or a raw IP: only these fields.
      serializers: {
        req: (req) => ({ method: req.method, url: req.url.split("?")[0] }),
        res: (res) => ({ statusCode: res.statusCode }),
      },
    },
    genReqId: (req) => requestId(req.headers["x-request-id"]),
    requestIdHeader: false,
    // Fastify takes a hop count too, though its types omit it.
    trustProxy: config.trustProxy as boolean | string,
    return503OnClosing: true,
    clientErrorHandler: writeClientError,
    serverFactory: (handler) => {
      server = createOnePortServer(handler as Parameters<typeof createOnePortServer>[0]);
      return server.http1;
    },
  });

  fastify.addHook("onRequest", async (request, reply) => {
    reply.header("x-request-id", request.id);
  });

  fastify.setErrorHandler((err: FastifyError, request, reply) => {
    const d = fromFastifyError(err, request);
    if (d.kind === "internal") request.log.error({ err: scrub(err) }, "request failed");
    return sendError(reply, d);
  });
  fastify.setNotFoundHandler((request, reply) =>
    sendError(
      reply,
      new DomainError("not_found", `no route for ${request.method} ${request.url.split("?")[0]}`),
    ),
  );

  fastify.get("/healthz", async () => ({ ok: true, data: { status: "alive" } }));
  fastify.get("/readyz", async (_request, reply) => {
    try {
      await withTimeout(store.ping(), 2_000);
      return { ok: true, data: { status: "ready", store: store.kind } };
    } catch {
      return sendError(reply, new DomainError("unavailable", "the store is not reachable"));
    }
  });

  registerRestRoutes(fastify, { auth, payments, events });
  registerCollectRoutes(fastify, {
    events,
    rateLimit: { perMinute: config.collectRateLimit, clock, shared: deps.collectLimiter },
  });
  registerTrackerScript(fastify, deps.trackerBundle ?? loadTrackerBundle());
  registerRpcBodyGuard(fastify, [PaymentsService, EventsService, AdminService, ReportsService], {
    limits: {
      "ingest.v1.EventsService/RecordEvents": 8 * 1024,
      "ingest.v1.PaymentsService/RecordPayment": 64 * 1024,
    },
    defaultLimit: 64 * 1024,
  });

  await fastify.register(fastifyConnectPlugin, {
    routes(router) {
      router.service(PaymentsService, createPaymentsService({ auth, payments }));
      router.service(EventsService, createEventsService({ auth, events }));
      router.service(AdminService, createAdminService({ admin, adminToken: config.adminToken }));
      router.service(
        ReportsService,
        createReportsService({ reports, adminToken: config.adminToken }),
      );
    },
    interceptors: [
      createErrorInterceptor((err) => fastify.log.error({ err: scrub(err) }, "rpc failed")),
    ],
    jsonOptions: { ignoreUnknownFields: false },
    readMaxBytes: 64 * 1024,
    contextValues: (req) =>
      createContextValues().set(clientInfoKey, {
        ip: req.ip,
        userAgent: req.headers["user-agent"],
      }),
  });

  await fastify.ready();
  // biome-ignore lint/style/noNonNullAssertion: serverFactory ran during Fastify().
  const srv = server!;
  let closing: Promise<void> | undefined;

  return {
    fastify,
    server: srv,
    payments,
    events,
    async listen() {
      const address = await srv.listen(config.port, config.host);
      fastify.log.info({ port: address.port, store: store.kind }, "listening");
      return address.port;
    },
    close() {
      closing ??= (async () => {
        await srv.close(config.shutdownTimeoutMs);
        await Promise.allSettled([payments.drain(), events.drain()]);
        await fastify.close();
        await store.close();
      })();
      return closing;
    },
  };
}

/**
 * An HTTP/1.1 request Node cannot parse (unknown method, control bytes in a
 * header, headers too large) never reaches Fastify: answer it with the error
 * envelope too, instead of Fastify's default `{"error":"Bad Request",…}` body.
 */
function writeClientError(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const [status, message] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "request headers too large"]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "request timed out"]
        : [400, "the request could not be read"];
  const body = JSON.stringify({ ok: false, error: { code: "invalid_input", message } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/** An error for the log: its type and call sites, not its message (which may quote input). */
function scrub(err: unknown): { type: string; stack?: string } {
  if (err instanceof Error)
    return { type: err.name, stack: err.stack?.split("\n").slice(1).join("\n") };
  return { type: typeof err };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("timeout")), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
