/**
 * Shared pieces of the robustness (property-based) suites: fast-check run
 * parameters with a printed, overridable seed; HTTP senders with a hard
 * per-request time limit; and the oracles every answer is checked against
 * (the REST error envelope, Connect/gRPC error forms).
 *
 * Reproduce a failure with `FC_SEED=<seed> npx vitest run test/robustness`
 * (the seed is printed in every failure and at the start of each file).
 */
import http, { type IncomingHttpHeaders } from "node:http";
import net from "node:net";
import fc from "fast-check";
import { scaled } from "./timeouts.js";

/** One seed per test file run, printed so any failure can be replayed. */
export const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : Date.now() % 2 ** 31;

/**
 * Per-assert parameters: `numRuns` (scaled by FC_RUNS_FACTOR), the file's
 * seed, and a time limit after which a failing property stops shrinking
 * (each shrink step may be a timed-out request) and reports what it has;
 * a property still running then fails rather than passing silently.
 */
export function runs(numRuns: number, timeLimitMs = 45_000): fc.Parameters<unknown> {
  const factor = Number(process.env.FC_RUNS_FACTOR ?? 1);
  return {
    numRuns: Math.max(1, Math.round(numRuns * factor)),
    seed: SEED,
    // Scaled to the machine now (test/helpers/timeouts.ts): a loaded machine answers
    // the same requests slower, which is no failure of the property.
    plugins: [fc.interruptAfterTimeLimit(scaled(timeLimitMs * factor), { failOnInterrupt: true })],
  };
}

/** Vitest time limit of a property test (scaled with FC_RUNS_FACTOR and the machine, as its file starts). */
export const TEST_TIMEOUT = scaled(60_000 * Math.max(1, Number(process.env.FC_RUNS_FACTOR ?? 1)));

/** A request that takes longer than this is a hang, and fails the property. */
export const REQUEST_TIMEOUT_MS = 8_000;

export interface Answer {
  status: number;
  headers: Headers;
  /** The raw body bytes. */
  bytes: Buffer;
  text: string;
}

/** What was sent, compactly, for failure messages (long bodies are cut). */
export function describeRequest(req: {
  method?: string;
  url: string;
  headers?: Record<string, string | string[]>;
  body?: Uint8Array | string;
}): string {
  const body =
    req.body === undefined
      ? "(none)"
      : typeof req.body === "string"
        ? req.body
        : Buffer.from(req.body).toString("latin1");
  const shown = body.length > 400 ? `${body.slice(0, 400)}… (${body.length} chars)` : body;
  return `${req.method ?? "POST"} ${req.url} headers=${JSON.stringify(req.headers ?? {})} body=${JSON.stringify(shown)}`;
}

/**
 * `fetch` with a time limit: a hang, a reset or any transport failure
 * becomes a thrown error naming the request, so the property fails with it.
 */
export async function send(
  url: string,
  init: {
    method?: string;
    headers?: Record<string, string>;
    body?: Uint8Array | string | ReadableStream<Uint8Array>;
    timeoutMs?: number;
  } = {},
): Promise<Answer> {
  const method = init.method ?? "POST";
  const request: RequestInit & { duplex?: "half" } = {
    method,
    headers: init.headers ?? {},
    signal: AbortSignal.timeout(init.timeoutMs ?? REQUEST_TIMEOUT_MS),
  };
  if (init.body !== undefined) request.body = init.body as RequestInit["body"];
  if (init.body instanceof ReadableStream) request.duplex = "half";
  try {
    const res = await fetch(url, request);
    const bytes = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, bytes, text: bytes.toString("utf8") };
  } catch (err) {
    const e = err as Error & { cause?: { message?: string; code?: string } };
    const what = e.name === "TimeoutError" ? "HANG (no answer in time)" : "transport failure";
    throw new Error(
      `${what}: ${e.message} ${e.cause?.code ?? ""} ${e.cause?.message ?? ""} for ` +
        describeRequest({
          method,
          url,
          headers: init.headers,
          body: init.body instanceof ReadableStream ? "(stream)" : init.body,
        }),
    );
  }
}

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  trailers: NodeJS.Dict<string>;
  bytes: Buffer;
}

/**
 * A POST through node:http, which (unlike fetch) exposes HTTP/1.1 trailers:
 * gRPC over HTTP/1.1 puts grpc-status there.
 */
export function rawPost(
  url: string,
  /** An array value sends the header once per element (duplicate headers). */
  headers: Record<string, string | string[]>,
  body: Uint8Array,
  timeoutMs = REQUEST_TIMEOUT_MS,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const fail = (err: Error) =>
      reject(
        new Error(
          `${err.name === "TimeoutError" || err.name === "AbortError" ? "HANG" : "transport failure"}: ${err.message} for ${describeRequest({ url, headers, body })}`,
        ),
      );
    const req = http.request(
      url,
      { method: "POST", headers, signal: AbortSignal.timeout(timeoutMs) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", fail);
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            trailers: res.trailers,
            bytes: Buffer.concat(chunks),
          }),
        );
      },
    );
    req.on("error", fail);
    req.end(body);
  });
}

/**
 * Writes raw bytes on a TCP connection and reads until the server closes it
 * (send `Connection: close`). Fails on a hang.
 */
export function rawExchange(port: number, request: Buffer, timeoutMs = 5_000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(port, "127.0.0.1", () => socket.write(request));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(
          `HANG: no close within ${timeoutMs} ms; got ${JSON.stringify(Buffer.concat(chunks).toString("latin1"))} for ${JSON.stringify(request.toString("latin1"))}`,
        ),
      );
    }, timeoutMs);
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
  });
}

/** Parses one HTTP/1.1 response with a Content-Length body (what the service writes). */
export function parseHttpResponse(raw: Buffer): {
  status: number;
  headers: Record<string, string>;
  body: string;
} {
  const text = raw.toString("latin1");
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) throw new Error(`not an HTTP response: ${JSON.stringify(text.slice(0, 300))}`);
  const [statusLine = "", ...lines] = text.slice(0, end).split("\r\n");
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine);
  if (!m) throw new Error(`bad status line: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(":");
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const body = raw.subarray(Buffer.byteLength(text.slice(0, end + 4), "latin1"));
  return { status: Number(m[1]), headers, body: body.toString("utf8") };
}

// ---------------------------------------------------------------------------
// The REST error envelope

/**
 * The REST status → envelope code table: the spec's codes, plus the
 * documented 405 `method_not_allowed` (docs/architecture.md) and 415/431/408
 * as `invalid_input`. 503 is allowed only as the spec's `rate_limited`.
 */
export const STATUS_TO_CODE: Readonly<Record<number, string>> = {
  400: "invalid_input",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  408: "invalid_input",
  413: "invalid_input",
  415: "invalid_input",
  429: "quota_exceeded",
  431: "invalid_input",
  503: "rate_limited",
};

/** Internal details a message must never show: stack frames, source files, paths. */
const LEAKS: RegExp[] = [
  /\n\s*at /,
  /\bat [\w$.<>]+ \(/,
  /\bat (?:file|node):/,
  /\b[\w-]+\.(?:ts|js|mjs|cjs):\d+/,
  /(?:^|[\s("'])\/(?:work|home|tmp|usr|src|app|node_modules)\//,
  /node_modules|node:internal|file:\/\//,
  /\b(?:TypeError|RangeError|ReferenceError|SyntaxError):/,
];

/** A leak pattern in `message` that the request itself did not contain (messages may quote input). */
export function leakIn(message: string, input: string): string | undefined {
  for (const re of LEAKS) {
    const m = re.exec(message);
    if (m && !input.includes(m[0].trim())) return m[0];
  }
  return undefined;
}

/**
 * Throws unless `answer` is a well-formed REST error: a status from
 * {@link STATUS_TO_CODE}, a JSON body that is exactly
 * `{ok:false, error:{code, message}}` with the status's code and a
 * non-empty message without stack frames or paths. HEAD answers carry no body.
 */
export function assertRestError(
  answer: { status: number; text: string; headers?: Headers | Record<string, string> },
  context: string,
  options: { head?: boolean; input?: string } = {},
): { code: string; message: string } {
  const fail = (why: string): never => {
    throw new Error(
      `${why}\n  answer: ${answer.status} ${JSON.stringify(answer.text.slice(0, 500))}\n  request: ${context}`,
    );
  };
  const expectedCode = STATUS_TO_CODE[answer.status];
  if (!expectedCode) fail(`status ${answer.status} is not an allowed error status`);
  if (options.head) {
    if (answer.text !== "") fail("a HEAD answer has a body");
    return { code: expectedCode as string, message: "" };
  }
  const contentType =
    answer.headers instanceof Headers
      ? answer.headers.get("content-type")
      : answer.headers?.["content-type"];
  if (contentType !== undefined && !/^application\/json\b/i.test(contentType ?? "")) {
    fail(`error content-type is ${contentType}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    fail("error body is not JSON");
  }
  const b = body as { ok?: unknown; error?: { code?: unknown; message?: unknown } };
  if (typeof b !== "object" || b === null || Array.isArray(b)) fail("error body is not an object");
  if (Object.keys(b).sort().join() !== "error,ok") fail("envelope keys are not exactly ok, error");
  if (b.ok !== false) fail("ok is not false");
  const e = b.error;
  if (typeof e !== "object" || e === null || Array.isArray(e)) fail("error is not an object");
  if (
    Object.keys(e as object)
      .sort()
      .join() !== "code,message"
  ) {
    fail("error keys are not exactly code, message");
  }
  const { code, message } = e as { code: unknown; message: unknown };
  if (typeof code !== "string" || code === "") fail("error.code is not a non-empty string");
  if (code !== expectedCode) fail(`error.code ${String(code)} does not go with ${answer.status}`);
  if (typeof message !== "string" || message.trim() === "") fail("error.message is empty");
  const leak = leakIn(message as string, options.input ?? context);
  if (leak) fail(`error.message leaks internals: ${JSON.stringify(leak)}`);
  if (answer.status === 503) {
    const retry = answer.headers instanceof Headers ? answer.headers.get("retry-after") : undefined;
    if (answer.headers instanceof Headers && !retry) fail("503 without Retry-After");
  }
  return { code: code as string, message: message as string };
}

// ---------------------------------------------------------------------------
// Connect and gRPC errors

/** Connect code names and their HTTP statuses (connectrpc.com/docs/protocol#error-codes). */
export const CONNECT_HTTP: Readonly<Record<string, number>> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

/** gRPC status numbers that mean the server broke: unknown, internal, unavailable, data loss. */
export const SERVER_FAULT_GRPC = new Set([2, 13, 14, 15]);

/**
 * connect-es reports an undecodable protobuf request (and a compressed frame
 * without grpc-encoding) as `internal`; src/rpc/body-guard.ts now answers
 * those first with `invalid_argument`, so no internal error is tolerated.
 */
export function isKnownLibraryInternal(_message: string): boolean {
  return false;
}

/** The trailer frame of a gRPC-Web body (flag 0x80), parsed into lower-case fields. */
export function grpcWebTrailer(body: Buffer): Record<string, string> | undefined {
  let off = 0;
  while (off + 5 <= body.length) {
    const flag = body[off] as number;
    const len = body.readUInt32BE(off + 1);
    const data = body.subarray(off + 5, off + 5 + len);
    off += 5 + len;
    if (flag & 0x80) {
      const out: Record<string, string> = {};
      for (const line of data.toString("latin1").split("\r\n")) {
        const i = line.indexOf(":");
        if (i > 0) out[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      return out;
    }
  }
  return undefined;
}

/** Wraps a message in the 5-byte gRPC/gRPC-Web/Connect-streaming envelope. */
export function frame(payload: Uint8Array, flag = 0): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flag;
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** Whether a JSON text holds a string or key that is not well-formed UTF-16 (a lone surrogate). */
export function hasLoneSurrogate(text: string): boolean {
  const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
  let bad = false;
  try {
    JSON.parse(text, (key, value) => {
      if (lone.test(key) || (typeof value === "string" && lone.test(value))) bad = true;
      return value;
    });
  } catch {
    return false;
  }
  return bad;
}

// ---------------------------------------------------------------------------
// Arbitraries shared by the suites

/** Characters fetch accepts in a header value (a ByteString without CTLs): HTAB, 0x20-0x7E, 0x80-0xFF. */
export const headerChar = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) },
  { weight: 1, arbitrary: fc.constant("\t") },
  { weight: 2, arbitrary: fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)) },
);

/** Any JSON-able text: fc.jsonValue, or fc.anything flattened to JSON (undefined → null, bigint → string). */
export const anyJsonText: fc.Arbitrary<string> = fc.oneof(
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc
    .anything({ withBigInt: true, withNullPrototype: true, withObjectString: true })
    .map((v) => JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? x.toString() : x)) ?? "null"),
);
