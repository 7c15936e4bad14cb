/**
 * The one place that wires the service: store, clock, application functions
 * and every door on one Fastify instance and one port (REST, the public
 * collect endpoint and tracking script, Connect/gRPC-Web/gRPC with health and
 * reflection, the probes and the API reference). Tests build it with their
 * own store, clock and settings.
 */
import { randomUUID } from "node:crypto";
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { createContextValues } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import Fastify, { type FastifyError, type FastifyInstance } from "fastify";
import { file_google_rpc_error_details } from "../gen/google/rpc/error_details_pb.js";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import { ServerReflection as ReflectionV1 } from "../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ReflectionV1alpha } from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
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
import { DomainError, errors } from "./domain/errors.js";
import type { EventsApp } from "./domain/events/events-app.js";
import { createEventsApp } from "./domain/events/events-app.js";
import type { PaymentsApp } from "./domain/payments/payments-app.js";
import { createPaymentsApp } from "./domain/payments/payments-app.js";
import { createReports } from "./domain/reports.js";
import { registerApiReference } from "./http/api-reference.js";
import { BODY_LIMITS, DEFAULT_BODY_LIMIT } from "./http/body-limits.js";
import { registerCollectRoutes } from "./http/collect-routes.js";
import { registerDuplicateCredentialsGuard } from "./http/duplicate-credentials.js";
import { fromFastifyError, sendError } from "./http/envelope.js";
import { createOnePortServer, type OnePortServer } from "./http/one-port.js";
import { outcomeOf } from "./http/request-outcome.js";
import { registerRestRoutes } from "./http/rest-routes.js";
import {
  looksLikeRpc,
  registerRpcBodyGuard,
  rpcRouteOf,
  sendRpcDomainError,
} from "./http/rpc-body-guard.js";
import {
  loadTrackerBundle,
  registerTrackerScript,
  type TrackerBundle,
} from "./http/tracker-script.js";
import { createReadiness } from "./lib/readiness.js";
import { serviceVersion } from "./lib/version.js";
import { noopObserver, type Observer, rpcSlotKey } from "./metrics/observer.js";
import { createAdminService } from "./rpc/admin-service.js";
import { clientInfoKey } from "./rpc/client-info.js";
import { createErrorInterceptor } from "./rpc/connect-errors.js";
import { createEventsService } from "./rpc/events-service.js";
import { createHealthService } from "./rpc/health-service.js";
import { createOutcomeInterceptor, logRequestKey } from "./rpc/log-outcome.js";
import { createPaymentsService } from "./rpc/payments-service.js";
import { createReflectionServices } from "./rpc/reflection-service.js";
import { createReportsService } from "./rpc/reports-service.js";
import { redactStoreUrl } from "./start-up.js";
import { cacheDirectory } from "./store/directory-cache.js";
import { guardStore } from "./store/guarded-store.js";
import type { Store } from "./store/port.js";

/** What the service is built from: main.ts passes the real ones, tests their own. */
export interface AppDeps {
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

/**
 * Builds the service: guards the store, creates the application functions
 * and registers every door. Nothing listens until `listen()`; `close()` stops
 * it gracefully.
 */
export async function createApp(deps: AppDeps): Promise<App> {
  const { config, clock } = deps;
  let log: FastifyInstance["log"] | undefined;
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
        if (available) log?.warn({ store: deps.store.kind }, "store available again");
        else log?.warn({ store: deps.store.kind, err: scrub(cause) }, "store unavailable");
      },
      onError: (operation) => metrics.storeError(operation),
    }),
  );
  const queue = {
    capacity: config.ingestQueueCapacity,
    batchMax: config.ingestBatchMax,
    flushMs: config.ingestFlushMs,
    // SQLite applies a batch's transaction when the batch starts and then waits for the WAL
    // sync off the JS thread, so the next batches may start meanwhile: commits stay in order.
    // MongoDB's writes are network calls that could land out of order (a payment re-sent in
    // the next batch must win), so its batches go one at a time.
    inFlight: deps.store.kind === "sqlite" ? config.ingestBatchesInFlight : 1,
  };
  const auth = createAuthenticator({ store, clock });
  const admin = createAdmin({ store, clock });
  const reports = createReports({ store, clock });
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
    }),
  );

  const readiness = createReadiness({ ping: () => store.ping(), timeoutMs: 2_000 });
  metrics.setReadinessProbe(() => readiness.check());

  let server: OnePortServer | undefined;
  const fastify = Fastify({
    logger: {
      level: config.logLevel,
      ...(deps.logStream ? { stream: deps.logStream } : {}),
      // Never a key, an Authorization header, a body or a raw IP: only these fields.
      serializers: {
        req: (req) => ({ method: req.method, url: req.url.split("?")[0] }),
        // Fastify passes the reply: its status plus the error code the request ended with.
        res: (reply) => ({
          statusCode: reply.statusCode,
          ...(reply.request ? outcomeOf(reply.request) : {}),
        }),
      },
    },
    genReqId: (req) => requestId(req.headers["x-request-id"]),
    requestIdHeader: false,
    // Fastify takes a hop count too, though its types omit it.
    trustProxy: config.trustProxy as boolean | string,
    return503OnClosing: true,
    clientErrorHandler: writeClientError,
    serverFactory: (handler) => {
      server = createOnePortServer(handler as Parameters<typeof createOnePortServer>[0], {
        maxConnections: config.maxConnections,
        headersTimeoutMs: config.headersTimeoutMs,
        requestTimeoutMs: config.requestTimeoutMs,
        idleTimeoutMs: config.idleTimeoutMs,
        maxConcurrentStreams: config.http2MaxStreams,
      });
      return server.http1;
    },
  });

  log = fastify.log;

  fastify.addHook("onRequest", async (request, reply) => {
    // First of all: the directory version is read again for every new request.
    store.beginRequest();
    reply.header("x-request-id", request.id);
  });
  registerDuplicateCredentialsGuard(fastify);
  metrics.observeHttp(fastify);

  fastify.setErrorHandler((err: FastifyError, request, reply) => {
    const d = fromFastifyError(err, request);
    if (d.kind === "internal") request.log.error({ err: scrub(err) }, "request failed");
    // An RPC route answers in its protocol, even for errors Fastify raises itself.
    return rpcRouteOf(request) ? sendRpcDomainError(request, reply, d) : sendError(reply, d);
  });
  fastify.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0] ?? "";
    // gRPC and Connect clients get their own "unimplemented", not the REST envelope.
    if (looksLikeRpc(request)) {
      const [service = "", method = ""] = path.slice(1).split("/");
      return sendRpcDomainError(request, reply, errors.unknownMethod(service, method));
    }
    return sendError(reply, new DomainError("not_found", `no route for ${request.method} ${path}`));
  });

  fastify.get("/healthz", async () => ({ ok: true, data: { status: "alive" } }));
  fastify.get("/readyz", async (_request, reply) => {
    if (await readiness.check()) return { ok: true, data: { status: "ready", store: store.kind } };
    return sendError(reply, new DomainError("unavailable", "the store cannot take writes", 2));
  });

  // Probes are read-only: other methods get 405 with Allow, as on the API paths.
  for (const url of ["/healthz", "/readyz"]) {
    fastify.route({
      method: ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
      url,
      onRequest: async (request, reply) => {
        reply.header("allow", "GET, HEAD");
        return sendError(reply, errors.methodNotAllowed(request.method, url, "GET"));
      },
      handler: async () => undefined,
    });
  }

  await registerApiReference(fastify);
  registerRestRoutes(fastify, { auth, payments, events });
  registerCollectRoutes(fastify, {
    events,
    rateLimit: { perMinute: config.collectRateLimit, clock, shared: deps.collectLimiter },
  });
  registerTrackerScript(fastify, deps.trackerBundle ?? loadTrackerBundle());
  const apiServices = [PaymentsService, EventsService, AdminService, ReportsService];
  registerRpcBodyGuard(fastify, [...apiServices, Health], {
    limits: BODY_LIMITS,
    defaultLimit: DEFAULT_BODY_LIMIT,
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
      router.service(
        Health,
        createHealthService({ readiness, services: apiServices.map((s) => s.typeName) }),
      );
      if (config.grpcReflection) {
        const served = [...apiServices, Health, ReflectionV1, ReflectionV1alpha];
        const reflection = createReflectionServices(served, [file_google_rpc_error_details]);
        router.service(ReflectionV1, reflection.v1);
        router.service(ReflectionV1alpha, reflection.v1alpha);
      }
    },
    interceptors: [
      createOutcomeInterceptor(),
      metrics.rpcInterceptor,
      createErrorInterceptor((err) => fastify.log.error({ err: scrub(err) }, "rpc failed")),
    ],
    jsonOptions: { ignoreUnknownFields: false },
    readMaxBytes: 64 * 1024,
    contextValues: (req) =>
      createContextValues()
        .set(clientInfoKey, { ip: req.ip, userAgent: req.headers["user-agent"] })
        .set(logRequestKey, req)
        .set(rpcSlotKey, metrics.rpcSlot(req)),
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
    metrics,
    async listen() {
      const address = await srv.listen(config.port, config.host);
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

/** What the log says of an error: never its message (which may quote input). */
interface ScrubbedError {
  type: string;
  /** A database's error code (e.g. MongoDB's 121, document validation failed). */
  code?: string | number;
  stack?: string;
  /** What caused it (a store's refusal carries the driver's error). */
  cause?: ScrubbedError;
}

/** An error for the log: its type, code, call sites and cause, not its message. */
function scrub(err: unknown, depth = 0): ScrubbedError {
  if (!(err instanceof Error)) {
    const code = (err as { code?: unknown } | null)?.code;
    return { type: typeof err, ...(isCode(code) ? { code } : {}) };
  }
  const code = (err as { code?: unknown }).code;
  const cause = (err as { cause?: unknown }).cause;
  return {
    type: err.name,
    ...(isCode(code) ? { code } : {}),
    stack: err.stack?.split("\n").slice(1).join("\n"),
    ...(cause !== undefined && depth < 3 ? { cause: scrub(cause, depth + 1) } : {}),
  };
}

function isCode(code: unknown): code is string | number {
  return typeof code === "number" || (typeof code === "string" && /^[\w.-]{1,64}$/.test(code));
}
