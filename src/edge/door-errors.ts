/**
 * Errors only a transport can raise: a body too large or in a type no door
 * reads, a verb a path does not take, a path nothing serves, bytes that do
 * not decode. The domain never sees them; each door shows them through the
 * same tables as the domain's errors (src/edge/http-errors.ts,
 * src/rpc/connect-errors.ts).
 */
import { type DomainError, type ErrorKind, toDomainError, wellFormed } from "../domain/errors.js";

/** The kinds of door errors. */
export const DOOR_ERROR_KINDS = [
  "body_too_large",
  "unsupported_media_type",
  "method_not_allowed",
  /** An RPC path (`/package.Service/Method`) that names no method this server serves. */
  "unknown_method",
  /** A path nothing is served on. */
  "not_served",
  /** Bytes that do not decode: malformed JSON or protobuf, a bad compression, a bad length. */
  "unreadable_body",
] as const;

/** A kind of door error. */
export type DoorErrorKind = (typeof DOOR_ERROR_KINDS)[number];

/** A kind any door may answer with: the domain's and the doors' own. */
export type ServiceErrorKind = ErrorKind | DoorErrorKind;

/** An error a transport raised about the request itself. */
export class DoorError extends Error {
  override readonly name = "DoorError";
  /** Door errors never ask the caller to come back later. */
  readonly retryAfterSeconds?: undefined;

  constructor(
    readonly kind: DoorErrorKind,
    message: string,
    cause?: unknown,
  ) {
    // Messages may quote input (an unknown field's name): valid in headers and logs.
    super(wellFormed(message), cause === undefined ? undefined : { cause });
  }
}

/** What every door answers with: a domain error or a door error. */
export type ServiceError = DomainError | DoorError;

/** The catalogue: every DoorError is built here. */
export const doorErrors = {
  bodyTooLarge: (limitBytes: number) =>
    new DoorError("body_too_large", `request body larger than ${Math.round(limitBytes / 1024)} KB`),
  unsupportedMediaType: (message: string) => new DoorError("unsupported_media_type", message),
  /** 405: `use` names the verbs the path takes, as its `Allow` header lists them. */
  methodNotAllowed: (method: string, path: string, use: string) =>
    new DoorError("method_not_allowed", `${method} is not allowed on ${path}; use ${use}`),
  /**
   * An RPC path no method answers, worded as gRPC servers word it. No slash:
   * grpc-js does not decode an encoded one in grpc-message.
   */
  unknownMethod: (service: string, method: string) =>
    new DoorError("unknown_method", `unknown method ${method} for service ${service}`),
  noRoute: (method: string, path: string) =>
    new DoorError("not_served", `no route for ${method} ${path}`),
  notServed: (message: string) => new DoorError("not_served", message),
  invalidJson: (detail: string) => new DoorError("unreadable_body", `invalid JSON: ${detail}`),
  unreadable: (message: string, cause?: unknown) =>
    new DoorError("unreadable_body", message, cause),
};

/** The one message a 500 shows: never the internal cause. */
export const INTERNAL_MESSAGE = "internal error";

/**
 * Anything thrown, as what a door answers: door and domain errors as they
 * are, a store outage as 503, anything else as 500 {@link INTERNAL_MESSAGE}
 * (the original error kept as the cause, for the log).
 */
export function toServiceError(err: unknown): ServiceError {
  if (err instanceof DoorError) return err;
  return toDomainError(err, INTERNAL_MESSAGE);
}
