/**
 * The one way a path answers the verbs it does not take: 405
 * `method_not_allowed` with `Allow`, before the body is read, whatever its
 * Content-Type.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from "fastify";
import { doorErrors } from "../edge/door-errors.js";
import { sendError } from "./envelope.js";

/** Verbs a path may be asked for; HEAD goes with GET (Fastify serves it for every GET route). */
const VERBS: readonly HTTPMethods[] = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** How a path answers the verbs it does not take. */
export interface NotAllowedOptions {
  url: string;
  /** The verbs it takes, as its `Allow` header lists them (`GET, HEAD`). */
  allow: readonly string[];
  /** How the message names them (`GET`, `POST`). */
  use: string;
  /** Headers every answer on the path carries (CORS on the public endpoint). */
  decorate?: (reply: FastifyReply) => void;
}

/** Registers on `scope` the 405 route of every verb `url` does not take. */
export function registerMethodNotAllowed(scope: FastifyInstance, options: NotAllowedOptions): void {
  const { url, allow, use, decorate } = options;
  const allowHeader = allow.join(", ");
  const notAllowed = async (request: FastifyRequest, reply: FastifyReply) => {
    decorate?.(reply);
    reply.header("allow", allowHeader);
    // A parametric route (`/api/v1/connectors/:connector_id`) is named by the path asked for.
    const path = url.includes(":") ? (request.url.split("?")[0] ?? url) : url;
    return sendError(reply, doorErrors.methodNotAllowed(request.method, path, use));
  };
  scope.route({
    method: VERBS.filter((verb) => !allow.includes(verb)),
    url,
    // Answered before the body is read.
    onRequest: notAllowed,
    handler: notAllowed,
  });
}
