/**
 * What a request ended with, beyond its HTTP status, for the request log: the
 * error code of a REST error envelope, and for RPCs the Connect code, the
 * ErrorInfo reason and (for gRPC, which answers errors with HTTP 200) the
 * gRPC status. Below both doors: the REST envelope and the RPC door note it,
 * the log serializer reads it.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";

/** Fields added to the `res` of the "request completed" log line. */
export interface RequestOutcome {
  /** `error.code` of the REST envelope, or the ErrorInfo reason of an RPC error. */
  code?: string;
  /** The Connect/gRPC code name of an RPC error (`invalid_argument`, …). */
  rpcCode?: string;
  /** The numeric grpc-status of a gRPC or gRPC-Web answer that failed. */
  grpcStatus?: number;
}

declare module "fastify" {
  interface FastifyRequest {
    /** What the request ended with; null when it succeeded or nothing was noted. */
    outcome: RequestOutcome | null;
  }
}

/** Gives every request of `app` its outcome slot (null until noted). */
export function decorateRequestOutcome(app: FastifyInstance): void {
  app.decorateRequest("outcome", null);
}

/** Records (merges) what `request` ended with. */
export function noteOutcome(request: FastifyRequest, outcome: RequestOutcome): void {
  request.outcome = request.outcome === null ? outcome : { ...request.outcome, ...outcome };
}

/** What `request` ended with; empty when it succeeded or nothing was noted. */
export function outcomeOf(request: FastifyRequest): RequestOutcome {
  return request.outcome ?? {};
}
