/**
 * Property-based abuse at the byte and header level, across all four
 * protocols (REST, Connect JSON, gRPC-Web JSON over HTTP/1.1, gRPC JSON over
 * h2c): percent-encoded path spellings, duplicate Authorization headers,
 * compressed bodies and UTF-8 damage, in any combination. Each request's
 * answer is predicted exactly: duplicate credentials are 401 `missing or
 * malformed API key`, damaged UTF-8 is `invalid JSON: the body is not valid
 * UTF-8 (at byte N)`, and anything else is recorded. The seed is printed at
 * the start and in every failure (replay with FC_SEED).
 */
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import fc from "fast-check";
import { beforeAll, describe, it } from "vitest";
import { validEvent } from "../helpers/fixtures.js";
import { h2Request } from "../helpers/raw-h2.js";
import {
  describeRequest,
  frame,
  grpcWebTrailer,
  rawPost,
  runs,
  SEED,
  TEST_TIMEOUT,
} from "../helpers/robustness.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();
beforeAll(async () => {
  console.info(`bytes-fuzz: fast-check seed ${SEED} (replay with FC_SEED=${SEED})`);
});

type Protocol = "rest" | "connect" | "grpcweb" | "grpc";
type Compression = "none" | "gzip" | "br" | "deflate";

const PATHS: Record<Protocol, string> = {
  rest: "/api/v1/events",
  connect: "/ingest.v1.EventsService/RecordEvents",
  grpcweb: "/ingest.v1.EventsService/RecordEvents",
  grpc: "/ingest.v1.EventsService/RecordEvents",
};

/** Byte sequences that are never valid UTF-8 wherever they are put in ASCII text. */
const BAD_UTF8: number[][] = [
  [0x80],
  [0xbf],
  [0xc0, 0x80],
  [0xc1, 0xbf],
  [0xc3],
  [0xe2, 0x82],
  [0xed, 0xa0, 0x80],
  [0xf0, 0x8f, 0xbf, 0xbf],
  [0xf4, 0x90, 0x80, 0x80],
  [0xf5],
  [0xfe],
  [0xff],
];

/** `path` with its `n`-th letter (modulo the letters) written as %XX. */
function percentEncodeOne(path: string, n: number): string {
  const letters = [...path.matchAll(/[A-Za-z]/g)];
  const at = letters[n % letters.length]?.index ?? 1;
  const hex = path.charCodeAt(at).toString(16).toUpperCase();
  return `${path.slice(0, at)}%${hex}${path.slice(at + 1)}`;
}

function compress(bytes: Buffer, how: Compression): Buffer {
  if (how === "gzip") return gzipSync(bytes);
  if (how === "br") return brotliCompressSync(bytes);
  if (how === "deflate") return deflateSync(bytes);
  return bytes;
}

interface Outcome {
  /** "ok", or the error's message. */
  result: string;
  /** The REST code or the RPC code's name. */
  code?: string;
}

const RPC_CODES: Record<string, string> = { "3": "invalid_argument", "16": "unauthenticated" };

async function send(
  protocol: Protocol,
  path: string,
  headers: Record<string, string | string[]>,
  payload: Buffer,
  compression: Compression,
): Promise<{ outcome: Outcome; context: string }> {
  const url = ctx.url + path;
  const encoded = compress(payload, compression);
  const h = { ...headers };
  let body: Buffer;
  if (protocol === "rest" || protocol === "connect") {
    h["content-type"] = "application/json";
    if (compression !== "none") h["content-encoding"] = compression;
    body = encoded;
  } else {
    h["content-type"] = protocol === "grpc" ? "application/grpc+json" : "application/grpc-web+json";
    if (compression !== "none") h["grpc-encoding"] = compression;
    body = frame(encoded, compression === "none" ? 0 : 1);
  }
  const context = describeRequest({ url, headers: h, body });
  if (protocol === "grpc") {
    h.te = "trailers";
    const ans = await h2Request(ctx.url, path, h as Record<string, string>, body);
    const status = String(ans.headers["grpc-status"] ?? ans.trailers["grpc-status"]);
    const message = decodeURIComponent(
      String(ans.headers["grpc-message"] ?? ans.trailers["grpc-message"] ?? ""),
    );
    const outcome =
      status === "0" ? { result: "ok" } : { result: message, code: RPC_CODES[status] ?? status };
    return { outcome, context };
  }
  const ans = await rawPost(url, h, body);
  const text = ans.bytes.toString("utf8");
  if (protocol === "rest") {
    if (ans.status === 204) return { outcome: { result: "ok" }, context };
    const e = JSON.parse(text) as { error: { code: string; message: string } };
    return { outcome: { result: e.error.message, code: e.error.code }, context };
  }
  if (protocol === "connect") {
    if (ans.status === 200) return { outcome: { result: "ok" }, context };
    const e = JSON.parse(text) as { code: string; message: string };
    return { outcome: { result: e.message, code: e.code }, context };
  }
  const status = String(ans.headers["grpc-status"] ?? grpcWebTrailer(ans.bytes)?.["grpc-status"]);
  const message = decodeURIComponent(
    String(ans.headers["grpc-message"] ?? grpcWebTrailer(ans.bytes)?.["grpc-message"] ?? ""),
  );
  const outcome =
    status === "0" ? { result: "ok" } : { result: message, code: RPC_CODES[status] ?? status };
  return { outcome, context };
}

describe("byte- and header-level abuse on every protocol", () => {
  it(
    "encoded paths, duplicate credentials, compression and UTF-8 damage get exactly the predicted answer",
    async () => {
      const arb = fc
        .record({
          protocol: fc.constantFrom<Protocol>("rest", "connect", "grpcweb", "grpc"),
          encodePath: fc.option(fc.nat(), { nil: undefined }),
          // Node's HTTP/2 client cannot send a repeated Authorization: duplicates go over HTTP/1.1.
          duplicateAuth: fc.boolean(),
          compression: fc.constantFrom<Compression>("none", "gzip", "br", "deflate"),
          damage: fc.option(
            fc.record({
              at: fc.double({ min: 0, max: 1, noNaN: true }),
              bytes: fc.constantFrom(...BAD_UTF8),
            }),
            { nil: undefined },
          ),
          pathSuffix: fc.string({ unit: fc.constantFrom(..."abcxyz-_"), maxLength: 12 }),
        })
        .map((c) => ({
          ...c,
          duplicateAuth: c.duplicateAuth && c.protocol !== "grpc",
          // Connect and gRPC take gzip and br; REST takes deflate too.
          compression:
            c.compression === "deflate" && c.protocol !== "rest"
              ? ("gzip" as const)
              : c.compression,
        }));
      await fc.assert(
        fc.asyncProperty(arb, async (c) => {
          const text = JSON.stringify({
            ...validEvent(ctx.siteId),
            u: `https://example.com/${c.pathSuffix}`,
          });
          // The damage goes inside the URL string, so only its bytes are wrong.
          const start = text.indexOf("https://");
          const at =
            start + Math.floor(c.damage ? c.damage.at * (text.indexOf('"', start) - start) : 0);
          const plain = Buffer.from(text);
          const payload = c.damage
            ? Buffer.concat([
                plain.subarray(0, at),
                Buffer.from(c.damage.bytes),
                plain.subarray(at),
              ])
            : plain;
          const key = `Bearer ${ctx.key}`;
          const headers: Record<string, string | string[]> = {
            authorization: c.duplicateAuth ? [key, key] : key,
          };
          const path =
            c.encodePath === undefined
              ? PATHS[c.protocol]
              : percentEncodeOne(PATHS[c.protocol], c.encodePath);
          const { outcome, context } = await send(
            c.protocol,
            path,
            headers,
            payload,
            c.compression,
          );

          const rest = c.protocol === "rest";
          // REST authenticates before reading the body; RPC bodies are decoded before the
          // handler authenticates, so there a damaged body is reported first.
          const authFirst = c.duplicateAuth && (rest || !c.damage);
          const expected: Outcome = authFirst
            ? {
                result: "missing or malformed API key",
                code: rest ? "unauthorized" : "unauthenticated",
              }
            : c.damage
              ? {
                  result: `invalid JSON: the body is not valid UTF-8 (at byte ${at})`,
                  code: rest ? "invalid_input" : "invalid_argument",
                }
              : { result: "ok" };
          if (JSON.stringify(outcome) !== JSON.stringify(expected)) {
            throw new Error(
              `expected ${JSON.stringify(expected)}, got ${JSON.stringify(outcome)}\n  request: ${context}\n  seed: ${SEED}`,
            );
          }
        }),
        runs(200),
      );
    },
    TEST_TIMEOUT,
  );
});
