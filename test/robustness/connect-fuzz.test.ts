/**
 * Property-based robustness of the Connect routes (Connect, gRPC-Web and
 * gRPC on the same port as REST): random bytes, random JSON and random
 * valid-shaped protobuf messages, with every content type the routes know
 * and some they do not, get a success or a well-formed Connect/gRPC error
 * that is not a server fault; never an HTTP 500 with a foreign body, a
 * crash or a hang. Then random messages through real connect-es clients.
 */
import {
  create,
  type DescField,
  type DescMessage,
  type DescMethod,
  type DescService,
  ScalarType,
  toBinary,
  toJsonString,
} from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { EventsService } from "../../gen/ingest/v1/events_pb.js";
import { PaymentsService } from "../../gen/ingest/v1/payments_pb.js";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { BROWSER_UA, validEvent, validPayment } from "../helpers/fixtures.js";
import {
  anyJsonText,
  assertRestError,
  CONNECT_HTTP,
  describeRequest,
  frame,
  grpcWebTrailer,
  headerChar,
  isKnownLibraryInternal,
  leakIn,
  type RawAnswer,
  rawPost,
  runs,
  SEED,
  SERVER_FAULT_GRPC,
  send,
  TEST_TIMEOUT,
} from "../helpers/robustness.js";
import { rpcClient } from "../helpers/rpc-clients.js";
import { ADMIN_TOKEN, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();
beforeAll(async () => {
  console.info(`connect-fuzz: fast-check seed ${SEED} (replay with FC_SEED=${SEED})`);
});

const SERVICES: DescService[] = [PaymentsService, EventsService, ReportsService, AdminService];
const METHODS: DescMethod[] = SERVICES.flatMap((s) => s.methods);
const pathOf = (m: DescMethod) => `/${m.parent.typeName}/${m.name}`;

// ---------------------------------------------------------------------------
// Random messages of any request type, from the descriptors

/** Strings that sometimes hit real ids and meaningful values, so calls get past the first check. */
function stringsArb(): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.string({ unit: "binary", maxLength: 30 }) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        ctx.siteId,
        ctx.tenant.accountId,
        ctx.tenant.ownerUserId,
        "",
        "pay_1",
        "cus_1",
        "https://example.com/",
        "pageview",
        "$identify",
        "USD",
        "JPY",
        "charge",
        "2024-01-15T10:30:00Z",
        "scale",
        "free",
        "admin",
        "events",
        "payments",
        "x@example.com",
        "example.com",
        BROWSER_UA,
        "203.0.113.9",
      ),
    },
  );
}

const jsonObjectArb = fc
  .dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 })
  .map((o) => JSON.parse(JSON.stringify(o)) as Record<string, unknown>);

function scalarArb(type: ScalarType, strings: fc.Arbitrary<string>): fc.Arbitrary<unknown> {
  switch (type) {
    case ScalarType.STRING:
      return strings;
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.DOUBLE:
      return fc.oneof(fc.double(), fc.constantFrom(29.99, 1000, 0.001, 1e15, -0));
    case ScalarType.FLOAT:
      return fc.float();
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return fc.oneof(fc.integer(), fc.integer({ min: -2, max: 1_100 }));
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return fc.integer({ min: 0, max: 2 ** 32 - 1 });
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    case ScalarType.BYTES:
      return fc.uint8Array({ maxLength: 16 });
    default:
      return fc.oneof(
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
        fc.constant(BigInt(TEST_NOW)),
      );
  }
}

function fieldArb(f: DescField, strings: fc.Arbitrary<string>): fc.Arbitrary<unknown> {
  switch (f.fieldKind) {
    case "scalar":
      return scalarArb(f.scalar, strings);
    case "enum":
      return fc.constantFrom(...f.enum.values.map((v) => v.number));
    case "message":
      return f.message.typeName === "google.protobuf.Struct"
        ? jsonObjectArb
        : messageInitArb(f.message, strings);
    case "list":
      return fc.array(
        f.listKind === "message"
          ? messageInitArb(f.message, strings)
          : f.listKind === "enum"
            ? fc.constantFrom(...f.enum.values.map((v) => v.number))
            : scalarArb(f.scalar, strings),
        { maxLength: 3 },
      );
    case "map":
      return fc.dictionary(
        strings,
        f.mapKind === "message"
          ? messageInitArb(f.message, strings)
          : f.mapKind === "enum"
            ? fc.constantFrom(...f.enum.values.map((v) => v.number))
            : scalarArb(f.scalar, strings),
        { maxKeys: 3 },
      );
  }
}

function messageInitArb(desc: DescMessage, strings: fc.Arbitrary<string>) {
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const f of desc.fields) fields[f.localName] = fieldArb(f, strings);
  return fc.record(fields, { requiredKeys: [] });
}

// ---------------------------------------------------------------------------
// The oracle for raw answers

/**
 * Throws unless `ans` is a success, a well-formed Connect error (JSON
 * `{code, message}` whose code maps to the HTTP status and is not a server
 * fault), a gRPC/gRPC-Web status that is not a server fault, or the REST
 * error envelope on paths that are no RPC route. On an RPC route a wrong
 * method is 405 and a content type no RPC protocol speaks is 415, both with a
 * Connect error body whose ErrorInfo names that status; never an empty body.
 */
function checkRpcAnswer(ans: RawAnswer, context: string): string {
  const text = ans.bytes.toString("utf8");
  const fail = (why: string): never => {
    throw new Error(
      `${why}\n  answer: ${ans.status} ${JSON.stringify(ans.headers)} trailers=${JSON.stringify(ans.trailers)} ${JSON.stringify(ans.bytes.toString("latin1").slice(0, 400))}\n  request: ${context}`,
    );
  };
  const ct = String(ans.headers["content-type"] ?? "");
  if (/^application\/grpc/.test(ct)) {
    if (ans.status !== 200) fail(`gRPC answer with HTTP ${ans.status}`);
    let status = ans.headers["grpc-status"] as string | undefined;
    let message = ans.headers["grpc-message"] as string | undefined;
    if (status === undefined) {
      const t = ct.startsWith("application/grpc-web") ? grpcWebTrailer(ans.bytes) : ans.trailers;
      status = t?.["grpc-status"];
      message = t?.["grpc-message"];
    }
    if (status === undefined || !/^\d+$/.test(status) || Number(status) > 16) {
      fail(`no valid grpc-status (${status})`);
    }
    const decoded = decodeURIComponent(message ?? "");
    const n = Number(status);
    if (SERVER_FAULT_GRPC.has(n) && !(n === Code.Internal && isKnownLibraryInternal(decoded))) {
      fail(`grpc-status ${n} (server fault): ${decoded}`);
    }
    const leak = leakIn(decoded, context);
    if (leak) fail(`grpc-message leaks ${leak}`);
    return `grpc-${n}`;
  }
  if (ans.status === 200 && /^application\/connect\+(?:json|proto)\b/.test(ct)) {
    // Connect streaming: messages, then the end-of-stream message (flag 2) with any error.
    let at = 0;
    let end: { error?: { code?: unknown; message?: unknown } } | undefined;
    while (at + 5 <= ans.bytes.length) {
      const flags = ans.bytes[at] as number;
      const length = ans.bytes.readUInt32BE(at + 1);
      if (flags & 0x02) end = JSON.parse(ans.bytes.subarray(at + 5, at + 5 + length).toString());
      at += 5 + length;
    }
    if (at !== ans.bytes.length || end === undefined) return fail("no Connect end-of-stream");
    if (end.error === undefined) return "ok";
    const code = end.error.code;
    if (typeof code !== "string" || !(code in CONNECT_HTTP)) fail(`bad Connect code ${code}`);
    const message = typeof end.error.message === "string" ? end.error.message : "";
    if (CONNECT_FAULTS.has(code as string) && !isKnownLibraryInternal(message)) {
      fail(`Connect server fault ${code}`);
    }
    const leak = leakIn(message, context);
    if (leak) fail(`Connect message leaks ${leak}`);
    return `connect-${code}`;
  }
  if (ans.status === 200) {
    if (!/^application\/(?:json|proto)\b/.test(ct)) fail(`200 with content-type ${ct}`);
    return "ok";
  }
  if (/^application\/json/.test(ct)) {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text);
    } catch {
      return fail("error body is not JSON");
    }
    if (typeof body !== "object" || body === null) return fail("error body is not an object");
    if ("ok" in body) {
      assertRestError({ status: ans.status, text, headers: {} }, context);
      return `rest-${ans.status}`;
    }
    const code = body.code;
    if (typeof code !== "string" || !(code in CONNECT_HTTP))
      return fail(`bad Connect code ${code}`);
    const httpStatus = (body.details as { debug?: { metadata?: { http_status?: string } } }[])?.[0]
      ?.debug?.metadata?.http_status;
    const requestLevel =
      (ans.status === 405 || ans.status === 415) && httpStatus === String(ans.status);
    if (CONNECT_HTTP[code] !== ans.status && !requestLevel) {
      fail(`Connect code ${code} with HTTP ${ans.status}`);
    }
    const message = body.message;
    if (message !== undefined && typeof message !== "string") fail("Connect message not a string");
    // unimplemented (501) is the protocol's answer to an unknown compression; the rest are faults.
    if (
      CONNECT_FAULTS.has(code) &&
      !(code === "internal" && isKnownLibraryInternal((message as string | undefined) ?? ""))
    ) {
      fail(`Connect server fault ${code}`);
    }
    const leak = leakIn((message as string | undefined) ?? "", context);
    if (leak) fail(`Connect message leaks ${leak}`);
    return `connect-${code}`;
  }
  return fail("neither a success, a Connect/gRPC error nor the REST envelope");
}

/** `path` with its `n`-th letter (modulo the letters) written as %XX. */
function percentEncodeOne(path: string, n: number): string {
  const letters = [...path.matchAll(/[A-Za-z]/g)];
  const at = letters[n % letters.length]?.index ?? 1;
  const hex = (path.charCodeAt(at) as number).toString(16).toUpperCase();
  return `${path.slice(0, at)}%${hex}${path.slice(at + 1)}`;
}

/** Connect codes that mean the server broke (or hung). */
const CONNECT_FAULTS = new Set([
  "unknown",
  "internal",
  "data_loss",
  "unavailable",
  "deadline_exceeded",
]);

const CONTENT_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "application/proto",
  "application/connect+proto",
  "application/connect+json",
  "application/grpc-web+proto",
  "application/grpc-web",
  "application/grpc-web+json",
  "application/grpc-web-text",
  "application/grpc",
  "application/grpc+proto",
  "application/grpc+json",
  "text/plain",
  "",
];

type BodySpec =
  | { kind: "bytes"; bytes: Uint8Array }
  | { kind: "json"; text: string }
  | { kind: "message"; init: Record<string, unknown>; flip?: { at: number; byte: number } }
  | { kind: "valid" };

describe("raw requests to the Connect routes", () => {
  it(
    "random bytes, JSON and messages with every content type get a success or a non-fault Connect/gRPC error",
    async () => {
      const strings = stringsArb();
      const methodArb = fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(...METHODS).map(pathOf) },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            "/ingest.v1.PaymentsService/Nope",
            "/ingest.v1.Nope/RecordPayment",
            "/ingest.v1.PaymentsService/RecordPayment/",
            "/ingest.v1.paymentsservice/recordpayment",
          ),
        },
        {
          // Another spelling of a real route: one character percent-encoded.
          weight: 2,
          arbitrary: fc
            .tuple(fc.constantFrom(...METHODS).map(pathOf), fc.nat())
            .map(([p, n]) => percentEncodeOne(p, n)),
        },
      );
      const arb = fc
        .record({
          path: methodArb,
          contentType: fc.oneof(
            { weight: 6, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
            { weight: 1, arbitrary: fc.string({ unit: headerChar, maxLength: 30 }) },
          ),
          auth: fc.constantFrom("key", "admin", "none", "garbage"),
          framing: fc.oneof(
            { weight: 5, arbitrary: fc.constant("auto") },
            {
              weight: 1,
              arbitrary: fc.constantFrom("none", "frame", "badFlag", "shortLength", "longLength"),
            },
          ),
          flag: fc.integer({ min: 0, max: 255 }),
          extra: fc.option(
            fc.record({
              name: fc.constantFrom(
                "connect-protocol-version",
                "connect-timeout-ms",
                "grpc-timeout",
                "content-encoding",
                "connect-content-encoding",
                "grpc-encoding",
                "connect-accept-encoding",
                "grpc-accept-encoding",
              ),
              value: fc.oneof(
                fc.constantFrom(
                  "1",
                  "2",
                  "0",
                  "-1",
                  "gzip",
                  "br",
                  "identity",
                  "deflate",
                  "10S",
                  "1m",
                  "99999999999",
                ),
                fc.string({ unit: headerChar, maxLength: 12 }),
              ),
            }),
          ),
        })
        .chain((c) => {
          const method = METHODS.find((m) => pathOf(m) === decodeURIComponent(c.path));
          const body: fc.Arbitrary<BodySpec> = fc.oneof(
            fc.record({
              kind: fc.constant("bytes" as const),
              bytes: fc.uint8Array({ maxLength: 200 }),
            }),
            fc.record({ kind: fc.constant("json" as const), text: anyJsonText }),
            ...(method
              ? [
                  fc.record(
                    {
                      kind: fc.constant("message" as const),
                      init: messageInitArb(method.input, strings),
                      flip: fc.record({
                        at: fc.double({ min: 0, max: 1, noNaN: true }),
                        byte: fc.integer({ min: 0, max: 255 }),
                      }),
                    },
                    { requiredKeys: ["kind", "init"] },
                  ),
                ]
              : []),
            fc.constant({ kind: "valid" as const }),
          );
          return body.map((b) => ({ ...c, body: b, method }));
        });

      const tally = new Map<string, number>();
      await fc.assert(
        fc.asyncProperty(arb, async (c) => {
          const isJson = /json|text\/plain/.test(c.contentType) || c.contentType === "";
          let payload: Uint8Array;
          const b = c.body;
          if (b.kind === "bytes") payload = b.bytes;
          else if (b.kind === "json") payload = Buffer.from(b.text);
          else if (b.kind === "valid") {
            payload = Buffer.from(
              JSON.stringify(
                c.path.includes("Events") ? validEvent(ctx.siteId) : validPayment("pay_raw_valid"),
              ),
            );
          } else {
            // biome-ignore lint/style/noNonNullAssertion: a message body is only made for a known method.
            const desc = c.method!.input;
            const msg = create(desc, b.init as never);
            if (isJson) {
              payload = Buffer.from(toJsonString(desc, msg));
            } else payload = toBinary(desc, msg);
            if (b.flip && payload.length > 0) {
              payload = Buffer.from(payload);
              payload[Math.min(payload.length - 1, Math.floor(b.flip.at * payload.length))] =
                b.flip.byte;
            }
          }
          const enveloped = /grpc|connect\+/.test(c.contentType);
          let body: Uint8Array;
          if (c.framing === "none" || (c.framing === "auto" && !enveloped)) body = payload;
          else if (c.framing === "badFlag") body = frame(payload, c.flag);
          else {
            body = frame(payload);
            const declared =
              c.framing === "shortLength"
                ? Math.max(0, payload.length - 1 - (c.flag % 8))
                : c.framing === "longLength"
                  ? payload.length + 1 + c.flag * 1000
                  : payload.length;
            Buffer.from(body.buffer, body.byteOffset, body.byteLength).writeUInt32BE(declared, 1);
          }
          const headers: Record<string, string> = { "content-type": c.contentType };
          if (c.auth === "key") headers.authorization = `Bearer ${ctx.key}`;
          if (c.auth === "admin") headers.authorization = `Bearer ${ADMIN_TOKEN}`;
          if (c.auth === "garbage") headers.authorization = "Bearer mk_live_0";
          if (/grpc/.test(c.contentType)) headers.te = "trailers";
          if (c.extra) headers[c.extra.name] = c.extra.value;
          const url = `${ctx.url}${c.path}`;
          const answer = await rawPost(url, headers, body);
          const context = describeRequest({ url, headers, body });
          const kind = checkRpcAnswer(answer, context);
          if (c.method && kind.startsWith("rest-")) {
            throw new Error(`the REST envelope on an RPC route\n  request: ${context}`);
          }
          tally.set(kind, (tally.get(kind) ?? 0) + 1);
        }),
        runs(400),
      );
      console.info("connect raw fuzz outcomes:", Object.fromEntries(tally));
    },
    TEST_TIMEOUT,
  );
});

// ---------------------------------------------------------------------------
// Random messages through real clients

describe("random messages through connect-es clients (Connect JSON/binary, gRPC-Web, gRPC)", () => {
  it(
    "every RPC answers a success or a non-fault error with a sane ErrorInfo",
    async () => {
      const strings = stringsArb();
      const protocols = [
        { name: "connect-json", protocol: "connect", binary: false },
        { name: "connect-binary", protocol: "connect", binary: true },
        { name: "grpcweb", protocol: "grpcweb", binary: true },
        { name: "grpc", protocol: "grpc", binary: true },
      ] as const;
      const clients = new Map<
        string,
        Record<string, (req: unknown, opts: unknown) => Promise<unknown>>
      >();
      for (const p of protocols) {
        for (const s of SERVICES) {
          clients.set(
            `${p.name} ${s.typeName}`,
            rpcClient(s, ctx.url, p.protocol, { useBinaryFormat: p.binary }) as never,
          );
        }
      }
      const arb = fc
        .record({
          method: fc.constantFrom(...METHODS),
          protocol: fc.constantFrom(...protocols),
          auth: fc.oneof(
            { weight: 4, arbitrary: fc.constant("right") },
            { weight: 1, arbitrary: fc.constantFrom("key", "admin", "none", "garbage") },
          ),
        })
        .chain((c) => messageInitArb(c.method.input, strings).map((init) => ({ ...c, init })));
      const REASONS = new Set([
        "invalid_input",
        "unauthorized",
        "forbidden",
        "not_found",
        "method_not_allowed",
        "conflict",
        "quota_exceeded",
        "rate_limited",
      ]);
      const tally = new Map<string, number>();
      await fc.assert(
        fc.asyncProperty(arb, async (c) => {
          const client = clients.get(`${c.protocol.name} ${c.method.parent.typeName}`);
          const call = client?.[c.method.localName];
          if (!call) throw new Error(`no client for ${c.method.localName}`);
          const keyed = c.method.parent === PaymentsService || c.method.parent === EventsService;
          const auth = c.auth === "right" ? (keyed ? "key" : "admin") : c.auth;
          const authorization =
            auth === "key"
              ? `Bearer ${ctx.key}`
              : auth === "admin"
                ? `Bearer ${ADMIN_TOKEN}`
                : auth === "garbage"
                  ? "Bearer x"
                  : undefined;
          const message = create(c.method.input, c.init as never);
          const context = `${c.protocol.name} ${pathOf(c.method)} auth=${auth}`;
          try {
            await call.call(client, message, {
              headers: authorization ? { authorization } : {},
              timeoutMs: 10_000,
            });
            tally.set("ok", (tally.get("ok") ?? 0) + 1);
          } catch (err) {
            const ce = ConnectError.from(err);
            const info = ce.findDetails(ErrorInfoSchema)[0];
            const what = `${context}: ${Code[ce.code]} ${ce.rawMessage} reason=${info?.reason}`;
            expect(ce.code, `hang: ${what}`).not.toBe(Code.DeadlineExceeded);
            expect(
              [Code.Unknown, Code.Internal, Code.DataLoss, Code.Unavailable],
              `server fault: ${what}`,
            ).not.toContain(ce.code);
            if (info) expect(REASONS.has(info.reason), what).toBe(true);
            expect(
              leakIn(
                ce.rawMessage,
                JSON.stringify(c.init, (_k, v) => (typeof v === "bigint" ? String(v) : v)),
              ),
              what,
            ).toBeUndefined();
            tally.set(Code[ce.code], (tally.get(Code[ce.code]) ?? 0) + 1);
          }
        }),
        runs(300),
      );
      console.info("connect client fuzz outcomes:", Object.fromEntries(tally));
    },
    TEST_TIMEOUT,
  );
});

// ---------------------------------------------------------------------------
// Defects the fuzzing found, kept as plain tests now that they are fixed.

describe("formerly known defects, now guarded by src/rpc/body-guard.ts", () => {
  /** grpc-status of a gRPC answer: in the trailers, or in the headers of a trailers-only answer. */
  const grpcStatus = (a: { headers: Record<string, unknown>; trailers: Record<string, unknown> }) =>
    a.trailers["grpc-status"] ?? a.headers["grpc-status"];

  it("an undecodable protobuf request is invalid_argument, not internal", async () => {
    const garbage = new Uint8Array([0x01, 0x02, 0x03, 0xff, 0x00, 0x09]);
    const headers = { authorization: `Bearer ${ctx.key}` };
    const url = `${ctx.url}/ingest.v1.PaymentsService/RecordPayment`;
    const connect = await rawPost(
      url,
      { ...headers, "content-type": "application/proto" },
      garbage,
    );
    const grpc = await rawPost(
      url,
      { ...headers, "content-type": "application/grpc", te: "trailers" },
      frame(garbage),
    );
    expect([connect.status, JSON.parse(connect.bytes.toString()).code]).toEqual([
      400,
      "invalid_argument",
    ]);
    expect(grpcStatus(grpc)).toBe(String(Code.InvalidArgument));
  });

  // connect-es percent-encodes grpc-message with encodeURIComponent, which throws URIError on a
  // lone surrogate; its handler then never ends the response. The guard answers first.
  const answers = async (json: string) => {
    for (const contentType of ["application/grpc-web+json", "application/grpc+json"]) {
      const a = await rawPost(
        `${ctx.url}/ingest.v1.PaymentsService/RecordPayment`,
        { "content-type": contentType, authorization: `Bearer ${ctx.key}`, te: "trailers" },
        frame(Buffer.from(json)),
        2_000,
      );
      expect(grpcStatus(a)).toBe(String(Code.InvalidArgument));
    }
  };

  it("gRPC(-Web) JSON with an unknown key holding a lone surrogate gets an answer, not a hang", async () => {
    await answers('{"\\ud800":1}');
  });

  it("gRPC(-Web) JSON with a syntax error at an astral character gets an answer, not a hang", async () => {
    await answers("\u{10000}}");
  });

  it("an event whose p nests deeper than protobuf's limit is refused, so ListEvents stays readable", async () => {
    const depth = 150;
    const body = JSON.stringify({ ...validEvent(ctx.siteId), p: { x: "__DEEP__" } }).replace(
      '"__DEEP__"',
      "[".repeat(depth) + "]".repeat(depth),
    );
    const posted = await send(`${ctx.url}/api/v1/events`, {
      headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" },
      body,
    });
    expect(posted.status).toBe(400);
    const reports = ctx.client(ReportsService);
    await reports.listEvents({ siteId: ctx.siteId, limit: 5 }, { headers: ctx.adminHeaders });
  });
});

// ---------------------------------------------------------------------------
// The process survives

describe("after the fuzzing", () => {
  it("the server still answers /healthz and records payments over REST and Connect", async () => {
    expect((await send(`${ctx.url}/healthz`, { method: "GET" })).status).toBe(200);
    const headers = { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" };
    const rest = await send(`${ctx.url}/api/v1/payments`, {
      headers,
      body: JSON.stringify(validPayment("pay_after_connect_fuzz")),
    });
    expect(rest.status).toBe(200);
    const connect = await send(`${ctx.url}/ingest.v1.PaymentsService/RecordPayment`, {
      headers,
      body: JSON.stringify(validPayment("pay_after_connect_fuzz_rpc")),
    });
    expect([connect.status, JSON.parse(connect.text)]).toEqual([
      200,
      { paymentId: "pay_after_connect_fuzz_rpc" },
    ]);
  });
});
