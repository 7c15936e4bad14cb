/**
 * The connectors' webhook door: `POST /api/v1/connectors/<connector_id>`, one
 * encapsulated plugin with its own raw-body parser (signatures cover the
 * exact bytes) and its own body limit. No API key: the provider's signature
 * is the credential. 404 for an unknown connector (before the body is read),
 * 400 for a missing, malformed or wrong signature or a stale timestamp, 413
 * over the limit, 200 once what the event says is durable (or when it was
 * applied before, or is of a type the connector does not use), 503 while the
 * store is unavailable so the provider retries.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Clock } from "../../domain/clock.js";
import { createConnectorsApp } from "../../domain/connectors/connectors-app.js";
import type { Obj } from "../../domain/connectors/json-access.js";
import { errors } from "../../domain/errors.js";
import type { PaymentsApp } from "../../domain/payments/payments-app.js";
import type { Observer } from "../../metrics/observer.js";
import type { ConnectorRecord, Store } from "../../store/port.js";
import { parseJsonBody } from "../decode-json.js";
import { type RestRouteConfig, sendError } from "../envelope.js";
import { CONNECTOR_BODY_LIMIT, CONNECTOR_ROUTE } from "./connector-limits.js";
import { VERIFIERS } from "./verify-signatures.js";

export interface ConnectorRoutesOptions {
  store: Store;
  payments: PaymentsApp;
  clock: Clock;
  metrics: Observer;
}

/** Registers the webhook door; `fastify.register(connectorRoutes, {…})` keeps it in its own scope. */
export async function connectorRoutes(
  scope: FastifyInstance,
  options: ConnectorRoutesOptions,
): Promise<void> {
  const { clock, metrics } = options;
  const connectors = createConnectorsApp(options);
  const found = new WeakMap<FastifyRequest, ConnectorRecord>();

  // Any content type: the bytes are checked against the signature, then parsed as JSON.
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));

  const config: RestRouteConfig = { bodyLimit: CONNECTOR_BODY_LIMIT };
  scope.route({
    method: "POST",
    url: CONNECTOR_ROUTE,
    bodyLimit: CONNECTOR_BODY_LIMIT,
    config,
    // The connector is looked up before the body is read: 404 comes before 413.
    onRequest: async (request) => {
      const { connector_id } = request.params as { connector_id: string };
      found.set(request, await connectors.find(connector_id));
    },
    handler: async (request, reply) => {
      const connector = found.get(request) as ConnectorRecord;
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      VERIFIERS[connector.provider](raw, request.headers, connector.secret, clock.now());
      const event = parseJsonBody(raw);
      if (typeof event !== "object" || event === null || Array.isArray(event)) {
        throw errors.invalidJson("the body must be a JSON object");
      }
      const webhookId = request.headers["webhook-id"];
      const result = await connectors.apply(connector, event as Obj, {
        webhookId: typeof webhookId === "string" ? webhookId : undefined,
      });
      metrics.connectorEvent(connector.provider, result.outcome);
      return reply.code(200).send({
        ok: true,
        data: { event_id: result.eventId ?? null, type: result.type, outcome: result.outcome },
      });
    },
  });
  const notAllowed = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header("allow", "POST");
    return sendError(
      reply,
      errors.methodNotAllowed(request.method, request.url.split("?")[0] ?? "", "POST"),
    );
  };
  scope.route({
    method: ["GET", "PUT", "PATCH", "DELETE", "OPTIONS"],
    url: CONNECTOR_ROUTE,
    onRequest: notAllowed,
    handler: notAllowed,
  });
}
