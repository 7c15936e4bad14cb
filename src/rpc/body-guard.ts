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
 * request again (src/rpc/replay-body.ts).
 */
import { Readable } from "node:stream";
import { type DescMethod, type DescService, fromBinary } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { decodeStrict, parseJsonBody } from "../edge/decode-json.js";
import { decompressBody, readLimited } from "../edge/decompress.js";
import { DoorError, doorErrors } from "../edge/door-errors.js";
import { toConnectError } from "./connect-errors.js";
import { replayBody } from "./replay-body.js";
import { answerRpcError, rpcKindOf, sendRpcError } from "./rpc-protocol.js";

declare module "fastify" {
  interface FastifyRequest {
    /** A Connect JSON body the guard decoded, handed to connect-es as parsed; null otherwise. */
    rpcJsonBody: Record<string, unknown> | null;
  }
}

/** What an RPC route carries in its Fastify route config. */
export interface RpcRouteConfig {
  rpc?: GuardedMethod;
}

interface GuardedMethod {
  method: DescMethod;
  /** Largest body in bytes. */
  limit: number;
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
  doorErrors.unreadable(`invalid protobuf: the body is not a ${method.input.typeName}`);

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

/** The RPC method a request's matched route serves, if it is an RPC route. */
export function rpcRouteOf(request: FastifyRequest): GuardedMethod | undefined {
  return (request.routeOptions.config as RpcRouteConfig | undefined)?.rpc;
}

/**
 * Adds the guard's hooks to `scope`, the RPC door's, before the Connect
 * plugin registers its routes there. `limits` gives a method's body limit by
 * `package.Service/Method`; others get `defaultLimit`.
 */
export function registerRpcBodyGuard(
  scope: FastifyInstance,
  services: DescService[],
  options: { limits: Readonly<Record<string, number>>; defaultLimit: number },
): void {
  const byPath = new Map<string, GuardedMethod>();
  for (const service of services) {
    for (const method of service.methods) {
      const name = `${service.typeName}/${method.name}`;
      byPath.set(`/${name}`, { method, limit: options.limits[name] ?? options.defaultLimit });
    }
  }
  scope.decorateRequest("rpcJsonBody", null);

  // 1. The route's own definition carries its method and limit: checks never look at the URL.
  scope.addHook("onRoute", function attachRpcMethod(route) {
    const guarded = byPath.get(route.url ?? route.path);
    if (!guarded) return;
    route.config = { ...(route.config as object), rpc: guarded } as typeof route.config;
    route.bodyLimit = guarded.limit;
  });

  // 2. Before the body: the verb and the content type.
  scope.addHook("onRequest", async function refuseRpcVerbOrType(request, reply) {
    const guarded = rpcRouteOf(request);
    if (!guarded) return;
    const path = `/${guarded.method.parent.typeName}/${guarded.method.name}`;
    // Connect serves side-effect-free methods over GET too (the message in the query string).
    const readOnly = guarded.method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
    if (readOnly && request.method === "GET") return;
    if (request.method !== "POST") {
      reply.header("allow", readOnly ? "GET, POST" : "POST");
      return answerRpcError(
        request,
        reply,
        doorErrors.methodNotAllowed(request.method, path, readOnly ? "GET or POST" : "POST"),
      );
    }
    const kind = rpcKindOf(request.headers["content-type"]);
    // Connect's unary content types on unary methods, its streaming ones on streaming methods.
    const streaming = guarded.method.methodKind !== "unary";
    const connectMismatch =
      kind !== undefined &&
      (kind.protocol === "connect-stream" || kind.protocol === "connect") &&
      streaming !== (kind.protocol === "connect-stream");
    if (!kind || connectMismatch) {
      return answerRpcError(
        request,
        reply,
        doorErrors.unsupportedMediaType(
          streaming
            ? "Content-Type must be application/connect+json, application/connect+proto, application/grpc or application/grpc-web"
            : "Content-Type must be application/json, application/proto, application/grpc or application/grpc-web",
        ),
      );
    }
  });

  // 3. The body: read once within the limit, checked, handed back to connect-es.
  scope.addHook("preParsing", async function checkRpcBody(request, reply, payload) {
    const guarded = rpcRouteOf(request);
    if (!guarded) return payload;
    const kind = rpcKindOf(request.headers["content-type"]);
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
          if (plain === body) request.rpcJsonBody = checked;
        } else if (plain !== undefined) {
          checkBinary(plain, guarded.method);
        }
      } else if (kind.protocol === "connect-stream") {
        const encoding = request.headers["connect-content-encoding"];
        checkFrames(body, guarded.method, kind.json, headerValue(encoding), guarded.limit);
      } else {
        const encoding = request.headers["grpc-encoding"];
        checkFrames(body, guarded.method, kind.json, headerValue(encoding), guarded.limit);
      }
    } catch (err) {
      const ce = toConnectError(
        err instanceof DoorError ? err : doorErrors.invalidJson("the body could not be read"),
      );
      await sendRpcError(reply, kind, ce);
      return payload;
    }
    replayBody(request.raw, body);
    return Readable.from([]);
  });

  // 4. Connect JSON already decoded: connect-es takes it as the parsed body.
  scope.addHook("preValidation", async function useDecodedJson(request) {
    if (request.rpcJsonBody !== null) request.body = request.rpcJsonBody;
  });
}
