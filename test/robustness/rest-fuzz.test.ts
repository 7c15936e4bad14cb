/**
 * Property-based robustness of the two REST endpoints, through real HTTP to
 * a listening server: whatever the body, headers, content type, method or
 * size, the answer is a success for a genuinely valid request or a 4xx
 * error envelope `{ok:false, error:{code, message}}`; never a 5xx, a
 * non-envelope body, a crash or a hang.
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { BROWSER_UA, validEvent } from "../helpers/fixtures.js";
import { fullPayment } from "../helpers/payment-fixtures.js";
import {
  type Answer,
  anyJsonText,
  assertRestError,
  describeRequest,
  headerChar,
  parseHttpResponse,
  rawExchange,
  runs,
  SEED,
  send,
  TEST_TIMEOUT,
} from "../helpers/robustness.js";
import { TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

/** A key of the same site with only the events scope. */
let eventsOnlyKey: string;

const ctx = useTestServer();
beforeAll(async () => {
  console.info(`rest-fuzz: fast-check seed ${SEED} (replay with FC_SEED=${SEED})`);

  eventsOnlyKey = (
    await ctx.server.admin.createKey({
      siteId: ctx.siteId,
      name: "events only",
      scopes: ["events"],
      actorUserId: ctx.tenant.ownerUserId,
    })
  ).key;
});

// ---------------------------------------------------------------------------
// Endpoints, valid bodies and the oracle

interface Endpoint {
  name: "payments" | "events";
  path: string;
  limit: number;
  limitText: string;
}

const PAYMENTS: Endpoint = {
  name: "payments",
  path: "/api/v1/payments",
  limit: 64 * 1024,
  limitText: "request body larger than 64 KB",
};
const EVENTS: Endpoint = {
  name: "events",
  path: "/api/v1/events",
  limit: 8 * 1024,
  limitText: "request body larger than 8 KB",
};
const ENDPOINTS = [PAYMENTS, EVENTS];

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function minimalPayment(id: string): Json {
  return {
    payment_id: id,
    customer: { id: "cus_min" },
    amount: 1000,
    currency: "JPY",
    kind: "refund",
    paid_at: "2024-01-15T19:30:00+09:00",
  };
}

function fullEvent(siteId: string): Json {
  return {
    s: siteId,
    e: "signup",
    u: "https://www.example.com/pricing?utm_source=news&gclid=abc",
    r: "https://google.com/",
    t: "Pricing",
    w: 1280,
    l: "en-US",
    uid: "user-1",
    p: { plan: "pro", n: 1, nested: { ok: true } },
    ts: TEST_NOW,
    ip: "203.0.113.9",
    ua: BROWSER_UA,
  };
}

/** The valid bodies mutations start from. */
function bases(): { endpoint: Endpoint; body: Json }[] {
  const ev = validEvent(ctx.siteId) as Json;
  return [
    { endpoint: PAYMENTS, body: fullPayment({ payment_id: "pay_fuzz_full" }) as Json },
    { endpoint: PAYMENTS, body: minimalPayment("pay_fuzz_min") },
    { endpoint: EVENTS, body: ev },
    { endpoint: EVENTS, body: fullEvent(ctx.siteId) },
    {
      endpoint: EVENTS,
      body: {
        s: ctx.siteId,
        b: [
          { e: "pageview", u: "https://example.com/", ua: BROWSER_UA },
          { e: "$identify", u: "https://example.com/", uid: "u1", ua: BROWSER_UA },
        ],
      },
    },
  ];
}

const utf8 = (s: string) => new Uint8Array(Buffer.from(s, "utf8"));

/**
 * POSTs `bytes` with a valid key and checks the answer against what the bytes
 * are: over the limit → 413 with the spec's message; not JSON → 400
 * `invalid JSON: …`; JSON but not an object → 400; an object → success or a
 * 4xx envelope (400/403/404 for events, 400 for payments).
 */
async function postAndCheck(endpoint: Endpoint, body: Uint8Array, label: string): Promise<Answer> {
  const headers = { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" };
  const url = `${ctx.url}${endpoint.path}`;
  const answer = await send(url, { headers, body });
  const context = `${label}\n  ${describeRequest({ url, headers, body })}`;
  const input = Buffer.from(body).toString("utf8");
  const fail = (why: string): never => {
    throw new Error(
      `${why}\n  answer: ${answer.status} ${JSON.stringify(answer.text.slice(0, 500))}\n  request: ${context}`,
    );
  };

  if (body.length > endpoint.limit) {
    const err = assertRestError(answer, context, { input });
    if (answer.status !== 413 || err.message !== endpoint.limitText) {
      fail(`expected 413 ${endpoint.limitText}`);
    }
    return answer;
  }
  if (answer.status === 413)
    fail(`413 for a body of ${body.length} bytes (limit ${endpoint.limit})`);

  let parsed: unknown;
  let parses = true;
  try {
    // Invalid UTF-8 is malformed JSON (RFC 8259 §8.1): decoded strictly, as the
    // server does, not with replacement characters that would make it parse; a
    // BOM is kept (ignoreBOM), so it stays a syntax error as it is there.
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(body));
  } catch {
    parses = false;
  }
  if (answer.status >= 200 && answer.status < 300) {
    if (!parses || typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      fail("success for a body that is not a JSON object");
    }
    if (endpoint === PAYMENTS) {
      const id = (parsed as { payment_id?: unknown }).payment_id;
      expect(answer.status, context).toBe(200);
      expect(JSON.parse(answer.text), context).toEqual({ ok: true, data: { payment_id: id } });
    } else {
      expect(answer.status, context).toBe(204);
      expect(answer.text, context).toBe("");
    }
    return answer;
  }
  const err = assertRestError(answer, context, { input });
  if (!parses) {
    if (answer.status !== 400 || !err.message.startsWith("invalid JSON: ")) {
      fail("malformed JSON must be 400 invalid JSON: …");
    }
  } else if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    if (answer.status !== 400 || err.message !== "invalid JSON: the body must be a JSON object") {
      fail("a JSON non-object must be 400 invalid JSON: the body must be a JSON object");
    }
  } else {
    const allowed = endpoint === EVENTS ? [400, 403, 404] : [400];
    if (!allowed.includes(answer.status)) fail(`status ${answer.status} for a JSON object`);
    if (
      answer.status === 400 &&
      !/^invalid (?:JSON|payment input|event input): /.test(err.message)
    ) {
      fail("a 400 for a JSON object must name invalid JSON or invalid input");
    }
  }
  return answer;
}

// ---------------------------------------------------------------------------
// Mutations of valid bodies, as small descriptors (so a failure prints them,
// not a megabyte of body) rendered to bytes inside the property.

type Path = (string | number)[];

type RawValue =
  | { kind: "huge"; length: number; char: string }
  | { kind: "deep"; depth: number; shape: "array" | "object" }
  | { kind: "number"; text: string };

type StructOp =
  | { op: "drop"; pick: number }
  | { op: "retype"; pick: number; value: Json }
  | { op: "unknownKey"; pick: number; key: string; value: Json }
  | { op: "raw"; pick: number; raw: RawValue }
  | {
      op: "duplicate";
      pick: number;
      raw: RawValue | { kind: "json"; value: Json };
      first: boolean;
    };

type TextOp =
  | { op: "bom" }
  | { op: "truncate"; at: number }
  | { op: "insert"; at: number; text: string }
  | { op: "wrapArray" }
  | { op: "flipByte"; at: number; byte: number };

const rawValueArb: fc.Arbitrary<RawValue> = fc.oneof(
  fc.record({
    kind: fc.constant("huge" as const),
    length: fc.oneof(
      fc.integer({ min: 1, max: 3_000 }),
      fc.integer({ min: 7_000, max: 70_000 }),
      fc.constantFrom(8_192, 65_536, 1 << 20),
    ),
    char: fc.constantFrom("a", "é", "😀", "\u0000", '"', "\\", "\u2028", "\ud800"),
  }),
  fc.record({
    kind: fc.constant("deep" as const),
    depth: fc.oneof(fc.integer({ min: 1, max: 300 }), fc.constantFrom(1_000, 4_000, 10_000)),
    shape: fc.constantFrom("array" as const, "object" as const),
  }),
  fc.record({
    kind: fc.constant("number" as const),
    text: fc.constantFrom(
      "1e308",
      "-1e308",
      "1e400",
      "-1e400",
      "-0",
      "0",
      "-1",
      "5e-324",
      "1e-400",
      "0.1e1",
      "1E2",
      "29.990000000000001",
      "9007199254740993",
      "123456789012345678901234567890",
      "999999999999999.99",
      '"NaN"',
      '"Infinity"',
      '"-Infinity"',
      '"1e3"',
      '"29.99"',
      "true",
      "null",
      "[]",
      "{}",
    ),
  }),
);

const smallJson = fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>;

const structOpArb: fc.Arbitrary<StructOp> = fc.oneof(
  fc.record({ op: fc.constant("drop" as const), pick: fc.nat() }),
  fc.record({ op: fc.constant("retype" as const), pick: fc.nat(), value: smallJson }),
  fc.record({
    op: fc.constant("unknownKey" as const),
    pick: fc.nat(),
    key: fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.constantFrom("__proto__", "constructor", "prototype", "toString", "PAYMENT_ID", "s ", ""),
    ),
    value: smallJson,
  }),
  fc.record({ op: fc.constant("raw" as const), pick: fc.nat(), raw: rawValueArb }),
  fc.record({
    op: fc.constant("duplicate" as const),
    pick: fc.nat(),
    raw: fc.oneof(rawValueArb, fc.record({ kind: fc.constant("json" as const), value: smallJson })),
    first: fc.boolean(),
  }),
);

const textOpArb: fc.Arbitrary<TextOp> = fc.oneof(
  fc.constant({ op: "bom" as const }),
  fc.record({
    op: fc.constant("truncate" as const),
    at: fc.double({ min: 0, max: 1, noNaN: true }),
  }),
  fc.record({
    op: fc.constant("insert" as const),
    at: fc.double({ min: 0, max: 1, noNaN: true }),
    text: fc.oneof(
      fc.constantFrom(" ", "\u0000", "\u2028", ",", "}", "]", '"', "\\", "\ud800", "\uFEFF", "{}"),
      fc.string({ unit: "binary", maxLength: 4 }),
    ),
  }),
  fc.constant({ op: "wrapArray" as const }),
  fc.record({
    op: fc.constant("flipByte" as const),
    at: fc.double({ min: 0, max: 1, noNaN: true }),
    byte: fc.integer({ min: 0, max: 255 }),
  }),
);

function renderRaw(raw: RawValue | { kind: "json"; value: Json }): string {
  switch (raw.kind) {
    case "huge":
      return JSON.stringify(raw.char.repeat(raw.length));
    case "deep":
      return raw.shape === "array"
        ? "[".repeat(raw.depth) + "]".repeat(raw.depth)
        : `${'{"a":'.repeat(raw.depth)}1${"}".repeat(raw.depth)}`;
    case "number":
      return raw.text;
    case "json":
      return JSON.stringify(raw.value);
  }
}

function isObj(v: unknown): v is Record<string, Json> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Every path to a value (not the root), and every path to an object (the root included). */
function paths(root: Json): { values: Path[]; objects: Path[] } {
  const values: Path[] = [];
  const objects: Path[] = [];
  const walk = (v: Json, p: Path) => {
    if (isObj(v)) {
      objects.push(p);
      for (const k of Object.keys(v)) {
        values.push([...p, k]);
        walk(v[k] as Json, [...p, k]);
      }
    } else if (Array.isArray(v)) {
      v.forEach((item, i) => {
        values.push([...p, i]);
        walk(item, [...p, i]);
      });
    }
  };
  walk(root, []);
  return { values, objects };
}

function getAt(root: Json, p: Path): Json {
  let v: Json = root;
  for (const k of p) v = (v as Record<string, Json>)[k] as Json;
  return v;
}

/** Sets an own property (a "__proto__" key stays a key). */
function define(obj: object, key: string | number, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Renders a mutated body: structural ops on a clone, then text ops, then byte flips. */
function renderMutation(base: Json, structural: StructOp[], textual: TextOp[]): Uint8Array {
  let root = structuredClone(base);
  const raws = new Map<string, string>();
  const placeholder = (raw: string) => {
    const ph = `\u0007RAW${raws.size}\u0007`;
    raws.set(JSON.stringify(ph), raw);
    return ph;
  };
  for (const op of structural) {
    const { values, objects } = paths(root);
    if (op.op === "unknownKey" || op.op === "duplicate") {
      const p = objects[op.pick % objects.length] as Path;
      const target = getAt(root, p) as Record<string, Json>;
      if (op.op === "unknownKey") {
        define(target, op.key, op.value);
        continue;
      }
      const keys = Object.keys(target);
      const key = keys[op.pick % Math.max(1, keys.length)];
      if (key === undefined) continue;
      const keyPh = placeholder(JSON.stringify(key));
      const valPh = placeholder(renderRaw(op.raw));
      const rebuilt: Record<string, Json> = {};
      if (op.first) define(rebuilt, keyPh, valPh);
      for (const k of keys) define(rebuilt, k, target[k]);
      if (!op.first) define(rebuilt, keyPh, valPh);
      if (p.length === 0) root = rebuilt;
      else define(getAt(root, p.slice(0, -1)) as object, p[p.length - 1] as string, rebuilt);
      continue;
    }
    if (values.length === 0) continue;
    const p = values[op.pick % values.length] as Path;
    const parent = getAt(root, p.slice(0, -1)) as Record<string, Json> | Json[];
    const last = p[p.length - 1] as string | number;
    if (op.op === "drop") {
      if (Array.isArray(parent)) parent.splice(last as number, 1);
      else delete parent[last as string];
    } else if (op.op === "retype") {
      define(parent, last, op.value);
    } else {
      define(parent, last, placeholder(renderRaw(op.raw)));
    }
  }
  let text = JSON.stringify(root);
  for (const [ph, raw] of raws) text = text.split(ph).join(raw);

  let bytes = Buffer.from(text, "utf8");
  for (const op of textual) {
    const at = (f: number) => Math.floor(f * bytes.length);
    if (op.op === "bom") bytes = Buffer.concat([Buffer.from("\uFEFF"), bytes]);
    else if (op.op === "truncate") bytes = bytes.subarray(0, at(op.at));
    else if (op.op === "insert") {
      const i = at(op.at);
      bytes = Buffer.concat([bytes.subarray(0, i), Buffer.from(op.text), bytes.subarray(i)]);
    } else if (op.op === "wrapArray") {
      bytes = Buffer.concat([Buffer.from("["), bytes, Buffer.from("]")]);
    } else if (bytes.length > 0) {
      bytes = Buffer.from(bytes);
      bytes[Math.min(bytes.length - 1, at(op.at))] = op.byte;
    }
  }
  return new Uint8Array(bytes);
}

// ---------------------------------------------------------------------------
// 1. Bodies

describe("REST bodies: any body gets a success or a 4xx envelope", () => {
  const endpointArb = fc.constantFrom(...ENDPOINTS);

  it(
    "arbitrary JSON values (fc.jsonValue, fc.anything as JSON)",
    async () => {
      await fc.assert(
        fc.asyncProperty(endpointArb, anyJsonText, async (endpoint, text) => {
          await postAndCheck(endpoint, utf8(text), `json value to ${endpoint.name}`);
        }),
        runs(300),
      );
    },
    TEST_TIMEOUT,
  );

  it(
    "arbitrary strings and bytes, including invalid UTF-8",
    async () => {
      const bodyArb = fc.oneof(
        fc.string({ unit: "binary", maxLength: 300 }).map(utf8),
        fc.string({ unit: "grapheme", maxLength: 300 }).map(utf8),
        fc.uint8Array({ maxLength: 400 }),
        fc
          .tuple(
            fc.constantFrom("{", "[", '{"', "\uFEFF{", '{"payment_id":', '{"s":', "  ", ""),
            fc.uint8Array({ maxLength: 200 }),
          )
          .map(([head, tail]) => new Uint8Array(Buffer.concat([Buffer.from(head), tail]))),
      );
      await fc.assert(
        fc.asyncProperty(endpointArb, bodyArb, async (endpoint, body) => {
          await postAndCheck(endpoint, body, `bytes to ${endpoint.name}`);
        }),
        runs(300),
      );
    },
    TEST_TIMEOUT,
  );

  it(
    "mutations of valid bodies (dropped fields, wrong types, unknown keys, huge strings, deep nesting, odd numbers, duplicate keys, BOM, broken bytes)",
    async () => {
      const all = bases();
      const arb = fc.record({
        base: fc.nat({ max: all.length - 1 }),
        structural: fc.array(structOpArb, { minLength: 0, maxLength: 3 }),
        textual: fc.oneof(
          { weight: 3, arbitrary: fc.constant([] as TextOp[]) },
          { weight: 1, arbitrary: fc.array(textOpArb, { minLength: 1, maxLength: 2 }) },
        ),
      });
      await fc.assert(
        fc.asyncProperty(arb, async ({ base, structural, textual }) => {
          const { endpoint, body } = all[base] as { endpoint: Endpoint; body: Json };
          const bytes = renderMutation(body, structural, textual);
          await postAndCheck(endpoint, bytes, `mutation of base ${base} (${endpoint.name})`);
        }),
        runs(400),
      );
    },
    TEST_TIMEOUT,
  );

  it("every unmutated base body is accepted (the oracle's starting point)", async () => {
    for (const { endpoint, body } of bases()) {
      const answer = await postAndCheck(endpoint, utf8(JSON.stringify(body)), "base");
      expect(answer.status).toBeLessThan(300);
    }
  });

  it(
    "deep nesting up to and beyond the limits does not crash the parser",
    async () => {
      const arb = fc.record({
        endpoint: endpointArb,
        depth: fc.oneof(
          fc.integer({ min: 500, max: 40_000 }),
          fc.constantFrom(4_096, 10_000, 32_768),
        ),
        shape: fc.constantFrom("array", "object", "inP", "inMetadata"),
      });
      await fc.assert(
        fc.asyncProperty(arb, async ({ endpoint, depth, shape }) => {
          const nested =
            shape === "object"
              ? `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`
              : "[".repeat(depth) + "]".repeat(depth);
          const text =
            shape === "inP"
              ? `{"s":${JSON.stringify(ctx.siteId)},"e":"pageview","u":"https://example.com/","ua":${JSON.stringify(BROWSER_UA)},"p":{"x":${nested}}}`
              : shape === "inMetadata"
                ? `{"payment_id":"pay_deep","metadata":{"x":${nested}}}`
                : nested;
          await postAndCheck(endpoint, utf8(text), `depth ${depth} ${shape} to ${endpoint.name}`);
        }),
        runs(40),
      );
    },
    TEST_TIMEOUT,
  );

  it(
    "random values for the known fields of each endpoint",
    async () => {
      const anyValue = fc.oneof(
        { weight: 3, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
        { weight: 2, arbitrary: fc.double() },
        { weight: 1, arbitrary: fc.integer() },
        { weight: 1, arbitrary: smallJson },
      );
      const id = fc.oneof(
        fc.stringMatching(/^[A-Za-z0-9_\-:.]{1,130}$/),
        fc.string({ maxLength: 10 }),
        anyValue,
      );
      const money = fc.oneof(
        fc.double(),
        fc.constantFrom(0, -0, 0.001, 29.99, 1e15, 9999999999999.99, -1),
        anyValue,
      );
      const time = fc.oneof(
        fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
        fc.constantFrom("2024-02-30T00:00:00Z", "2024-01-15 10:30:00Z", "2016-12-31T23:59:60Z", ""),
        anyValue,
      );
      const dict = fc.oneof(
        fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ unit: "binary", maxLength: 20 }), {
          maxKeys: 4,
        }),
        anyValue,
      );
      const payment = fc.record(
        {
          payment_id: id,
          customer: fc.oneof(
            fc.record(
              {
                id,
                email: fc.oneof(fc.emailAddress(), anyValue),
                user_id: anyValue,
                name: anyValue,
                country: fc.oneof(fc.constantFrom("GB", "gb", "UK", "XK", "US"), anyValue),
                visitor_id: anyValue,
                metadata: dict,
              },
              { requiredKeys: [] },
            ),
            anyValue,
          ),
          amount: money,
          currency: fc.oneof(
            fc.constantFrom("USD", "JPY", "KWD", "CLF", "usd", "XAU", "XTS"),
            anyValue,
          ),
          fee: money,
          kind: fc.oneof(fc.constantFrom("charge", "refund", "chargeback", "CHARGE"), anyValue),
          paid_at: time,
          status: fc.oneof(fc.constantFrom("succeeded", "pending", "failed", "ok"), anyValue),
          metadata: dict,
          subscription: fc.oneof(
            fc.record(
              {
                id,
                plan: anyValue,
                interval: fc.oneof(
                  fc.constantFrom("day", "week", "month", "year", "hour"),
                  anyValue,
                ),
                status: fc.oneof(fc.constantFrom("active", "trialing", "ended", "gone"), anyValue),
                amount: money,
                started_at: time,
                current_period_end: time,
                canceled_at: time,
                ended_at: time,
              },
              { requiredKeys: [] },
            ),
            anyValue,
          ),
        },
        { requiredKeys: [] },
      );
      const eventFields = {
        e: fc.oneof(
          fc.constantFrom("pageview", "$identify", "Zahlung äöü", "a".repeat(65)),
          anyValue,
        ),
        u: fc.oneof(
          fc.webUrl(),
          fc.constantFrom(
            "https://example.com/",
            "https://EXAMPLE.com.:8443/x",
            "ftp://example.com/",
          ),
          anyValue,
        ),
        r: fc.oneof(fc.webUrl(), anyValue),
        t: anyValue,
        w: fc.oneof(fc.integer({ min: -5, max: 40_000 }), anyValue),
        l: anyValue,
        uid: anyValue,
        p: fc.oneof(
          fc.object({ maxDepth: 2 }).map((o) => JSON.parse(JSON.stringify(o) ?? "{}")),
          anyValue,
        ),
        ts: fc.oneof(fc.constant(TEST_NOW), fc.maxSafeInteger(), anyValue),
        ip: fc.oneof(
          fc.ipV4(),
          fc.ipV6(),
          fc.constantFrom("", "::ffff:1.2.3.4", "999.1.1.1"),
          anyValue,
        ),
        ua: fc.oneof(fc.constantFrom(BROWSER_UA, "curl/8.0", ""), anyValue),
      };
      const siteId = fc.oneof(
        { weight: 4, arbitrary: fc.constant("__SITE__") },
        { weight: 1, arbitrary: fc.constantFrom("", "site_unknown") },
        { weight: 1, arbitrary: anyValue },
      );
      const event = fc.record(
        {
          s: siteId,
          ...eventFields,
          b: fc.array(fc.record({ s: siteId, ...eventFields }, { requiredKeys: [] }), {
            maxLength: 3,
          }),
        },
        { requiredKeys: [] },
      );
      const arb = fc.oneof(
        payment.map((body) => ({ endpoint: PAYMENTS, body })),
        event.map((body) => ({ endpoint: EVENTS, body })),
      );
      await fc.assert(
        fc.asyncProperty(arb, async ({ endpoint, body }) => {
          const text = (JSON.stringify(body) ?? "null")
            .split('"__SITE__"')
            .join(JSON.stringify(ctx.siteId));
          await postAndCheck(endpoint, utf8(text), `typed random ${endpoint.name}`);
        }),
        runs(300),
      );
    },
    TEST_TIMEOUT,
  );
});

// ---------------------------------------------------------------------------
// 2. Headers and methods

type AuthSpec =
  | { kind: "absent" }
  | { kind: "valid" }
  | { kind: "eventsOnly" }
  | {
      kind: "nearMiss";
      variant:
        | "upperPrefix"
        | "upperHex"
        | "extraSpaces"
        | "tabs"
        | "trailingSpace"
        | "lowerScheme"
        | "noScheme"
        | "basic"
        | "token"
        | "hex47"
        | "hex49"
        | "nonAscii"
        | "quoted"
        | "twice"
        | "commaList"
        | "prefixOnly";
    }
  | { kind: "random"; value: string }
  | { kind: "bearerRandom"; value: string };

const authArb: fc.Arbitrary<AuthSpec> = fc.oneof(
  fc.constant({ kind: "absent" as const }),
  fc.constant({ kind: "valid" as const }),
  fc.constant({ kind: "eventsOnly" as const }),
  fc.record({
    kind: fc.constant("nearMiss" as const),
    variant: fc.constantFrom(
      "upperPrefix",
      "upperHex",
      "extraSpaces",
      "tabs",
      "trailingSpace",
      "lowerScheme",
      "noScheme",
      "basic",
      "token",
      "hex47",
      "hex49",
      "nonAscii",
      "quoted",
      "twice",
      "commaList",
      "prefixOnly",
    ),
  }),
  fc.record({
    kind: fc.constant("random" as const),
    value: fc.string({ unit: headerChar, maxLength: 80 }),
  }),
  fc.record({
    kind: fc.constant("bearerRandom" as const),
    value: fc.oneof(
      fc.string({ unit: headerChar, maxLength: 70 }),
      fc.stringMatching(/^mk_live_[0-9a-fA-F]{0,60}$/),
    ),
  }),
);

function renderAuth(spec: AuthSpec): string | undefined {
  const key = ctx.key;
  const hex = key.slice("mk_live_".length);
  switch (spec.kind) {
    case "absent":
      return undefined;
    case "valid":
      return `Bearer ${key}`;
    case "eventsOnly":
      return `Bearer ${eventsOnlyKey}`;
    case "random":
      return spec.value;
    case "bearerRandom":
      return `Bearer ${spec.value}`;
    case "nearMiss":
      switch (spec.variant) {
        case "upperPrefix":
          return `Bearer MK_LIVE_${hex}`;
        case "upperHex":
          return `Bearer mk_live_${hex.toUpperCase()}`;
        case "extraSpaces":
          return `Bearer    ${key}`;
        case "tabs":
          return `Bearer\t${key}\t`;
        case "trailingSpace":
          return `Bearer ${key} x`;
        case "lowerScheme":
          return `bearer ${key}`;
        case "noScheme":
          return key;
        case "basic":
          return `Basic ${Buffer.from(`${key}:`).toString("base64")}`;
        case "token":
          return `Token ${key}`;
        case "hex47":
          return `Bearer ${key.slice(0, -1)}`;
        case "hex49":
          return `Bearer ${key}0`;
        case "nonAscii":
          return `Bearer ${key.slice(0, -1)}\u00e9`;
        case "quoted":
          return `Bearer "${key}"`;
        case "twice":
          return `Bearer ${key} Bearer ${key}`;
        case "commaList":
          return `Bearer ${key}, Bearer ${key}`;
        case "prefixOnly":
          return "Bearer mk_live_";
      }
  }
}

/**
 * Whether an Authorization value carries `key` as the spec says
 * (`Bearer <KEY>`; the scheme is case-insensitive, RFC 9110 §11.1), after
 * fetch strips leading and trailing spaces and tabs.
 */
function carriesKey(value: string | undefined, key: string): boolean {
  if (value === undefined) return false;
  const v = value.replace(/^[\t ]+|[\t ]+$/g, "");
  const m = /^bearer[\t ]+(\S+)$/i.exec(v);
  return m?.[1] === key;
}

const CONTENT_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "application/json;charset=UTF-8",
  "Application/JSON",
  "application/json; charset=latin1",
  'application/json; charset="utf-8"',
  "text/plain",
  "text/plain; charset=us-ascii",
  "multipart/form-data; boundary=----x",
  "application/x-www-form-urlencoded",
  "",
  " ",
  ";",
  "application/json;;",
  "application/jsonp",
  "application/json-patch+json",
  "application/vnd.api+json",
  "application/*",
  "*/*",
  "json",
  "application/json, text/plain",
  "text/html",
  "application/octet-stream",
  "application/proto",
  "application/connect+json",
  "application/grpc",
];

/** Whether a random extra header names a Content-Encoding the REST door refuses. */
function encodingRefused(extra: { name: string; value: string } | null): boolean {
  if (extra?.name !== "content-encoding") return false;
  // fetch trims header values (HTAB and space) as HTTP does.
  const value = extra.value.replace(/^[\t ]+|[\t ]+$/g, "").toLowerCase();
  return !["", "identity", "gzip", "x-gzip", "deflate", "br"].includes(value);
}

/** The media type without parameters, lower-cased. */
function essence(contentType: string | undefined): string {
  return (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

describe("REST headers and methods: always a 4xx envelope unless genuinely valid", () => {
  it(
    "random Authorization, Content-Type and method on both paths",
    async () => {
      const methodArb = fc.oneof(
        {
          weight: 4,
          arbitrary: fc.constantFrom(
            "POST",
            "post",
            "Post",
            "GET",
            "HEAD",
            "PUT",
            "PATCH",
            "DELETE",
            "OPTIONS",
            "PROPFIND",
            "SEARCH",
            "PURGE",
            "LINK",
            "QUERY",
            "MKCOL",
            "REPORT",
          ),
        },
        {
          weight: 1,
          arbitrary: fc
            .stringMatching(/^[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]{0,11}$/)
            .filter((m) => !/^(?:connect|trace|track)$/i.test(m)),
        },
      );
      const arb = fc.record({
        endpoint: fc.constantFrom(...ENDPOINTS),
        method: fc.oneof(
          { weight: 3, arbitrary: fc.constant("POST") },
          { weight: 2, arbitrary: methodArb },
        ),
        auth: authArb,
        contentType: fc.oneof(
          { weight: 3, arbitrary: fc.constant("application/json") },
          { weight: 3, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
          { weight: 1, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: fc.string({ unit: headerChar, maxLength: 40 }) },
        ),
        validBody: fc.boolean(),
        junkBody: fc.string({ maxLength: 30 }),
        extra: fc.option(
          fc.record({
            name: fc.constantFrom(
              "x-request-id",
              "accept",
              "content-encoding",
              "transfer-encoding-x",
              "x-forwarded-for",
              "expect-ct",
            ),
            value: fc.string({ unit: headerChar, maxLength: 40 }),
          }),
        ),
      });
      let n = 0;
      await fc.assert(
        fc.asyncProperty(arb, async (c) => {
          n++;
          const authValue = renderAuth(c.auth);
          const headers: Record<string, string> = {};
          if (authValue !== undefined) headers.authorization = authValue;
          if (c.contentType !== undefined) headers["content-type"] = c.contentType;
          if (c.extra) headers[c.extra.name] = c.extra.value;
          const method = /^(?:delete|get|head|options|post|put)$/i.test(c.method)
            ? c.method.toUpperCase()
            : c.method;
          const bodyText =
            c.endpoint === PAYMENTS
              ? JSON.stringify(c.validBody ? minimalPayment(`pay_hdr_${n}`) : { junk: c.junkBody })
              : JSON.stringify(c.validBody ? validEvent(ctx.siteId) : { junk: c.junkBody });
          const hasBody = method !== "GET" && method !== "HEAD";
          const url = `${ctx.url}${c.endpoint.path}`;
          const answer = await send(url, {
            method,
            headers,
            body: hasBody ? utf8(bodyText) : undefined,
          });
          const context = describeRequest({
            method,
            url,
            headers,
            body: hasBody ? bodyText : undefined,
          });
          const ok = answer.status >= 200 && answer.status < 300;
          const authOk = carriesKey(authValue, ctx.key);
          const eventsKeyOk = carriesKey(authValue, eventsOnlyKey);
          const jsonType = ["application/json", "text/plain"].includes(essence(c.contentType));

          if (ok) {
            // A success only for a POST with the key, a JSON content type and a valid body.
            expect(
              {
                method,
                authOk: authOk || (eventsKeyOk && c.endpoint === EVENTS),
                jsonType,
                valid: c.validBody,
              },
              context,
            ).toEqual({
              method: "POST",
              authOk: true,
              jsonType: true,
              valid: true,
            });
            return;
          }
          const err = assertRestError(answer, context, { head: method === "HEAD" });
          if (method === "POST") {
            if (!authOk && !eventsKeyOk) {
              expect(answer.status, `no usable key must be 401\n${context}`).toBe(401);
            } else if (eventsKeyOk && c.endpoint === PAYMENTS) {
              expect([answer.status, err.message], context).toEqual([
                403,
                "API key lacks the payments scope",
              ]);
            } else if (encodingRefused(c.extra)) {
              // An encoding the REST door does not decode is refused before the body is read.
              expect([answer.status, err.message], context).toEqual([
                415,
                "Content-Encoding must be gzip, deflate, br or identity",
              ]);
            } else if (!jsonType && answer.status === 415) {
              expect(err.message, context).toBe("Content-Type must be application/json");
            }
          } else if (["GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"].includes(method)) {
            if (answer.status === 415 && !jsonType) {
              // The 405 route reads a body first, so a non-JSON body is refused as such.
              expect(err.message, context).toBe("Content-Type must be application/json");
            } else {
              expect(answer.status, context).toBe(405);
              expect(answer.headers.get("allow"), context).toBe("POST");
            }
          } else {
            // Methods without a route: not_found, or refused while reading the request.
            expect([400, 404, 413, 415], context).toContain(answer.status);
          }
        }),
        runs(300),
      );
    },
    TEST_TIMEOUT,
  );

  it(
    "malformed HTTP/1.1 requests (odd methods, control bytes in headers) get the envelope too",
    async () => {
      // Everything but CR and LF, so the request stays one request.
      const byte = fc.integer({ min: 0, max: 255 }).filter((b) => b !== 0x0a && b !== 0x0d);
      const bytes = (max: number) =>
        fc.array(byte, { minLength: 1, maxLength: max }).map((a) => Buffer.from(a));
      const arb = fc.record({
        endpoint: fc.constantFrom(...ENDPOINTS),
        method: fc.oneof(
          fc.constantFrom("POST", "FOO", "post", "P0ST", "GET", "M-SEARCH", "PRI"),
          bytes(10),
        ),
        headerName: fc.oneof(fc.constantFrom("Authorization", "Content-Type", "X-Test"), bytes(12)),
        headerValue: bytes(40),
        withKey: fc.boolean(),
      });
      await fc.assert(
        fc.asyncProperty(arb, async (c) => {
          const request = Buffer.concat([
            Buffer.from(c.method),
            Buffer.from(` ${c.endpoint.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`),
            c.withKey ? Buffer.from(`Authorization: Bearer ${ctx.key}\r\n`) : Buffer.alloc(0),
            Buffer.from(c.headerName),
            Buffer.from(": "),
            Buffer.from(c.headerValue),
            Buffer.from(
              "\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
            ),
          ]);
          const context = JSON.stringify(request.toString("latin1"));
          const raw = await rawExchange(ctx.server.port, request);
          if (raw.length === 0) throw new Error(`connection closed without an answer: ${context}`);
          const res = parseHttpResponse(raw);
          const isHead = Buffer.from(c.method).toString("latin1") === "HEAD";
          assertRestError({ status: res.status, text: res.body, headers: res.headers }, context, {
            head: isHead,
          });
        }),
        runs(150),
      );
    },
    TEST_TIMEOUT,
  );
});

// ---------------------------------------------------------------------------
// 3. Sizes

/** A valid body of exactly `size` bytes: valid JSON padded with whitespace. */
function paddedBody(endpoint: Endpoint, size: number, pad: string, n: number): Uint8Array {
  const json = JSON.stringify(
    endpoint === PAYMENTS ? minimalPayment(`pay_size_${n}`) : validEvent(ctx.siteId),
  );
  const room = size - Buffer.byteLength(json);
  if (room < 0) throw new Error("base body larger than the wanted size");
  const padding = pad.repeat(Math.ceil(room / pad.length)).slice(0, room);
  return utf8(json + padding);
}

/** A stream of `bytes` in chunks of `chunk` bytes: sent chunked, without Content-Length. */
function streamOf(bytes: Uint8Array, chunk: number): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + chunk));
      offset += chunk;
    },
  });
}

describe("REST sizes: around and far beyond the limits", () => {
  it(
    "bodies of limit-3 … limit+3 bytes: accepted up to the limit, 413 above",
    async () => {
      const arb = fc.record({
        endpoint: fc.constantFrom(...ENDPOINTS),
        delta: fc.integer({ min: -3, max: 3 }),
        pad: fc.constantFrom(" ", "\n", "\t", "\r\n"),
        chunked: fc.boolean(),
        chunk: fc.constantFrom(1_000, 4_096, 16_384, 65_536),
      });
      let n = 0;
      await fc.assert(
        fc.asyncProperty(arb, async (c) => {
          n++;
          const size = c.endpoint.limit + c.delta;
          const body = paddedBody(c.endpoint, size, c.pad, n);
          expect(body.length).toBe(size);
          const headers = {
            authorization: `Bearer ${ctx.key}`,
            "content-type": "application/json",
          };
          const url = `${ctx.url}${c.endpoint.path}`;
          const answer = await send(url, {
            headers,
            body: c.chunked ? streamOf(body, c.chunk) : body,
          });
          const context = `${size} bytes ${c.chunked ? "chunked" : "with content-length"} to ${c.endpoint.name}`;
          if (size <= c.endpoint.limit) {
            expect(answer.status, `${context}: ${answer.text}`).toBe(
              c.endpoint === PAYMENTS ? 200 : 204,
            );
          } else {
            const err = assertRestError(answer, context);
            expect([answer.status, err.message], context).toEqual([413, c.endpoint.limitText]);
          }
        }),
        runs(40),
      );
    },
    TEST_TIMEOUT,
  );

  it(
    "far beyond the limit (up to 2 MB), with and without Content-Length: 413 with a key, 401 without, never a hang",
    async () => {
      const arb = fc.record({
        endpoint: fc.constantFrom(...ENDPOINTS),
        size: fc.constantFrom(100_000, 1 << 20, 2 << 20),
        chunked: fc.boolean(),
        keyValid: fc.boolean(),
      });
      await fc.assert(
        fc.asyncProperty(arb, async (c) => {
          const body = new Uint8Array(c.size).fill(0x20);
          body[0] = 0x7b; // "{"
          const headers = {
            authorization: c.keyValid ? `Bearer ${ctx.key}` : "Bearer mk_live_nope",
            "content-type": "application/json",
          };
          const context = `${c.size} bytes ${c.chunked ? "chunked" : "with content-length"} to ${c.endpoint.name}, key ${c.keyValid ? "valid" : "unknown"}`;
          const answer = await send(`${ctx.url}${c.endpoint.path}`, {
            headers,
            body: c.chunked ? streamOf(body, 64 * 1024) : body,
          });
          const err = assertRestError(answer, context);
          if (c.keyValid)
            expect([answer.status, err.message], context).toEqual([413, c.endpoint.limitText]);
          else expect(answer.status, context).toBe(401);
        }),
        runs(16),
      );
    },
    TEST_TIMEOUT,
  );

  it("a declared Content-Length over the limit is refused at once, before any body byte", async () => {
    for (const endpoint of ENDPOINTS) {
      const raw = await rawExchange(
        ctx.server.port,
        Buffer.from(
          `POST ${endpoint.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ctx.key}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${endpoint.limit * 100}\r\nConnection: close\r\n\r\n`,
        ),
      );
      const res = parseHttpResponse(raw);
      const err = assertRestError(
        { status: res.status, text: res.body, headers: res.headers },
        endpoint.path,
      );
      expect([res.status, err.message]).toEqual([413, endpoint.limitText]);
    }
  });

  it("a chunked body that passes the limit and then stalls is answered 413, not left hanging", async () => {
    for (const endpoint of ENDPOINTS) {
      const stalled = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new Uint8Array(endpoint.limit + 1_000).fill(0x20));
          // …and never closes.
        },
      });
      const answer = await send(`${ctx.url}${endpoint.path}`, {
        headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" },
        body: stalled,
        timeoutMs: 5_000,
      });
      const err = assertRestError(answer, `stalled stream to ${endpoint.path}`);
      expect([answer.status, err.message]).toEqual([413, endpoint.limitText]);
    }
  });
});

// ---------------------------------------------------------------------------
// 6. The process survives

describe("after the fuzzing", () => {
  it("the server still answers /healthz and records a valid payment and event", async () => {
    const health = await send(`${ctx.url}/healthz`, { method: "GET" });
    expect(health.status).toBe(200);
    const headers = { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" };
    const pay = await send(`${ctx.url}/api/v1/payments`, {
      headers,
      body: JSON.stringify(minimalPayment("pay_after_rest_fuzz")),
    });
    expect([pay.status, JSON.parse(pay.text)]).toEqual([
      200,
      { ok: true, data: { payment_id: "pay_after_rest_fuzz" } },
    ]);
    const ev = await send(`${ctx.url}/api/v1/events`, {
      headers,
      body: JSON.stringify(validEvent(ctx.siteId)),
    });
    expect(ev.status).toBe(204);
  });
});

// A sanity check of the oracle itself, so a broken oracle cannot pass silently.
describe("the envelope oracle", () => {
  it("rejects non-envelope bodies, wrong codes, 5xx and leaked stack frames", () => {
    const good = {
      status: 400,
      text: '{"ok":false,"error":{"code":"invalid_input","message":"x"}}',
    };
    expect(() => assertRestError(good, "")).not.toThrow();
    for (const bad of [
      { status: 500, text: '{"ok":false,"error":{"code":"internal","message":"internal error"}}' },
      { status: 400, text: '{"error":"Bad Request","message":"Client Error","statusCode":400}' },
      { status: 400, text: '{"ok":false,"error":{"code":"forbidden","message":"x"}}' },
      { status: 400, text: '{"ok":false,"error":{"code":"invalid_input","message":""}}' },
      {
        status: 400,
        text: '{"ok":false,"error":{"code":"invalid_input","message":"x","stack":"y"}}',
      },
      {
        status: 400,
        text: '{"ok":false,"error":{"code":"invalid_input","message":"x"},"extra":1}',
      },
      {
        status: 400,
        text: JSON.stringify({
          ok: false,
          error: { code: "invalid_input", message: "boom\n    at parse (/work/main/src/x.ts:1:2)" },
        }),
      },
      { status: 200, text: "" },
      { status: 400, text: "not json" },
    ]) {
      expect(() => assertRestError(bad, ""), bad.text).toThrow();
    }
  });
});
