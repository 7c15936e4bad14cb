/**
 * The REST door: `POST /api/v1/payments` and `POST /api/v1/events`, their
 * paths and verbs read from the google.api.http annotations of the proto
 * services (one source of truth). One encapsulated plugin; a request's
 * lifecycle, top to bottom:
 *
 * 1. onRequest (the route's): authenticate the key for the method's scope,
 *    before the body is read, so 401/403 come before 413 and 400; the
 *    principal goes on the request (`request.principal`).
 * 2. preParsing (this scope's): a compressed body is decompressed, the
 *    route's body limit applied to the compressed and the decompressed bytes.
 * 3. content-type parsing: JSON (`application/json`, `text/plain`) kept as
 *    raw bytes, anything else 415; Fastify applies the body limit (413).
 * 4. handler: strict decoding against the request message, then the same
 *    application function as the Connect door; the answer.
 * 5. errors: the server's REST envelope (src/server.ts).
 * Other verbs on these paths: 405 with Allow.
 */

import { Readable } from "node:stream";
import type { DescMethod } from "@bufbuild/protobuf";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { EventsService } from "../../../gen/ingest/v1/events_pb.js";
import { PaymentsService } from "../../../gen/ingest/v1/payments_pb.js";
import type { Authenticator } from "../../domain/auth.js";
import { errors } from "../../domain/errors.js";
import type { EventsApp } from "../../domain/events/events-app.js";
import type { PaymentsApp } from "../../domain/payments/payments-app.js";
import type { KeyPrincipal, Scope } from "../../domain/store/store.js";
import { bodyLimitOf } from "../../edge/body-limits.js";
import { acceptRawJsonBodies, decodeStrict, parseJsonBody } from "../../edge/decode-json.js";
import { decompressBody, readLimited, restEncodingOf } from "../../edge/decompress.js";
import type { BodyLimitRouteConfig } from "../../edge/fastify-errors.js";
import { httpRuleOf } from "../http-rule.js";
import { registerMethodNotAllowed } from "../method-not-allowed.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The REST door's authenticated key; null before its onRequest ran. */
    principal: KeyPrincipal | null;
  }
}

interface RestMethod {
  method: DescMethod;
  scope: Scope;
  handle(
    principal: KeyPrincipal,
    body: Record<string, unknown>,
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<unknown>;
}

/** What the REST door calls. */
export interface RestDoorOptions {
  auth: Authenticator;
  payments: PaymentsApp;
  events: EventsApp;
}

/** The methods the door serves and how each answers. */
function restMethods({ payments, events }: RestDoorOptions): RestMethod[] {
  return [
    {
      method: PaymentsService.method.recordPayment,
      scope: "payments",
      async handle(principal, body, _request, reply) {
        const { paymentId } = await payments.record(principal, body);
        return reply.code(200).send({ ok: true, data: { payment_id: paymentId } });
      },
    },
    {
      method: EventsService.method.recordEvents,
      scope: "events",
      async handle(principal, body, request, reply) {
        const result = await events.record(principal, body, {
          ip: request.ip,
          userAgent: request.headers["user-agent"],
        });
        if (result.dropped > 0) reply.header("x-ingest-dropped", `${result.dropped} bot`);
        reply.header("x-quota-remaining", String(result.quotaRemaining));
        if (result.tsReplaced > 0) reply.header("x-ingest-ts-replaced", String(result.tsReplaced));
        return reply.code(204).send();
      },
    },
  ];
}

/** The REST door plugin. */
export const restDoor: FastifyPluginAsync<RestDoorOptions> = async (scope, options) => {
  scope.decorateRequest("principal", null);
  acceptRawJsonBodies(scope);
  // Compressed bodies (server-side SDKs gzip batches): the route's body limit applies to the
  // decompressed bytes, and the compressed bytes may not exceed it either.
  scope.addHook("preParsing", async function decompressRestBody(request, _reply, payload) {
    const encoding = restEncodingOf(request.headers["content-encoding"]);
    if (encoding === undefined) return payload;
    const limit = request.routeOptions.bodyLimit;
    const compressed = await readLimited(payload, limit);
    const plain = Readable.from([decompressBody(compressed, encoding, limit)]);
    // Fastify checks Content-Length against this, and the limit against what plain yields.
    return Object.assign(plain, { receivedEncodedLength: compressed.length });
  });

  for (const m of restMethods(options)) {
    const { verb, path } = httpRuleOf(m.method);
    const bodyLimit = bodyLimitOf(m.method.parent.typeName, m.method.name);
    const config: BodyLimitRouteConfig = { bodyLimit };
    scope.route({
      method: verb,
      url: path,
      bodyLimit,
      config,
      onRequest: async function authenticate(request) {
        request.principal = await options.auth.authenticate(request.headers.authorization, m.scope);
      },
      handler: async (request, reply) => {
        const { principal } = request;
        if (!principal) throw errors.internal("unauthenticated request");
        const body = decodeStrict(m.method.input, parseJsonBody(request.body as Buffer));
        return m.handle(principal, body, request, reply);
      },
    });
    registerMethodNotAllowed(scope, { url: path, allow: [verb], use: verb });
  }
};
