/**
 * Connect's JSON requests get the REST door's strict decoding: the same body
 * limits, the same `invalid JSON: …` messages for malformed JSON, unknown
 * fields at any depth and values of the wrong JSON type (protobuf JSON would
 * otherwise accept `"amount": "29"`). The checked object is handed to Connect
 * as the parsed body, so the bytes are read once.
 *
 * Binary Connect, gRPC-Web and gRPC requests are decoded by connect-es.
 */
import { Readable } from "node:stream";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { codeToHttpStatus, errorToJson } from "@connectrpc/connect/protocol-connect";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { DomainError, errors } from "../domain/errors.js";
import { toConnectError } from "../rpc/connect-errors.js";
import { decodeStrict, parseJsonBody } from "./decode-json.js";

interface GuardedMethod {
  method: DescMethod;
  /** Largest body in bytes. */
  limit: number;
}

/** Reads a request body up to `limit` bytes; throws the 413 error past it. */
async function readLimited(payload: AsyncIterable<Buffer>, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of payload) {
    size += chunk.length;
    if (size > limit) throw errors.bodyTooLarge(Math.round(limit / 1024));
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Adds the hooks to `app` (before the Connect plugin is registered, so they
 * apply to its routes). `limits` gives a method's body limit by method name
 * (`ingest.v1.EventsService/RecordEvents`); others get `defaultLimit`.
 */
export function registerConnectJsonGuard(
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

  app.addHook("preParsing", async (request, reply, payload) => {
    const guarded = byPath.get(request.url.split("?")[0] ?? "");
    const type = request.headers["content-type"]?.split(";")[0]?.trim().toLowerCase();
    if (!guarded || request.method !== "POST" || type !== "application/json") return payload;
    try {
      const body = await readLimited(payload, guarded.limit);
      decoded.set(
        request,
        decodeStrict(guarded.method.input, parseJsonBody(body), { jsonNames: true }),
      );
    } catch (err) {
      const ce = toConnectError(
        err instanceof DomainError ? err : errors.invalidJson("unreadable body"),
      );
      await reply
        .code(codeToHttpStatus(ce.code === Code.Unknown ? Code.InvalidArgument : ce.code))
        .type("application/json")
        .send(errorToJson(ce, undefined));
      return payload;
    }
    // Connect takes the checked object instead of reading the stream again.
    return emptyStream();
  });

  app.addHook("preValidation", async (request) => {
    const body = decoded.get(request);
    if (body !== undefined) request.body = body;
  });
}

/** Fastify wants a stream back; Connect will not read it. */
function emptyStream() {
  return Readable.from([]);
}
