/**
 * The RPC door: Connect, gRPC-Web and gRPC on the same routes
 * (`/package.Service/Method`), mounted with @connectrpc/connect-fastify in
 * one encapsulated plugin. A request's lifecycle, top to bottom:
 *
 * 1. onRoute (when connect-es registers a route): the method and its body
 *    limit go on the route (src/rpc/body-guard.ts).
 * 2. onRequest: another verb than POST (GET too for side-effect-free
 *    methods) → 405; a content type no RPC protocol speaks → 415.
 * 3. preParsing: the body read once within the limit, decompressed, decoded
 *    strictly; refused in the request's protocol, or handed back to
 *    connect-es (src/rpc/replay-body.ts).
 * 4. preValidation: a decoded Connect JSON body becomes the parsed body.
 * 5. connect-es: decodes the message, runs the interceptors, outermost
 *    first: the outcome for the log (src/rpc/log-outcome.ts), metrics, the
 *    error mapping (src/rpc/connect-errors.ts), ADMIN_TOKEN for AdminService
 *    and ReportsService (src/rpc/admin-auth.ts); then the handler
 *    (src/rpc/*-service.ts), which calls the same application function as
 *    the REST door.
 * 6. errors raised outside connect-es (hooks, Fastify's own): answered in
 *    the request's protocol by this scope's error handler.
 * Paths of the RPC shape that match no route are answered `unimplemented` by
 * the server's not-found handler ({@link answerUnknownRpc}).
 */
import { createContextValues } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { ServerReflection as ReflectionV1 } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ReflectionV1alpha } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { EventsService } from "../../gen/ingest/v1/events_pb.js";
import { PaymentsService } from "../../gen/ingest/v1/payments_pb.js";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import type { Admin } from "../domain/admin.js";
import type { AnalyticsApp } from "../domain/analytics/analytics-app.js";
import type { Authenticator } from "../domain/auth.js";
import type { Erasure } from "../domain/erasure.js";
import type { EventsApp } from "../domain/events/events-app.js";
import type { PaymentsApp } from "../domain/payments/payments-app.js";
import type { Reports } from "../domain/reports.js";
import { createReportsAccess } from "../domain/reports-access.js";
import type { Retention } from "../domain/retention.js";
import { BODY_LIMITS, DEFAULT_BODY_LIMIT } from "../edge/body-limits.js";
import { doorErrors } from "../edge/door-errors.js";
import { fromFastifyError } from "../edge/fastify-errors.js";
import type { Readiness } from "../lib/readiness.js";
import { scrub } from "../lib/scrub.js";
import { type Observer, rpcSlotKey } from "../metrics/observer.js";
import { createAdminAuthInterceptor } from "./admin-auth.js";
import { createAdminService } from "./admin-service.js";
import { registerRpcBodyGuard } from "./body-guard.js";
import { clientInfoKey } from "./client-info.js";
import { createErrorInterceptor } from "./connect-errors.js";
import { createEventsService } from "./events-service.js";
import { createHealthService } from "./health-service.js";
import { createOutcomeInterceptor, logRequestKey } from "./log-outcome.js";
import { createPaymentsService } from "./payments-service.js";
import { createReflectionServices } from "./reflection-service.js";
import { createReportsAuthInterceptor } from "./reports-auth.js";
import { createReportsService } from "./reports-service.js";
import { answerRpcError } from "./rpc-protocol.js";

/** What the RPC door calls and reads. */
export interface RpcDoorOptions {
  config: { adminToken: string | undefined; grpcReflection: boolean };
  auth: Authenticator;
  payments: PaymentsApp;
  events: EventsApp;
  admin: Admin;
  erasure: Erasure;
  retention: Retention;
  reports: Reports;
  queries: AnalyticsApp;
  readiness: Readiness;
  metrics: Observer;
}

/** The RPC door plugin. */
export const rpcDoor: FastifyPluginAsync<RpcDoorOptions> = async (scope, options) => {
  const { config, auth, payments, events, admin, erasure, retention, reports, queries } = options;
  const { readiness, metrics } = options;
  const apiServices = [PaymentsService, EventsService, AdminService, ReportsService];

  registerRpcBodyGuard(scope, [...apiServices, Health], {
    limits: BODY_LIMITS,
    defaultLimit: DEFAULT_BODY_LIMIT,
  });
  // Errors Fastify or a hook raises on an RPC route are answered in the request's protocol too.
  scope.setErrorHandler((err: FastifyError, request, reply) => {
    const d = fromFastifyError(err, request);
    if (d.kind === "internal") request.log.error({ err: scrub(err) }, "request failed");
    return answerRpcError(request, reply, d);
  });

  await scope.register(fastifyConnectPlugin, {
    routes(router) {
      router.service(PaymentsService, createPaymentsService({ auth, payments }));
      router.service(EventsService, createEventsService({ auth, events }));
      router.service(AdminService, createAdminService({ admin, erasure, retention }));
      router.service(ReportsService, createReportsService({ reports, queries }));
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
      createErrorInterceptor((err) => scope.log.error({ err: scrub(err) }, "rpc failed")),
      createAdminAuthInterceptor(config.adminToken, [AdminService]),
      createReportsAuthInterceptor(
        createReportsAccess({ adminToken: config.adminToken, auth }),
        ReportsService,
      ),
    ],
    jsonOptions: { ignoreUnknownFields: false },
    readMaxBytes: 64 * 1024,
    contextValues: (req) =>
      createContextValues()
        .set(clientInfoKey, { ip: req.ip, userAgent: req.headers["user-agent"] })
        .set(logRequestKey, req)
        .set(rpcSlotKey, metrics.rpcSlot(req)),
  });
};

/**
 * Answers a request that matched no route on an RPC-shaped path
 * (`/package.Service/Method`) with `unimplemented`, in its protocol.
 */
export function answerUnknownRpc(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = request.url.split("?")[0] ?? "";
  const [service = "", method = ""] = path.slice(1).split("/");
  return answerRpcError(request, reply, doorErrors.unknownMethod(service, method));
}
