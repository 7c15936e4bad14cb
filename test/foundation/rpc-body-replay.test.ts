/**
 * The RPC body guard reads a request's body itself and hands it back to
 * connect-es by replacing the request's async iterator
 * (src/rpc/replay-body.ts). That works only while connect-node reads bodies
 * by iterating the Node request. Here the bytes on the wire and the bytes the
 * iterator yields differ, so a connect-node that read the socket (or the
 * stream's events) instead would see the other message, or none, and these
 * tests fail: time to revisit the guard before upgrading @connectrpc/*.
 */

import { Readable } from "node:stream";
import { create, toBinary } from "@bufbuild/protobuf";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponse_ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";
import { createOnePortServer, type OnePortServer } from "../../src/http/one-port.js";
import { replayBody } from "../../src/rpc/replay-body.js";
import { PROTOCOLS, rpcClient } from "../helpers/rpc-clients.js";

/** What the replaced iterator yields instead of what the client sent. */
const REPLAYED = toBinary(
  HealthCheckRequestSchema,
  create(HealthCheckRequestSchema, { service: "replayed" }),
);

/** gRPC and gRPC-Web bodies are framed: one uncompressed message. */
function framed(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + message.length);
  new DataView(out.buffer).setUint32(1, message.length);
  out.set(message, 5);
  return out;
}

describe("connect-node reads RPC bodies through the request's async iterator", () => {
  let fastify: FastifyInstance;
  let server: OnePortServer | undefined;
  let baseUrl: string;
  /** The service names the handler was called with. */
  const seen: string[] = [];

  beforeAll(async () => {
    fastify = Fastify({
      serverFactory: (handler) => {
        server = createOnePortServer(handler as Parameters<typeof createOnePortServer>[0], {
          maxConnections: 16,
          headersTimeoutMs: 5_000,
          requestTimeoutMs: 5_000,
          idleTimeoutMs: 5_000,
          maxConcurrentStreams: 16,
        });
        return server.http1;
      },
    });
    await fastify.register(async (scope) => {
      // As the guard does: consume the wire bytes, then hand back others.
      scope.addHook("preParsing", async (request, _reply, payload) => {
        for await (const _chunk of payload) {
          // Drained: what the client sent is gone.
        }
        const enveloped = /^application\/grpc/.test(request.headers["content-type"] ?? "");
        replayBody(request.raw, enveloped ? framed(REPLAYED) : REPLAYED);
        return Readable.from([]);
      });
      await scope.register(fastifyConnectPlugin, {
        routes(router) {
          router.service(Health, {
            async check(req) {
              seen.push(req.service);
              return { status: HealthCheckResponse_ServingStatus.SERVING };
            },
            async *watch() {},
          });
        },
      });
    });
    await fastify.ready();
    // biome-ignore lint/style/noNonNullAssertion: serverFactory ran during Fastify().
    const address = await server!.listen(0, "127.0.0.1");
    baseUrl = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    await server?.close(1_000);
    await fastify.close();
  });

  for (const protocol of PROTOCOLS) {
    it(`hands the handler the replayed message, not the sent one (${protocol}, binary)`, async () => {
      seen.length = 0;
      const client = rpcClient(Health, baseUrl, protocol, { useBinaryFormat: true });
      const res = await client.check({ service: "sent on the wire" });
      expect(res.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      expect(seen).toEqual(["replayed"]);
    });
  }
});
