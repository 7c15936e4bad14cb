/**
 * DomainError → ConnectError, through the one error table. The RPC error
 * carries the REST message as its message and the REST code as the `reason`
 * of a google.rpc.ErrorInfo detail, so both fronts say the same thing.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { type RpcCode, toDomainError } from "../domain/errors.js";

/** The ErrorInfo domain of this service's errors. */
export const ERROR_DOMAIN = "ingest.v1";

const CODES: Record<RpcCode, Code> = {
  invalid_argument: Code.InvalidArgument,
  unauthenticated: Code.Unauthenticated,
  permission_denied: Code.PermissionDenied,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  failed_precondition: Code.FailedPrecondition,
  resource_exhausted: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
  unimplemented: Code.Unimplemented,
  internal: Code.Internal,
};

/** The ConnectError for anything thrown by a handler; internal causes stay hidden. */
export function toConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  const d = toDomainError(err);
  const headers = new Headers();
  if (d.retryAfterSeconds !== undefined) headers.set("retry-after", String(d.retryAfterSeconds));
  return new ConnectError(d.message, CODES[d.shape.rpc], headers, [
    {
      desc: ErrorInfoSchema,
      value: create(ErrorInfoSchema, {
        reason: d.shape.code,
        domain: ERROR_DOMAIN,
        metadata: { http_status: String(d.shape.status) },
      }),
    },
  ]);
}

/** A server interceptor that turns every error into its ConnectError. */
export function createErrorInterceptor(onInternal: (err: unknown) => void): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      const ce = toConnectError(err);
      if (ce.code === Code.Internal && !(err instanceof ConnectError)) onInternal(err);
      throw ce;
    }
  };
}
