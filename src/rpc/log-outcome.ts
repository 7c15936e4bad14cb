/**
 * A server interceptor that notes how an RPC failed (code, reason and, for
 * gRPC, the status number) for the request log: gRPC answers errors with
 * HTTP 200, so the status code alone says nothing.
 */
import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import type { FastifyRequest } from "fastify";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { noteOutcome } from "../edge/request-outcome.js";

/** The Fastify request an RPC runs for; set through the plugin's contextValues. */
export const logRequestKey = createContextKey<FastifyRequest | undefined>(undefined, {
  description: "request whose log line gets the RPC outcome",
});

/** `Code.InvalidArgument` → `invalid_argument`. */
function codeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/(?<=[a-z])(?=[A-Z])/g, "_").toLowerCase();
}

/** Place it outside the interceptor that turns errors into ConnectErrors. */
export function createOutcomeInterceptor(): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      const request = req.contextValues.get(logRequestKey);
      if (request && err instanceof ConnectError) {
        const reason = err.findDetails(ErrorInfoSchema)[0]?.reason;
        const contentType = req.header.get("content-type") ?? "";
        noteOutcome(request, {
          rpcCode: codeName(err.code),
          ...(reason ? { code: reason } : {}),
          ...(/^application\/grpc/.test(contentType) ? { grpcStatus: err.code } : {}),
        });
      }
      throw err;
    }
  };
}
