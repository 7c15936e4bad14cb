/**
 * The connectors' webhook door: `POST /api/v1/connectors/<connector_id>`, one
 * encapsulated plugin with its own raw-body parser (signatures cover the
 * exact bytes) and its own body limit. No API key: the provider's signature
 * is the credential. 404 for an unknown connector (before the body is read),
 * 400 for a missing, malformed or wrong signature or a stale timestamp, 413
 * over the limit, 200 once what the event says is durable (or when it was
 * applied before, or is of a type the connector does not use), 503 while the
 * store is unavailable so the provider retries.
 *
 * A request's lifecycle, top to bottom: onRequest (the connector is looked
 * up and put on `request.connector`) → content-type parsing (any type, kept
 * as raw bytes; Fastify's body limit) → handler (the signature, then strict
 * JSON, then the connectors application) → errors: the server's REST
 * envelope.
 */
import type { FastifyPluginAsync } from "fastify";
import type { Clock } from "../../domain/clock.js";
import type { ConnectorsApp } from "../../domain/connectors/connectors-app.js";
import type { Obj } from "../../domain/connectors/json-access.js";
import { errors } from "../../domain/errors.js";
import type { ConnectorRecord } from "../../domain/store/store.js";
import { parseJsonBody } from "../../edge/decode-json.js";
import { doorErrors } from "../../edge/door-errors.js";
import type { BodyLimitRouteConfig } from "../../edge/fastify-errors.js";
import type { Observer } from "../../metrics/observer.js";
import { registerMethodNotAllowed } from "../method-not-allowed.js";
import { CONNECTOR_BODY_LIMIT, CONNECTOR_ROUTE } from "./connector-limits.js";
import { VERIFIERS } from "./verify-signatures.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The connectors door's connector; null before its onRequest ran. */
    connector: ConnectorRecord | null;
  }
}

/** What the connectors door calls. */
export interface ConnectorsDoorOptions {
  connectors: ConnectorsApp;
  clock: Clock;
  metrics: Observer;
}

/** The connectors door plugin. */
export const connectorsDoor: FastifyPluginAsync<ConnectorsDoorOptions> = async (scope, options) => {
  const { connectors, clock, metrics } = options;

  scope.decorateRequest("connector", null);
  // Any content type: the bytes are checked against the signature, then parsed as JSON.
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));

  const config: BodyLimitRouteConfig = { bodyLimit: CONNECTOR_BODY_LIMIT };
  scope.route({
    method: "POST",
    url: CONNECTOR_ROUTE,
    bodyLimit: CONNECTOR_BODY_LIMIT,
    config,
    // The connector is looked up before the body is read: 404 comes before 413.
    onRequest: async function findConnector(request) {
      const { connector_id } = request.params as { connector_id: string };
      request.connector = await connectors.find(connector_id);
    },
    handler: async (request, reply) => {
      const { connector } = request;
      if (!connector) throw errors.internal("no connector on the request");
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      VERIFIERS[connector.provider](raw, request.headers, connector.secret, clock.now());
      const event = parseJsonBody(raw);
      if (typeof event !== "object" || event === null || Array.isArray(event)) {
        throw doorErrors.invalidJson("the body must be a JSON object");
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

  registerMethodNotAllowed(scope, { url: CONNECTOR_ROUTE, allow: ["POST"], use: "POST" });
};
