/**
 * Every error the service reports, and how each front shows it.
 *
 * One table maps a domain error kind to the REST status and code of the
 * public error envelope and to the Connect/gRPC code, so both doors say the
 * same thing (as connect-es keeps its code-to-HTTP table in one file).
 */

import { StoreFailureError, StoreUnavailableError } from "./store-errors.js";

/** Connect/gRPC codes used by the service, by their canonical names. */
export type RpcCode =
  | "invalid_argument"
  | "unauthenticated"
  | "permission_denied"
  | "not_found"
  | "already_exists"
  | "failed_precondition"
  | "resource_exhausted"
  | "unavailable"
  | "unimplemented"
  | "internal";

interface ErrorShape {
  /** HTTP status of the REST envelope. */
  readonly status: number;
  /** `error.code` of the REST envelope and `reason` of the RPC ErrorInfo. */
  readonly code: string;
  readonly rpc: RpcCode;
}

/** The table. Keys are the kinds a DomainError can have. */
export const ERROR_TABLE = {
  invalid_input: { status: 400, code: "invalid_input", rpc: "invalid_argument" },
  body_too_large: { status: 413, code: "invalid_input", rpc: "invalid_argument" },
  unsupported_media_type: { status: 415, code: "invalid_input", rpc: "invalid_argument" },
  unauthorized: { status: 401, code: "unauthorized", rpc: "unauthenticated" },
  forbidden: { status: 403, code: "forbidden", rpc: "permission_denied" },
  not_found: { status: 404, code: "not_found", rpc: "not_found" },
  method_not_allowed: { status: 405, code: "method_not_allowed", rpc: "not_found" },
  /** An RPC path (`/package.Service/Method`) that names no method this server serves. */
  unknown_method: { status: 404, code: "not_found", rpc: "unimplemented" },
  conflict: { status: 409, code: "conflict", rpc: "already_exists" },
  plan_required: { status: 403, code: "forbidden", rpc: "failed_precondition" },
  quota_exceeded: { status: 429, code: "quota_exceeded", rpc: "resource_exhausted" },
  rate_limited: { status: 503, code: "rate_limited", rpc: "unavailable" },
  /** One client sent too many requests (the public collect endpoint's per-IP limit). */
  too_many_requests: { status: 429, code: "rate_limited", rpc: "resource_exhausted" },
  unavailable: { status: 503, code: "unavailable", rpc: "unavailable" },
  internal: { status: 500, code: "internal", rpc: "internal" },
} as const satisfies Record<string, ErrorShape>;

/** A kind of domain error: a key of {@link ERROR_TABLE}. */
export type ErrorKind = keyof typeof ERROR_TABLE;

/** The message a 500 shows: never the internal cause. */
export const INTERNAL_MESSAGE = "internal error";

/**
 * An error the service means to report to the caller. Anything else that is
 * thrown is an internal error and is reported as {@link INTERNAL_MESSAGE}.
 */
export class DomainError extends Error {
  override readonly name = "DomainError";

  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** Seconds for a Retry-After header, when the caller should come back later. */
    readonly retryAfterSeconds?: number,
  ) {
    // Messages may quote input; a lone surrogate would break headers (grpc-message) and logs.
    super(wellFormed(message));
  }

  /** The shape this error takes on each front. */
  get shape(): ErrorShape {
    return ERROR_TABLE[this.kind];
  }
}

/** Shorthand constructors for the errors the spec words exactly. */
export const errors = {
  missingKey: () => new DomainError("unauthorized", "missing or malformed API key"),
  unknownKey: () => new DomainError("unauthorized", "unknown or revoked API key"),
  missingScope: (scope: string) => new DomainError("forbidden", `API key lacks the ${scope} scope`),
  foreignSite: () => new DomainError("forbidden", "api key does not belong to this site"),
  unknownSite: () => new DomainError("not_found", "unknown site"),
  /**
   * An RPC path no method answers, worded as gRPC servers word it. No slash:
   * grpc-js does not decode an encoded one in grpc-message.
   */
  unknownMethod: (service: string, method: string) =>
    new DomainError("unknown_method", `unknown method ${method} for service ${service}`),
  /** 405: `use` names the verbs the path takes, as its `Allow` header lists them. */
  methodNotAllowed: (method: string, path: string, use: string) =>
    new DomainError("method_not_allowed", `${method} is not allowed on ${path}; use ${use}`),
  invalidJson: (detail: string) => new DomainError("invalid_input", `invalid JSON: ${detail}`),
  bodyTooLarge: (limitKb: number) =>
    new DomainError("body_too_large", `request body larger than ${limitKb} KB`),
  quotaExceeded: (retryAfterSeconds: number) =>
    new DomainError("quota_exceeded", "monthly event quota exceeded", retryAfterSeconds),
  queueFull: () => new DomainError("rate_limited", "ingest queue is full, retry later", 2),
  tooManyRequests: (retryAfterSeconds: number) =>
    new DomainError(
      "too_many_requests",
      "too many requests from this address, retry later",
      retryAfterSeconds,
    ),
  storeUnavailable: () =>
    new DomainError("unavailable", "the store is unavailable, retry later", 2),
  adminTokenUnset: () =>
    new DomainError("unauthorized", "admin API is disabled: ADMIN_TOKEN is not set"),
  badAdminToken: () => new DomainError("unauthorized", "missing or invalid admin token"),
};

/** The string with lone UTF-16 surrogates replaced by U+FFFD. */
function wellFormed(text: string): string {
  return text.replace(
    /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
    "\uFFFD",
  );
}

/**
 * What a failed store call means for the caller: a DomainError as it is, a
 * StoreFailureError as it is (an internal error, logged with its cause by the
 * door), anything else as 503 `unavailable` (the write did not happen).
 */
export function storeError(err: unknown): Error {
  if (err instanceof DomainError || err instanceof StoreFailureError) return err;
  return errors.storeUnavailable();
}

/** Converts anything thrown into a DomainError, hiding internal causes. */
export function toDomainError(err: unknown): DomainError {
  if (err instanceof DomainError) return err;
  if (err instanceof StoreUnavailableError) return errors.storeUnavailable();
  return new DomainError("internal", INTERNAL_MESSAGE);
}
