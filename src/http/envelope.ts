/** The REST error envelope: `{ok:false, error:{code, message}}`. */
import type { FastifyReply } from "fastify";
import type { ServiceError } from "../edge/door-errors.js";
import { httpErrorOf } from "../edge/http-errors.js";
import { noteOutcome } from "../edge/request-outcome.js";

/** Writes the envelope of `err` with its status (and Retry-After when it has one). */
export function sendError(reply: FastifyReply, err: ServiceError): FastifyReply {
  const { status, code } = httpErrorOf(err);
  noteOutcome(reply.request, { code });
  if (err.retryAfterSeconds !== undefined)
    reply.header("retry-after", String(err.retryAfterSeconds));
  return reply
    .code(status)
    .type("application/json; charset=utf-8")
    .send({ ok: false, error: { code, message: err.message } });
}
