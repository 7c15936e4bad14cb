/** The REST error envelope and Fastify's own errors mapped onto it. */
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { DomainError, errors, toDomainError } from "../domain/errors.js";
import { noteOutcome } from "./request-outcome.js";

/** Route config read by the error handler. */
export interface RestRouteConfig {
  /** Body limit in bytes, named in the 413 message. */
  bodyLimit?: number;
}

/** Writes `{ok:false, error:{code, message}}` with the error's status. */
export function sendError(reply: FastifyReply, err: DomainError): FastifyReply {
  noteOutcome(reply.request, { code: err.shape.code });
  if (err.retryAfterSeconds !== undefined)
    reply.header("retry-after", String(err.retryAfterSeconds));
  return reply
    .code(err.shape.status)
    .type("application/json; charset=utf-8")
    .send({ ok: false, error: { code: err.shape.code, message: err.message } });
}

/** Turns what Fastify throws (body limits, media types, …) into domain errors. */
export function fromFastifyError(err: FastifyError, request: FastifyRequest): DomainError {
  if (err instanceof DomainError) return err;
  switch (err.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE": {
      const limit = (request.routeOptions.config as RestRouteConfig).bodyLimit ?? 0;
      return errors.bodyTooLarge(Math.round(limit / 1024));
    }
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new DomainError("unsupported_media_type", "Content-Type must be application/json");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return errors.invalidJson("the body is empty");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new DomainError("invalid_input", "Content-Length does not match the body");
  }
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return new DomainError("invalid_input", "the request could not be read");
  }
  return toDomainError(err);
}
