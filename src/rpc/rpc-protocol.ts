/**
 * The RPC protocols as the door sees them before connect-es does: which
 * protocol and codec a request speaks (connect-es's own content-type
 * parsers), which requests were meant as RPCs, and how an error is answered
 * in the request's protocol when connect-es is not the one answering
 * (the body guard, Fastify's own errors, unknown methods).
 */
import { Code, type ConnectError } from "@connectrpc/connect";
import {
  codeToHttpStatus,
  errorToJson,
  parseContentType as parseConnectContentType,
} from "@connectrpc/connect/protocol-connect";
import {
  parseContentType as parseGrpcContentType,
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";
import { parseContentType as parseGrpcWebContentType } from "@connectrpc/connect/protocol-grpc-web";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ServiceError } from "../edge/door-errors.js";
import { httpErrorOf } from "../edge/http-errors.js";
import { toConnectError } from "./connect-errors.js";

/** The protocol and codec of a request the guard checks. */
export type RpcKind =
  | { protocol: "connect"; json: boolean }
  | { protocol: "connect-stream"; json: boolean; contentType: string }
  | { protocol: "grpc" | "grpc-web"; json: boolean; contentType: string };

/**
 * Which protocol and codec a content type names, read by connect-es's own
 * parsers; undefined for what no RPC protocol this door serves speaks
 * (gRPC-Web text included). Connect streaming (`application/connect+json`,
 * `+proto`) is what Connect clients send to server-streaming methods.
 */
export function rpcKindOf(contentType: string | undefined): RpcKind | undefined {
  if (contentType === undefined) return undefined;
  const connect = parseConnectContentType(contentType);
  const type = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  if (connect) {
    return connect.stream
      ? { protocol: "connect-stream", json: !connect.binary, contentType: type }
      : { protocol: "connect", json: !connect.binary };
  }
  const grpc = parseGrpcContentType(contentType);
  if (grpc) return { protocol: "grpc", json: !grpc.binary, contentType: type };
  const grpcWeb = parseGrpcWebContentType(contentType);
  if (grpcWeb && !grpcWeb.text) {
    return { protocol: "grpc-web", json: !grpcWeb.binary, contentType: type };
  }
  return undefined;
}

/**
 * Answers with `err` in the protocol `kind` names: a Connect JSON error (with
 * `status` instead of the code's usual HTTP status when given, as for 405
 * and 415), or a gRPC/gRPC-Web trailers-only response.
 */
export function sendRpcError(
  reply: FastifyReply,
  kind: RpcKind | undefined,
  err: ConnectError,
  status?: number,
): FastifyReply {
  if (kind === undefined || kind.protocol === "connect") {
    const retryAfter = err.metadata.get("retry-after");
    if (retryAfter !== null) reply.header("retry-after", retryAfter);
    return reply
      .code(status ?? codeToHttpStatus(err.code === Code.Unknown ? Code.InvalidArgument : err.code))
      .type("application/json")
      .send(errorToJson(err, undefined));
  }
  if (kind.protocol === "connect-stream") {
    // Connect streaming: 200 and the error in the end-of-stream message, as connect-es answers.
    const end = Buffer.from(JSON.stringify({ error: errorToJson(err, undefined) }));
    const head = Buffer.alloc(5);
    head[0] = 0x02;
    head.writeUInt32BE(end.length, 1);
    return reply
      .code(200)
      .header("content-type", kind.contentType)
      .send(Buffer.concat([head, end]));
  }
  const grpcStatus = setTrailerStatus(new Headers(), err);
  reply.code(200).header("content-type", kind.contentType);
  if (kind.protocol === "grpc") {
    // gRPC over HTTP/2: the status goes in real trailers. Node's compat layer
    // never sends a headers-only answer with END_STREAM, so a status in the
    // headers reads as "no status" to gRPC clients such as grpc-js.
    for (const [k, v] of grpcStatus) reply.trailer(k, (_reply, _payload, done) => done(null, v));
    return reply.send();
  }
  // gRPC-Web over HTTP/1.1: a trailers-only answer, the status in the headers.
  for (const [k, v] of grpcStatus) reply.header(k, v);
  return reply.send();
}

/**
 * Answers `err` for an RPC request in its protocol (its content type decides;
 * Connect JSON when it names none), so errors raised outside the Connect
 * handlers (Fastify's own, hooks') never take the REST envelope there.
 */
export function answerRpcError(
  request: FastifyRequest,
  reply: FastifyReply,
  err: ServiceError,
): FastifyReply {
  const ce = toConnectError(err);
  const { status } = httpErrorOf(err);
  // 405 and 415 answer the HTTP request itself (no RPC protocol applies): Connect JSON with that status.
  if (status === 405 || status === 415) return sendRpcError(reply, undefined, ce, status);
  return sendRpcError(reply, rpcKindOf(request.headers["content-type"]), ce);
}

/** `/package.Service/Method`: the shape of every Connect, gRPC and gRPC-Web path. */
const RPC_PATH = /^\/[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\/[A-Za-z_]\w*$/;

/**
 * Whether a request that matched no route was meant as an RPC: its path has
 * the RPC shape (every gRPC, gRPC-Web and Connect client calls
 * `/package.Service/Method`). Such a request is answered in its protocol
 * (`unimplemented`) rather than with the REST envelope; any other path,
 * whatever its content type, keeps the REST 404 (gRPC clients read an HTTP
 * 404 as `unimplemented` too).
 */
export function looksLikeRpc(request: FastifyRequest): boolean {
  return RPC_PATH.test(request.url.split("?")[0] ?? "");
}
