/**
 * The public door for browsers: `POST /api/v1/collect`. No key: the site id
 * in the body identifies the site, so the door adds only what a public,
 * cross-origin endpoint needs around the events application's `collect`
 * (the one copy of the rules):
 *  - CORS: any origin may POST without credentials; the preflight is answered
 *    and cached for a day; every answer, errors included, carries
 *    `Access-Control-Allow-Origin: *` so the page can read it;
 *  - a per-client-address rate limit, checked before the body is read;
 *  - `text/plain` bodies (what `navigator.sendBeacon` and a preflight-free
 *    `fetch` send) as well as `application/json`.
 * A stored request answers 200 `{ok:true,data:{visitor_id}}`: the tracking
 * script learns the visitor id it hands to the page. Unlike /api/v1/events
 * there is no `X-Quota-Remaining`: anyone may call this door, and an
 * account's traffic is none of their business.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { EventsService } from "../../gen/ingest/v1/events_pb.js";
import { clientKeyOf, createLocalRateLimiter, type RateLimiter } from "../cluster/rate-limiter.js";
import type { Clock } from "../domain/clock.js";
import { errors } from "../domain/errors.js";
import type { EventsApp } from "../domain/events/events-app.js";
import { createTokenBuckets } from "../lib/token-buckets.js";
import { COLLECT_BODY_LIMIT } from "./body-limits.js";
import { acceptRawJsonBodies, decodeStrict, parseJsonBody } from "./decode-json.js";
import { type RestRouteConfig, sendError } from "./envelope.js";

/** The path users put in their proxies: part of the public interface. */
export const COLLECT_PATH = "/api/v1/collect";
const BODY_LIMIT = COLLECT_BODY_LIMIT;
/** How long browsers may reuse a preflight answer (Chromium caps it at 2 hours). */
const PREFLIGHT_MAX_AGE_S = 86_400;

/** Headers every collect answer carries, so a page on any origin can read it. */
function allowAnyOrigin(reply: FastifyReply): void {
  reply.header("access-control-allow-origin", "*");
  reply.header("access-control-expose-headers", "Retry-After, X-Ingest-Dropped, X-Request-Id");
  // An answer about one visitor's request: never cached by browsers or proxies.
  reply.header("cache-control", "no-store");
}

export interface CollectDeps {
  events: EventsApp;
  rateLimit: {
    /** COLLECT_RATE_LIMIT: requests per minute per client address; 0 turns the limit off. */
    perMinute: number;
    clock: Clock;
    /** Buckets held elsewhere (the cluster primary under WORKERS); default: in this process. */
    shared?: RateLimiter;
  };
}

export function registerCollectRoutes(app: FastifyInstance, deps: CollectDeps): void {
  const { perMinute, clock, shared } = deps.rateLimit;
  const limiter =
    perMinute === 0
      ? undefined
      : (shared ?? createLocalRateLimiter(createTokenBuckets({ perMinute, now: clock.now })));

  app.register(async (scope) => {
    acceptRawJsonBodies(scope);

    const config: RestRouteConfig = { bodyLimit: BODY_LIMIT };
    scope.route({
      method: "POST",
      url: COLLECT_PATH,
      bodyLimit: BODY_LIMIT,
      config,
      // Before the body is read: a flood costs a bucket lookup, not a parse.
      onRequest: async (request, reply) => {
        allowAnyOrigin(reply);
        if (!limiter) return;
        const decision = await limiter.take(clientKeyOf(request.ip));
        if (!decision.ok) throw errors.tooManyRequests(decision.retryAfterSeconds);
      },
      handler: async (request, reply) => {
        const body = decodeStrict(
          EventsService.method.recordEvents.input,
          parseJsonBody(request.body as Buffer),
        );
        const origin = request.headers.origin;
        const result = await deps.events.collect(body, {
          ip: request.ip,
          userAgent: request.headers["user-agent"],
          origin: typeof origin === "string" ? origin : undefined,
        });
        if (result.dropped > 0) reply.header("x-ingest-dropped", `${result.dropped} bot`);
        if (result.visitorId === undefined) return reply.code(204).send();
        return reply.code(200).send({ ok: true, data: { visitor_id: result.visitorId } });
      },
    });

    scope.route({
      method: "OPTIONS",
      url: COLLECT_PATH,
      handler: async (_request, reply) => {
        allowAnyOrigin(reply);
        reply.header("access-control-allow-methods", "POST");
        reply.header("access-control-allow-headers", "Content-Type");
        reply.header("access-control-max-age", String(PREFLIGHT_MAX_AGE_S));
        return reply.code(204).send();
      },
    });

    const notAllowed = async (request: FastifyRequest, reply: FastifyReply) => {
      allowAnyOrigin(reply);
      reply.header("allow", "POST, OPTIONS");
      return sendError(reply, errors.methodNotAllowed(request.method, COLLECT_PATH, "POST"));
    };
    scope.route({
      method: ["GET", "PUT", "PATCH", "DELETE"],
      url: COLLECT_PATH,
      onRequest: notAllowed,
      handler: notAllowed,
    });
  });
}
