/**
 * Every error the domain reports, in the domain's words only.
 *
 * A `DomainError` has a transport-neutral kind (what went wrong, as
 * connect-es's `Code` says it without HTTP) and, where there is one, the
 * `cause` it was raised for. How each door shows a kind (the REST status and
 * code, the Connect code) is the doors' business: src/edge/http-errors.ts and
 * src/rpc/connect-errors.ts each hold one table. Errors only a transport can
 * raise (body too large, unsupported media type, method not allowed, unknown
 * RPC method) are the doors' own (src/edge/door-errors.ts).
 *
 * Every error is built through the {@link errors} catalogue.
 */

import { StoreFailureError, StoreUnavailableError } from "./store-errors.js";

/** The kinds of domain errors. */
export const ERROR_KINDS = [
  "invalid_input",
  "unauthorized",
  "forbidden",
  "not_found",
  "conflict",
  /** The account's plan does not allow the operation. */
  "plan_required",
  "quota_exceeded",
  /** The service is saturated (a full ingest queue): come back later. */
  "rate_limited",
  /** One client sent too many requests (the public collect endpoint's per-client limit). */
  "too_many_requests",
  "unavailable",
  "internal",
] as const;

/** A kind of domain error. */
export type ErrorKind = (typeof ERROR_KINDS)[number];

/** What an error may carry besides its kind and message. */
export interface ErrorOptions {
  /** Seconds for a Retry-After header, when the caller should come back later. */
  retryAfterSeconds?: number;
  /** What it was raised for (logged with the error, never shown). */
  cause?: unknown;
}

/**
 * An error the service means to report to the caller. Anything else that is
 * thrown is an internal error and is reported without its message.
 */
export class DomainError extends Error {
  override readonly name = "DomainError";
  /** Seconds for a Retry-After header, when the caller should come back later. */
  readonly retryAfterSeconds?: number;

  constructor(
    readonly kind: ErrorKind,
    message: string,
    options: ErrorOptions = {},
  ) {
    // Messages may quote input; a lone surrogate would break headers (grpc-message) and logs.
    super(wellFormed(message), options.cause === undefined ? undefined : { cause: options.cause });
    if (options.retryAfterSeconds !== undefined) this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

const notFound = (message: string) => new DomainError("not_found", message);

/** The catalogue: every DomainError is built here, worded as the spec words it. */
export const errors = {
  /** A 400 whose message the caller composed (field rules list every problem). */
  invalid: (message: string) => new DomainError("invalid_input", message),
  missingKey: () => new DomainError("unauthorized", "missing or malformed API key"),
  unknownKey: () => new DomainError("unauthorized", "unknown or revoked API key"),
  missingScope: (scope: string) => new DomainError("forbidden", `API key lacks the ${scope} scope`),
  foreignSite: () => new DomainError("forbidden", "api key does not belong to this site"),
  unknownSite: () => notFound("unknown site"),
  notMember: (userId: string, accountId: string) =>
    new DomainError("forbidden", `user ${userId} is not a member of account ${accountId}`),
  /** `what` is what the user may not manage: API keys, or connectors. */
  notKeyManager: (action: string, userId: string, role: string, what = "API keys") =>
    new DomainError(
      "forbidden",
      `only owners and admins can ${action} ${what}; user ${userId} is a ${role}`,
    ),
  notDataEraser: (userId: string, role: string) =>
    new DomainError(
      "forbidden",
      `only owners and admins can erase personal data; user ${userId} is a ${role}`,
    ),
  planRequired: (plan: string, accountId: string, current: string, what = "API keys") =>
    new DomainError(
      "plan_required",
      `creating ${what} requires the ${plan} plan; account ${accountId} is on the ${current} plan`,
    ),
  /** A payment (key or connector) for an account moved below the plan that has payments. */
  paymentsPlanRequired: (plan: string, accountId: string, current: string) =>
    new DomainError(
      "plan_required",
      `recording payments requires the ${plan} plan; account ${accountId} is on the ${current} plan`,
    ),
  accountNotFound: (id: string) => notFound(`account ${id} not found`),
  siteNotFound: (id: string) => notFound(`site ${id} not found`),
  keyNotFound: (id: string) => notFound(`API key ${id} not found`),
  paymentNotFound: (id: string) => notFound(`payment ${id} not found`),
  customerNotFound: (id: string) => notFound(`customer ${id} not found`),
  connectorNotFound: (id: string) => notFound(`connector ${id} not found`),
  /** Health checks name a service this server does not serve. */
  unknownService: (name: string) => notFound(`unknown service ${name}`),
  quotaExceeded: (retryAfterSeconds: number) =>
    new DomainError("quota_exceeded", "monthly event quota exceeded", { retryAfterSeconds }),
  queueFull: () =>
    new DomainError("rate_limited", "ingest queue is full, retry later", { retryAfterSeconds: 2 }),
  tooManyRequests: (retryAfterSeconds: number) =>
    new DomainError("too_many_requests", "too many requests from this address, retry later", {
      retryAfterSeconds,
    }),
  /** The collect door's per-site ceiling (src/domain/collect-limits.ts). */
  siteCollectLimit: (retryAfterSeconds: number) =>
    new DomainError("too_many_requests", "too many events for this site, retry later", {
      retryAfterSeconds,
    }),
  /** A site already has as many exports running as it may (src/domain/export-slots.ts). */
  tooManyExports: (perSite: number, retryAfterSeconds: number) =>
    new DomainError(
      "too_many_requests",
      `this site already has ${perSite} exports running, retry later`,
      { retryAfterSeconds },
    ),
  storeUnavailable: (cause?: unknown) =>
    new DomainError("unavailable", "the store is unavailable, retry later", {
      retryAfterSeconds: 2,
      cause,
    }),
  /** The readiness probe's 503: the store answers but cannot commit a write. */
  tooManyQueries: () =>
    new DomainError(
      "too_many_requests",
      "too many analytics queries running for this site, retry later",
      {
        retryAfterSeconds: 1,
      },
    ),
  queryTimeout: (limitMs: number, cause?: unknown) =>
    new DomainError(
      "unavailable",
      `the query ran past its time limit of ${limitMs / 1000} s and was cancelled; narrow the period or the dimensions`,
      { retryAfterSeconds: 2, cause },
    ),
  /** A read waited its whole time limit for the feed to apply what was committed before it. */
  analyticsBehind: (limitMs: number) =>
    new DomainError(
      "unavailable",
      `the analytics store did not catch up with the writes before this read within its time limit of ${limitMs / 1000} s; retry shortly`,
      { retryAfterSeconds: 2 },
    ),
  analyticsNotServed: () =>
    new DomainError(
      "unavailable",
      "analytics queries are not served by this process (they are served by the process that owns the analytics store)",
      { retryAfterSeconds: 2 },
    ),
  eventsHeldByServer: () =>
    new DomainError(
      "unavailable",
      "a running server holds the analytics store, where the stored events are: export them over its REST or RPC door, or stop it first",
      { retryAfterSeconds: 2 },
    ),
  analyticsUnavailable: (cause?: unknown) =>
    new DomainError("unavailable", "the analytics store is unavailable, retry later", {
      retryAfterSeconds: 2,
      cause,
    }),
  storeCannotTakeWrites: () =>
    new DomainError("unavailable", "the store cannot take writes", { retryAfterSeconds: 2 }),
  adminTokenUnset: () =>
    new DomainError("unauthorized", "admin API is disabled: ADMIN_TOKEN is not set"),
  badAdminToken: () => new DomainError("unauthorized", "missing or invalid admin token"),
  /** First run (src/domain/first-run.ts): a token that is not the one the server printed. */
  setupTokenInvalid: () =>
    new DomainError(
      "unauthorized",
      "this setup link is not valid: open the setup URL the server printed at its last start",
    ),
  setupTokenExpired: () =>
    new DomainError(
      "unauthorized",
      "this setup link has expired: restart the server to print a new one",
    ),
  setupTokenUsed: () =>
    new DomainError(
      "unauthorized",
      "this setup link has already been used: sign in with the reports key it created",
    ),
  /** An account exists (made by setup or the admin CLI): there is nothing to set up. */
  setupDone: () =>
    new DomainError(
      "conflict",
      "this service is already set up: sign in with a reports key or the admin token",
    ),
  /** A connector id no connector has (the webhook door's 404). */
  unknownConnector: () => notFound("unknown connector"),
  /** Creating a connector: a provider the service has no connector for. */
  unknownProvider: (providers: readonly string[]) =>
    new DomainError("invalid_input", `provider must be one of ${providers.join(", ")}`),
  /** Creating a connector: never quotes the secret (it may be a real one pasted in the wrong place). */
  badConnectorSecret: (maxLength: number) =>
    new DomainError(
      "invalid_input",
      `secret must be 1 to ${maxLength} characters without whitespace`,
    ),
  stripeSecretPrefix: () =>
    new DomainError("invalid_input", "a Stripe signing secret starts with whsec_"),
  /** A webhook delivery without its signature header(s); `headers` names them. */
  signatureMissing: (headers: string) =>
    new DomainError("invalid_input", `missing ${headers} header`),
  signatureMalformed: (header: string) =>
    new DomainError("invalid_input", `malformed ${header} header`),
  signatureMismatch: (header: string) =>
    new DomainError("invalid_input", `${header} does not match the body`),
  /** A signed timestamp outside the provider's tolerance; `when` is `old`, `ahead` (in the future) or `off` (either way). */
  signatureStale: (timestamp: string, seconds: number, when: "old" | "ahead" | "off") =>
    new DomainError("invalid_input", `${timestamp} is more than ${seconds} seconds ${when}`),
  /** A broken invariant the caller cannot fix (its message is the caller's answer). */
  internal: (message: string, cause?: unknown) => new DomainError("internal", message, { cause }),
  /**
   * An error another process raised (the cluster's port relay, src/cluster/port-relay.ts
   * under WORKERS): its kind, words and Retry-After as that process built them here.
   */
  relayed: (kind: ErrorKind, message: string, retryAfterSeconds?: number) =>
    new DomainError(kind, message, retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
};

/** The string with lone UTF-16 surrogates replaced by U+FFFD. */
export function wellFormed(text: string): string {
  return text.replace(
    /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
    "\uFFFD",
  );
}

/**
 * What a failed store call means for the caller: a DomainError as it is, a
 * StoreFailureError as it is (an internal error, logged with its cause by the
 * door), anything else as 503 `unavailable` (the write did not happen) with
 * the store's error as its cause.
 */
export function storeError(err: unknown): Error {
  if (err instanceof DomainError || err instanceof StoreFailureError) return err;
  return errors.storeUnavailable(err);
}

/**
 * Anything thrown, as a DomainError: a DomainError as it is, a store outage
 * as 503 `unavailable`, anything else as `internal` with `message` (the doors
 * pass the one message a 500 shows) and the error as its cause.
 */
export function toDomainError(err: unknown, internalMessage: string): DomainError {
  if (err instanceof DomainError) return err;
  if (err instanceof StoreUnavailableError) return errors.storeUnavailable(err);
  return errors.internal(internalMessage, err);
}
