/**
 * What a request ended with, beyond its HTTP status, for the request log: the
 * error code of a REST error envelope, and for RPCs the Connect code, the
 * ErrorInfo reason and (for gRPC, which answers errors with HTTP 200) the
 * gRPC status. Kept beside the request, never in it, so no door depends on
 * logging.
 */

/** Fields added to the `res` of the "request completed" log line. */
export interface RequestOutcome {
  /** `error.code` of the REST envelope, or the ErrorInfo reason of an RPC error. */
  code?: string;
  /** The Connect/gRPC code name of an RPC error (`invalid_argument`, …). */
  rpcCode?: string;
  /** The numeric grpc-status of a gRPC or gRPC-Web answer that failed. */
  grpcStatus?: number;
}

const outcomes = new WeakMap<object, RequestOutcome>();

/** Records (merges) what `request` ended with. */
export function noteOutcome(request: object, outcome: RequestOutcome): void {
  outcomes.set(request, { ...outcomes.get(request), ...outcome });
}

/** What `request` ended with; empty when it succeeded or nothing was noted. */
export function outcomeOf(request: object): RequestOutcome {
  return outcomes.get(request) ?? {};
}
