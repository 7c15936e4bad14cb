/**
 * The public door for browsers: `POST /api/v1/collect` and the tracking
 * script that calls it (`GET /js/script.js`). No key: the site id in the body
 * identifies the site, so the door adds only what a public, cross-origin
 * endpoint needs around the events application's `collect` (the one copy of
 * the rules):
 *  - CORS: any origin may POST without credentials; the preflight is answered
 *    and cached for a day; every answer, errors included, carries
 *    `Access-Control-Allow-Origin: *` so the page can read it;
 *  - a per-client-address rate limit in events a minute: one is taken
 *    before the body is read (a flood of requests costs a bucket lookup),
 *    the rest of the batch once it is parsed, so batching does not multiply
 *    the allowance; the site's own ceiling is the events application's
 *    (src/domain/collect-limits.ts);
 *  - `text/plain` bodies (what `navigator.sendBeacon` and a preflight-free
 *    `fetch` send) as well as `application/json`.
 * A stored request answers 200 `{ok:true,data:{visitor_id}}`: the tracking
 * script learns the visitor id it hands to the page. Unlike /api/v1/events
 * there is no `X-Quota-Remaining`: anyone may call this door, and an
 * account's traffic is none of their business.
 *
 * A request's lifecycle, top to bottom: onRequest (CORS headers, the rate
 * limit) → content-type parsing (JSON as raw bytes; Fastify's body limit) →
 * handler (strict decoding, `collect`, the answer) → errors: the server's
 * REST envelope, with the CORS headers already set.
 */
import type { FastifyPluginAsync, FastifyReply } from "fastify";
import { EventsService } from "../../../gen/ingest/v1/events_pb.js";
import { clientKeyOf, type RateLimiter } from "../../cluster/rate-limiter.js";
import type { Clock } from "../../domain/clock.js";
import { errors } from "../../domain/errors.js";
import type { EventsApp } from "../../domain/events/events-app.js";
import { LIMITS } from "../../domain/events/validate-events.js";
import { COLLECT_BODY_LIMIT } from "../../edge/body-limits.js";
import { acceptRawJsonBodies, decodeStrict, parseJsonBody } from "../../edge/decode-json.js";
import type { BodyLimitRouteConfig } from "../../edge/fastify-errors.js";
import type { Observer } from "../../metrics/observer.js";
import { registerMethodNotAllowed } from "../method-not-allowed.js";
import { loadTrackerBundle, registerTrackerScript, type TrackerBundle } from "../tracker-script.js";

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

/** What the collect door calls and how it limits. */
export interface CollectDoorOptions {
  events: EventsApp;
  clock: Clock;
  /** COLLECT_RATE_LIMIT: events per minute per client address; 0 turns the limit off. */
  config: { collectRateLimit: number };
  /** Where the buckets are (the cluster primary's under WORKERS): src/services.ts. */
  collectLimiter: RateLimiter;
  /** Told of each refusal (metrics). */
  metrics: Pick<Observer, "collectRefused">;
  /** The tracking script; default: the bundle `npm run build` wrote to dist/tracker/. */
  trackerBundle?: TrackerBundle;
}

/** The collect door plugin. */
export const collectDoor: FastifyPluginAsync<CollectDoorOptions> = async (scope, options) => {
  const { events, collectLimiter, metrics } = options;
  const limiter = options.config.collectRateLimit === 0 ? undefined : collectLimiter;
  /** Takes `cost` events of the client's allowance, or refuses with 429. */
  const takeFromClient = async (ip: string, cost: number) => {
    if (!limiter) return;
    const decision = await limiter.take(clientKeyOf(ip), cost);
    if (decision.ok) return;
    metrics.collectRefused("client");
    throw errors.tooManyRequests(decision.retryAfterSeconds);
  };

  registerTrackerScript(scope, options.trackerBundle ?? loadTrackerBundle());
  acceptRawJsonBodies(scope);

  const config: BodyLimitRouteConfig = { bodyLimit: BODY_LIMIT };
  scope.route({
    method: "POST",
    url: COLLECT_PATH,
    bodyLimit: BODY_LIMIT,
    config,
    // Before the body is read: a flood costs a bucket lookup, not a parse.
    onRequest: async function corsAndRateLimit(request, reply) {
      allowAnyOrigin(reply);
      await takeFromClient(request.ip, 1);
    },
    handler: async (request, reply) => {
      const body = decodeStrict(
        EventsService.method.recordEvents.input,
        parseJsonBody(request.body as Buffer),
      );
      // The rest of a batch: the limit counts events (a batch of 50 is 50, at most the spec's 50).
      const count = Array.isArray(body.b) ? Math.min(body.b.length, LIMITS.batchMax) : 1;
      if (count > 1) await takeFromClient(request.ip, count - 1);
      const origin = request.headers.origin;
      const result = await events.collect(body, {
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

  registerMethodNotAllowed(scope, {
    url: COLLECT_PATH,
    allow: ["POST", "OPTIONS"],
    use: "POST",
    decorate: allowAnyOrigin,
  });
};
