/** What Fastify itself throws (body limits, media types, lengths), as the errors every door answers. */
import type { FastifyError, FastifyRequest } from "fastify";
import { DomainError } from "../domain/errors.js";
import { DoorError, doorErrors, type ServiceError, toServiceError } from "./door-errors.js";

/** Route config the error answers read. */
export interface BodyLimitRouteConfig {
  /** Body limit in bytes, named in the 413 message. */
  bodyLimit?: number;
}

/** Turns what Fastify (or a hook) throws into the error the door answers with. */
export function fromFastifyError(err: FastifyError, request: FastifyRequest): ServiceError {
  if (err instanceof DomainError || err instanceof DoorError) return err;
  switch (err.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE": {
      const limit = (request.routeOptions.config as BodyLimitRouteConfig).bodyLimit ?? 0;
      return doorErrors.bodyTooLarge(limit);
    }
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return doorErrors.unsupportedMediaType("Content-Type must be application/json");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return doorErrors.invalidJson("the body is empty");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return doorErrors.unreadable("Content-Length does not match the body", err);
  }
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return doorErrors.unreadable("the request could not be read", err);
  }
  return toServiceError(err);
}
