/**
 * RPC requests get the REST door's body rules before connect-es sees them:
 *
 * - Connect JSON (`application/json`): the same strict decoding and the same
 *   `invalid JSON: …` messages (unknown fields at any depth, wrong JSON types,
 *   malformed JSON), accepting lowerCamelCase names and 64-bit integers as
 *   strings as protobuf JSON does. The checked object is handed to
 *   connect-es as the parsed body.
 * - Connect binary, gRPC and gRPC-Web: the message (each frame's, for the
 *   enveloped protocols) must decode; otherwise `invalid_argument` instead of
 *   the library's `internal`. gRPC and gRPC-Web with JSON frames get the
 *   strict JSON decoding too (connect-es can hang on some malformed ones).
 * - Every protocol: the method's body limit (8 KB for events, 64 KB otherwise).
 * - Every answer on an RPC route is a Connect or gRPC error: a method other
 *   than POST (and GET, for side-effect-free methods, which Connect serves
 *   over GET) gets 405 with `Allow`, a content type no RPC protocol
 *   speaks (or none) gets 415, both with a Connect JSON error body.
 *
 * The method and its limit are attached to the route itself when connect-es
 * registers it (an `onRoute` hook), and every check reads them from the
 * route the request matched. So any spelling of a path that reaches a route
 * (`Record%45vents`, a query string) gets that route's rules, and a new RPC
 * route gets its limit from its definition.
 *
 * Bytes are read once: after the checks, connect-es reads them from the
 * request again through its async iterator.
 */
import { Readable } from "node:stream";
import { type DescMethod, type DescService, fromBinary } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, errorToJson } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DomainError, errors } from "../domain/errors.js";
import { toConnectError } from "../rpc/connect-errors.js";
import { decodeStrict, parseJsonBody } from "./decode-json.js";
import { decompressBody, readLimited } from "./decompress.js";

/** What an RPC route carries in its Fastify route config. */
export interface RpcRouteConfig {
  rpc?: GuardedMethod;
}

interface GuardedMethod {
  method: DescMethod;
  /** Largest body in bytes. */
  limit: number;
}

type Kind =
  | { protocol: "connect"; json: boolean }
  | { protocol: "grpc" | "grpc-web"; json: boolean; contentType: string };

/** Which protocol and codec a content type names; undefined for those left to connect-es. */
function kindOf(contentType: string | undefined): Kind | undefined {
  const type = contentType?.split(";")[0]?.trim().toLowerCase();
  switch (type) {
    case "application/json":
      return { protocol: "connect", json: true };
    case "application/proto":
      return { protocol: "connect", json: false };
    case "application/grpc":
    case "application/grpc+proto":
      return { protocol: "grpc", json: false, contentType: type };
    case "application/grpc+json":
      return { protocol: "grpc", json: true, contentType: type };
    case "application/grpc-web":
    case "application/grpc-web+proto":
      return { protocol: "grpc-web", json: false, contentType: type };
    case "application/grpc-web+json":
      return { protocol: "grpc-web", json: true, contentType: type };
    default:
      return undefined;
  }
}

/**
 * Decompresses a body or frame sent with `encoding` (within `limit`).
 * Encodings connect-es does not take are left to it: it refuses them itself.
 */
function decompress(bytes: Buffer, encoding: string, limit: number): Buffer | undefined {
  if (encoding !== "gzip" && encoding !== "br") return undefined;
  return decompressBody(bytes, encoding, limit);
}

/** A header that may repeat, as one value (the first). */
function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

const invalidMessage = (method: DescMethod) =>
  new DomainError("invalid_input", `invalid protobuf: the body is not a ${method.input.typeName}`);

/** Checks every frame of a gRPC/gRPC-Web body, decompressing those marked compressed. */
function checkFrames(
  body: Buffer,
  method: DescMethod,
  json: boolean,
  encoding: string | undefined,
  limit: number,
): void {
  let at = 0;
  while (at < body.length) {
    if (body.length - at < 5) throw invalidMessage(method);
    const flags = body[at] as number;
    const length = body.readUInt32BE(at + 1);
    let payload = body.subarray(at + 5, at + 5 + length);
    if (payload.length < length) throw invalidMessage(method);
    // 0x80 marks gRPC-Web trailers, only sent by servers.
    if (flags & 0x80) throw invalidMessage(method);
    if (flags & 0x01) {
      if (encoding === undefined || encoding === "identity") throw invalidMessage(method);
      const plain = decompress(payload, encoding, limit);
      if (plain === undefined) return;
      payload = plain;
    }
    if (json) decodeStrict(method.input, parseJsonBody(payload), { jsonNames: true });
    else checkBinary(payload, method);
    at += 5 + length;
  }
}

function checkBinary(bytes: Uint8Array, method: DescMethod): void {
  try {
    fromBinary(method.input, bytes);
  } catch {
    throw invalidMessage(method);
  }
}

/**
 * Answers with `err` in the request's protocol: a Connect JSON error (with
 * `status` instead of the code's usual HTTP status when given, as for 405
 * and 415), or a gRPC/gRPC-Web trailers-only response.
 */
function sendRpcError(
  reply: FastifyReply,
  kind: Kind | undefined,
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

/** The RPC method a request's matched route serves, if it is an RPC route. */
export function rpcRouteOf(request: FastifyRequest): GuardedMethod | undefined {
  return (request.routeOptions.config as RpcRouteConfig | undefined)?.rpc;
}

/**
 * Answers `err` on an RPC route in the request's protocol (its content type
 * decides; Connect JSON when it names none), so errors raised outside the
 * Connect handlers (Fastify's own, hooks') never take the REST envelope there.
 */
export function sendRpcDomainError(
  request: FastifyRequest,
  reply: FastifyReply,
  err: DomainError,
): FastifyReply {
  const ce = toConnectError(err);
  // 405 and 415 answer the HTTP request itself (no RPC protocol applies): Connect JSON with that status.
  if (err.shape.status === 405 || err.shape.status === 415) {
    return sendRpcError(reply, undefined, ce, err.shape.status);
  }
  return sendRpcError(reply, kindOf(request.headers["content-type"]), ce);
}

/**
 * Adds the hooks to `app` before the Connect plugin is registered, so they
 * apply to its routes. `limits` gives a method's body limit by
 * `package.Service/Method`; others get `defaultLimit`.
 */
export function registerRpcBodyGuard(
  app: FastifyInstance,
  services: DescService[],
  options: { limits: Record<string, number>; defaultLimit: number },
): void {
  const byPath = new Map<string, GuardedMethod>();
  for (const service of services) {
    for (const method of service.methods) {
      const name = `${service.typeName}/${method.name}`;
      byPath.set(`/${name}`, { method, limit: options.limits[name] ?? options.defaultLimit });
    }
  }
  const decoded = new WeakMap<FastifyRequest, Record<string, unknown>>();

  // The route's own definition carries its method and limit: checks never look at the URL.
  app.addHook("onRoute", (route) => {
    const guarded = byPath.get(route.url ?? route.path);
    if (!guarded) return;
    route.config = { ...(route.config as object), rpc: guarded } as typeof route.config;
    route.bodyLimit = guarded.limit;
  });

  app.addHook("onRequest", async (request, reply) => {
    const guarded = rpcRouteOf(request);
    if (!guarded) return;
    const path = `/${guarded.method.parent.typeName}/${guarded.method.name}`;
    // Connect serves side-effect-free methods over GET too (the message in the query string).
    const readOnly = guarded.method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
    if (readOnly && request.method === "GET") return;
    if (request.method !== "POST") {
      reply.header("allow", readOnly ? "GET, POST" : "POST");
      return sendRpcDomainError(
        request,
        reply,
        errors.methodNotAllowed(request.method, path, readOnly ? "GET or POST" : "POST"),
      );
    }
    if (!kindOf(request.headers["content-type"])) {
      return sendRpcDomainError(
        request,
        reply,
        new DomainError(
          "unsupported_media_type",
          "Content-Type must be application/json, application/proto, application/grpc or application/grpc-web",
        ),
      );
    }
  });

  app.addHook("preParsing", async (request, reply, payload) => {
    const guarded = rpcRouteOf(request);
    if (!guarded) return payload;
    const kind = kindOf(request.headers["content-type"]);
    if (!kind) return payload;
    let body: Buffer;
    try {
      body = await readLimited(payload, guarded.limit);
      if (kind.protocol === "connect") {
        const encoding = headerValue(request.headers["content-encoding"]);
        const plain =
          encoding === undefined || encoding === "identity"
            ? body
            : decompress(body, encoding, guarded.limit);
        if (plain !== undefined && kind.json) {
          const checked = decodeStrict(guarded.method.input, parseJsonBody(plain), {
            jsonNames: true,
          });
          // Uncompressed JSON goes to connect-es already parsed; compressed bytes are re-read.
          if (plain === body) decoded.set(request, checked);
        } else if (plain !== undefined) {
          checkBinary(plain, guarded.method);
        }
      } else {
        const encoding = request.headers["grpc-encoding"];
        checkFrames(body, guarded.method, kind.json, headerValue(encoding), guarded.limit);
      }
    } catch (err) {
      const ce = toConnectError(
        err instanceof DomainError ? err : errors.invalidJson("the body could not be read"),
      );
      await sendRpcError(reply, kind, ce);
      return payload;
    }
    // connect-es reads the request again through its async iterator.
    Object.defineProperty(request.raw, Symbol.asyncIterator, {
      value: async function* () {
        yield body;
      },
      configurable: true,
    });
    return Readable.from([]);
  });

  app.addHook("preValidation", async (request) => {
    const body = decoded.get(request);
    if (body !== undefined) request.body = body;
  });
}
