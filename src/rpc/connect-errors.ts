/**
 * Every error as a ConnectError, through one table of Connect codes. The RPC
 * error carries the REST message as its message and the REST code as the
 * `reason` of a google.rpc.ErrorInfo detail (with the REST status as
 * metadata), so both doors say the same thing.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { type ServiceError, type ServiceErrorKind, toServiceError } from "../edge/door-errors.js";
import { httpErrorOf } from "../edge/http-errors.js";

/** The ErrorInfo domain of this service's errors. */
export const ERROR_DOMAIN = "ingest.v1";

/** The table: the Connect code of each kind, the domain's and the doors' own. */
export const CONNECT_CODES = {
  invalid_input: Code.InvalidArgument,
  unauthorized: Code.Unauthenticated,
  forbidden: Code.PermissionDenied,
  not_found: Code.NotFound,
  conflict: Code.AlreadyExists,
  plan_required: Code.FailedPrecondition,
  quota_exceeded: Code.ResourceExhausted,
  rate_limited: Code.Unavailable,
  too_many_requests: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
  internal: Code.Internal,
  body_too_large: Code.InvalidArgument,
  unsupported_media_type: Code.InvalidArgument,
  method_not_allowed: Code.NotFound,
  unknown_method: Code.Unimplemented,
  not_served: Code.NotFound,
  unreadable_body: Code.InvalidArgument,
} as const satisfies Record<ServiceErrorKind, Code>;

/** The Connect code of `err`. */
export function connectCodeOf(err: ServiceError): Code {
  return CONNECT_CODES[err.kind];
}

/** The ConnectError for anything thrown by a handler; internal causes stay hidden. */
export function toConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  const d = toServiceError(err);
  const { status, code } = httpErrorOf(d);
  const headers = new Headers();
  if (d.retryAfterSeconds !== undefined) headers.set("retry-after", String(d.retryAfterSeconds));
  return new ConnectError(
    d.message,
    connectCodeOf(d),
    headers,
    [
      {
        desc: ErrorInfoSchema,
        value: create(ErrorInfoSchema, {
          reason: code,
          domain: ERROR_DOMAIN,
          metadata: { http_status: String(status) },
        }),
      },
    ],
    err,
  );
}

/** A server interceptor that turns every error into its ConnectError. */
export function createErrorInterceptor(onInternal: (err: unknown) => void): Interceptor {
  const convert = (err: unknown): ConnectError => {
    const ce = toConnectError(err);
    if (ce.code === Code.Internal && !(err instanceof ConnectError)) onInternal(err);
    return ce;
  };
  return (next) => async (req) => {
    let res: Awaited<ReturnType<typeof next>>;
    try {
      res = await next(req);
    } catch (err) {
      throw convert(err);
    }
    if (!res.stream) return res;
    // A streaming handler's errors come while its messages are read: convert them there.
    const messages = res.message;
    return {
      ...res,
      message: (async function* converted() {
        try {
          yield* messages;
        } catch (err) {
          throw convert(err);
        }
      })(),
    };
  };
}
