/**
 * The REST door. Paths and verbs come from the google.api.http annotations
 * of the proto services (one source of truth); each route authenticates,
 * decodes the body strictly against the request message and calls the same
 * application function as the Connect door.
 */

import { Readable } from "node:stream";
import { type DescMethod, getOption } from "@bufbuild/protobuf";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { http } from "../../gen/google/api/annotations_pb.js";
import { EventsService } from "../../gen/ingest/v1/events_pb.js";
import { PaymentsService } from "../../gen/ingest/v1/payments_pb.js";
import type { Authenticator } from "../domain/auth.js";
import { DomainError, errors } from "../domain/errors.js";
import type { EventsApp } from "../domain/events/events-app.js";
import type { PaymentsApp } from "../domain/payments/payments-app.js";
import type { KeyPrincipal, Scope } from "../store/port.js";
import { bodyLimitOf } from "./body-limits.js";
import { acceptRawJsonBodies, decodeStrict, parseJsonBody } from "./decode-json.js";
import { decompressBody, readLimited, restEncodingOf } from "./decompress.js";
import { type RestRouteConfig, sendError } from "./envelope.js";

interface RestMethod {
  method: DescMethod;
  scope: Scope;
  bodyLimit: number;
  handle(
    principal: KeyPrincipal,
    body: Record<string, unknown>,
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<unknown>;
}

/** The HTTP verb and path of a method's google.api.http rule. */
export function httpRuleOf(method: DescMethod): { verb: "POST" | "GET"; path: string } {
  const rule = getOption(method, http);
  if (rule.pattern.case === "post") return { verb: "POST", path: rule.pattern.value };
  if (rule.pattern.case === "get") return { verb: "GET", path: rule.pattern.value };
  throw new Error(`${method.parent.typeName}.${method.name} has no supported google.api.http rule`);
}

export function registerRestRoutes(
  app: FastifyInstance,
  deps: { auth: Authenticator; payments: PaymentsApp; events: EventsApp },
): void {
  const methods: RestMethod[] = [
    {
      method: PaymentsService.method.recordPayment,
      scope: "payments",
      bodyLimit: bodyLimitOf(PaymentsService.typeName, PaymentsService.method.recordPayment.name),
      async handle(principal, body, _request, reply) {
        const { paymentId } = await deps.payments.record(principal, body);
        return reply.code(200).send({ ok: true, data: { payment_id: paymentId } });
      },
    },
    {
      method: EventsService.method.recordEvents,
      scope: "events",
      bodyLimit: bodyLimitOf(EventsService.typeName, EventsService.method.recordEvents.name),
      async handle(principal, body, request, reply) {
        const result = await deps.events.record(principal, body, {
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

  const principals = new WeakMap<FastifyRequest, KeyPrincipal>();

  app.register(async (scope) => {
    acceptRawJsonBodies(scope);
    // Compressed bodies (server-side SDKs gzip batches): the route's body limit applies to the
    // decompressed bytes, and the compressed bytes may not exceed it either.
    scope.addHook("preParsing", async (request, _reply, payload) => {
      const encoding = restEncodingOf(request.headers["content-encoding"]);
      if (encoding === undefined) return payload;
      const limit = request.routeOptions.bodyLimit;
      const compressed = await readLimited(payload, limit);
      const plain = Readable.from([decompressBody(compressed, encoding, limit)]);
      // Fastify checks Content-Length against this, and the limit against what plain yields.
      return Object.assign(plain, { receivedEncodedLength: compressed.length });
    });

    for (const m of methods) {
      const { verb, path } = httpRuleOf(m.method);
      const config: RestRouteConfig = { bodyLimit: m.bodyLimit };
      scope.route({
        method: verb,
        url: path,
        bodyLimit: m.bodyLimit,
        config,
        // Authentication runs before the body is read: 401/403 come before 413 and 400.
        onRequest: async (request) => {
          principals.set(
            request,
            await deps.auth.authenticate(request.headers.authorization, m.scope),
          );
        },
        handler: async (request, reply) => {
          const principal = principals.get(request);
          if (!principal) throw new DomainError("internal", "unauthenticated request");
          const body = decodeStrict(m.method.input, parseJsonBody(request.body as Buffer));
          return m.handle(principal, body, request, reply);
        },
      });
      const notAllowed = async (request: FastifyRequest, reply: FastifyReply) => {
        reply.header("allow", verb);
        return sendError(reply, errors.methodNotAllowed(request.method, path, verb));
      };
      scope.route({
        method: ["GET", "PUT", "PATCH", "DELETE", "OPTIONS"],
        url: path,
        // Answered before the body is read, whatever its Content-Type.
        onRequest: notAllowed,
        handler: notAllowed,
      });
    }
  });
}
