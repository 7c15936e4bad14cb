/**
 * How every error shows over HTTP: the status and the `error.code` of the
 * REST envelope. One table for the domain's kinds and the doors' own. The
 * RPC door reads it too: an RPC error carries the REST code as the `reason`
 * of its google.rpc.ErrorInfo and the status as metadata, so both doors say
 * the same thing.
 */
import type { ErrorKind } from "../domain/errors.js";
import type { DoorErrorKind, ServiceError } from "./door-errors.js";

/** An error's HTTP face. */
export interface HttpError {
  /** HTTP status of the REST envelope. */
  readonly status: number;
  /** `error.code` of the REST envelope and `reason` of the RPC ErrorInfo. */
  readonly code: string;
}

/** The table. */
export const HTTP_ERRORS = {
  invalid_input: { status: 400, code: "invalid_input" },
  unauthorized: { status: 401, code: "unauthorized" },
  forbidden: { status: 403, code: "forbidden" },
  not_found: { status: 404, code: "not_found" },
  conflict: { status: 409, code: "conflict" },
  plan_required: { status: 403, code: "forbidden" },
  quota_exceeded: { status: 429, code: "quota_exceeded" },
  rate_limited: { status: 503, code: "rate_limited" },
  too_many_requests: { status: 429, code: "rate_limited" },
  unavailable: { status: 503, code: "unavailable" },
  internal: { status: 500, code: "internal" },
  body_too_large: { status: 413, code: "invalid_input" },
  unsupported_media_type: { status: 415, code: "invalid_input" },
  method_not_allowed: { status: 405, code: "method_not_allowed" },
  unknown_method: { status: 404, code: "not_found" },
  not_served: { status: 404, code: "not_found" },
  unreadable_body: { status: 400, code: "invalid_input" },
} as const satisfies Record<ErrorKind | DoorErrorKind, HttpError>;

/** The HTTP status and REST code of `err`. */
export function httpErrorOf(err: ServiceError): HttpError {
  return HTTP_ERRORS[err.kind];
}
