/**
 * The HTTP server: one Fastify instance on one port (src/http/one-port.ts),
 * its own lifecycle for every request, and the doors, each one encapsulated
 * plugin registered with the services it calls.
 *
 * Every request, whatever the door: onRequest (here) opens the request's
 * read of the store's directory version and sets X-Request-Id; two
 * Authorization headers become none (src/http/duplicate-credentials.ts);
 * metrics time it. Then the door's own hooks and handler (read in the
 * door's plugin). Errors a door does not answer itself take the REST
 * envelope (`setErrorHandler` below; the RPC door has its own); requests
 * that match no route get 404 (RPC-shaped paths: `unimplemented` in their
 * protocol); requests Node cannot parse get the envelope too.
 */
import { randomUUID } from "node:crypto";
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import Fastify, { type FastifyError, type FastifyInstance, type FastifyPluginAsync } from "fastify";
import { doorErrors } from "./edge/door-errors.js";
import { fromFastifyError } from "./edge/fastify-errors.js";
import { decorateRequestOutcome, outcomeOf } from "./edge/request-outcome.js";
import { apiReference } from "./http/api-reference.js";
import { collectDoor } from "./http/collect/collect-door.js";
import { connectorsDoor } from "./http/connectors/connectors-door.js";
import { dashboardDoor } from "./http/dashboard/dashboard-door.js";
import { registerDuplicateCredentialsGuard } from "./http/duplicate-credentials.js";
import { sendError } from "./http/envelope.js";
import { exportDoor } from "./http/export/export-door.js";
import { createOnePortServer, type OnePortServer } from "./http/one-port.js";
import { probes } from "./http/probes.js";
import { reportsDoor } from "./http/reports/reports-door.js";
import { restDoor } from "./http/rest/rest-door.js";
import { registerCloseAfterUnreadBody } from "./http/unread-body.js";
import { scrub } from "./lib/scrub.js";
import { answerUnknownRpc, rpcDoor } from "./rpc/rpc-door.js";
import { looksLikeRpc } from "./rpc/rpc-protocol.js";
import type { Services } from "./services.js";

/**
 * The doors, each one plugin taking the services. A new door is one more
 * line here (see docs/architecture.md, "How to add a door").
 */
const DOORS: readonly FastifyPluginAsync<Services>[] = [
  probes,
  apiReference,
  restDoor,
  collectDoor,
  connectorsDoor,
  dashboardDoor,
  exportDoor,
  reportsDoor,
  rpcDoor,
];

/** The server's own settings, beyond the services. */
export interface ServerOptions {
  /** Where JSON logs go (stdout when unset); tests read them. */
  logStream?: { write(line: string): void };
}

/** A built server: Fastify with every door, and the one-port server it runs on. */
export interface Server {
  fastify: FastifyInstance;
  server: OnePortServer;
}

/** A request id from X-Request-Id when it is safe to log, a new one otherwise. */
function requestId(header: string | string[] | undefined): string {
  return typeof header === "string" && /^[\w.:-]{1,64}$/.test(header) ? header : randomUUID();
}

/** Builds the server and registers every door; nothing listens yet. */
export async function createServer(services: Services, options: ServerOptions): Promise<Server> {
  const { config, store, metrics } = services;
  let server: OnePortServer | undefined;
  const fastify = Fastify({
    logger: {
      level: config.logLevel,
      ...(options.logStream ? { stream: options.logStream } : {}),
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

  decorateRequestOutcome(fastify);
  fastify.addHook("onRequest", async function openRequest(request, reply) {
    // First of all: the directory version is read again for every new request.
    store.beginRequest();
    reply.header("x-request-id", request.id);
  });
  registerDuplicateCredentialsGuard(fastify);
  registerCloseAfterUnreadBody(fastify);
  metrics.observeHttp(fastify);

  fastify.setErrorHandler((err: FastifyError, request, reply) => {
    const d = fromFastifyError(err, request);
    if (d.kind === "internal") request.log.error({ err: scrub(err) }, "request failed");
    return sendError(reply, d);
  });
  fastify.setNotFoundHandler((request, reply) => {
    // gRPC and Connect clients get their own "unimplemented", not the REST envelope.
    if (looksLikeRpc(request)) return answerUnknownRpc(request, reply);
    return sendError(reply, doorErrors.noRoute(request.method, request.url.split("?")[0] ?? ""));
  });

  for (const door of DOORS) await fastify.register(door, services);

  await fastify.ready();
  // biome-ignore lint/style/noNonNullAssertion: serverFactory ran during Fastify().
  return { fastify, server: server! };
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
