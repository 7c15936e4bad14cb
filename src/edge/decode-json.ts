/**
 * Strict decoding of REST JSON bodies against the proto message that
 * describes them: unknown fields at any depth and values of the wrong JSON
 * type are refused with `invalid JSON: …` naming the field's path. Field
 * rules (lengths, enums, ranges) are the domain's, checked afterwards.
 *
 * Only proto field names (snake_case, as in the spec) are accepted. A JSON
 * `null` is taken as an absent field and removed.
 */
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import type { FastifyInstance } from "fastify";
import { doorErrors as errors } from "./door-errors.js";

/**
 * Makes `scope` take only JSON bodies (`application/json`, and `text/plain`
 * for browsers' preflight-free posts), kept as raw bytes: the size, encoding
 * and syntax checks then run in the spec's order, by {@link parseJsonBody}.
 */
export function acceptRawJsonBodies(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser(
    ["application/json", "text/plain"],
    { parseAs: "buffer" },
    (_req, body, done) => done(null, body),
  );
}

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Parses a body as JSON; throws `invalid JSON: …` for malformed text and for
 * bytes that are not UTF-8 (never silently turned into U+FFFD, so every door
 * refuses what gRPC's protobuf decoding refuses).
 */
export function parseJsonBody(body: Buffer | string | undefined): unknown {
  const text = typeof body === "string" ? body : decodeUtf8(body);
  if (text.trim() === "") throw errors.invalidJson("the body is empty");
  try {
    return JSON.parse(text);
  } catch (err) {
    throw errors.invalidJson(syntaxDetail(err, text));
  }
}

function decodeUtf8(body: Buffer | undefined): string {
  if (body === undefined) return "";
  try {
    return UTF8.decode(body);
  } catch {
    throw errors.invalidJson(`the body is not valid UTF-8 (at byte ${firstInvalidByte(body)})`);
  }
}

/** The offset of the first byte that breaks UTF-8 (RFC 3629: no overlongs, surrogates or > U+10FFFF). */
function firstInvalidByte(b: Buffer): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i] as number;
    const n =
      c < 0x80
        ? 0
        : c >= 0xc2 && c <= 0xdf
          ? 1
          : c >= 0xe0 && c <= 0xef
            ? 2
            : c >= 0xf0 && c <= 0xf4
              ? 3
              : -1;
    if (n < 0) return i;
    for (let k = 1; k <= n; k++) {
      const d = b[i + k];
      if (d === undefined || (d & 0xc0) !== 0x80) return i;
    }
    const d1 = b[i + 1] as number;
    // Overlong 3- and 4-byte forms, UTF-16 surrogates and code points past U+10FFFF.
    if (
      (c === 0xe0 && d1 < 0xa0) ||
      (c === 0xed && d1 > 0x9f) ||
      (c === 0xf0 && d1 < 0x90) ||
      (c === 0xf4 && d1 > 0x8f)
    )
      return i;
    i += n + 1;
  }
  return b.length;
}

/** V8's messages quote the body; say where the syntax breaks instead. */
function syntaxDetail(err: unknown, text: string): string {
  const message = err instanceof Error ? err.message : "";
  const at = /position (\d+)/.exec(message)?.[1];
  if (at !== undefined) return `syntax error at position ${at}`;
  if (/end of (JSON )?input|Unterminated/i.test(message)) {
    return `unexpected end of input at position ${text.length}`;
  }
  return "syntax error";
}

/**
 * Checks that `value` is a JSON object shaped like `desc`, and returns it
 * with `null` fields removed. Throws `invalid JSON: …` on the first problem.
 */
export function decodeStrict(
  desc: DescMessage,
  value: unknown,
  options: { jsonNames?: boolean } = {},
): Record<string, unknown> {
  if (!isObject(value)) throw errors.invalidJson("the body must be a JSON object");
  return checkMessage(desc, value, "", options.jsonNames ?? false);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

function wrongType(path: string, expected: string, v: unknown): never {
  throw errors.invalidJson(`${path} must be ${expected}, got ${typeName(v)}`);
}

/** `jsonNames`: lowerCamelCase JSON names are accepted besides proto names (protobuf JSON, as Connect sends). */
function checkMessage(
  desc: DescMessage,
  obj: Record<string, unknown>,
  prefix: string,
  jsonNames: boolean,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(obj)) {
    const path = prefix + key;
    const field = desc.fields.find((f) => f.name === key || (jsonNames && f.jsonName === key));
    if (!field) throw errors.invalidJson(`unknown field "${path}"`);
    if (v === null) continue;
    out[key] = checkField(field, v, path, jsonNames);
  }
  return out;
}

function checkField(field: DescField, v: unknown, path: string, jsonNames: boolean): unknown {
  switch (field.fieldKind) {
    case "scalar":
      return checkScalar(field.scalar, v, path, jsonNames);
    case "enum":
      if (typeof v !== "string") wrongType(path, "a string", v);
      return v;
    case "message":
      return checkMessageValue(field.message, v, path, jsonNames);
    case "list": {
      if (!Array.isArray(v)) wrongType(path, "an array", v);
      return v.map((item, i) => {
        const p = `${path}[${i}]`;
        if (field.listKind === "message")
          return checkMessageValue(field.message, item, p, jsonNames);
        if (field.listKind === "scalar") return checkScalar(field.scalar, item, p, jsonNames);
        if (typeof item !== "string") wrongType(p, "a string", item);
        return item;
      });
    }
    case "map": {
      if (!isObject(v)) wrongType(path, "an object", v);
      const entries = Object.entries(v).map(([k, item]): [string, unknown] => {
        const p = `${path}.${k}`;
        if (field.mapKind === "message")
          return [k, checkMessageValue(field.message, item, p, jsonNames)];
        if (field.mapKind === "scalar") return [k, checkScalar(field.scalar, item, p, jsonNames)];
        if (typeof item !== "string") wrongType(p, "a string", item);
        return [k, item];
      });
      // fromEntries defines own keys: `out[k] = …` would drop a "__proto__" key silently.
      return Object.fromEntries(entries);
    }
  }
}

function checkMessageValue(
  desc: DescMessage,
  v: unknown,
  path: string,
  jsonNames: boolean,
): unknown {
  // google.protobuf.Struct holds any JSON object: its content is the caller's.
  if (desc.typeName === "google.protobuf.Struct") {
    if (!isObject(v)) wrongType(path, "an object", v);
    return v;
  }
  if (!isObject(v)) wrongType(path, "an object", v);
  return checkMessage(desc, v, `${path}.`, jsonNames);
}

const INT64: ReadonlySet<ScalarType> = new Set([
  ScalarType.INT64,
  ScalarType.UINT64,
  ScalarType.SINT64,
  ScalarType.FIXED64,
  ScalarType.SFIXED64,
]);

/** `protoJson`: 64-bit integers may be decimal strings, as protobuf JSON writes them. */
function checkScalar(type: ScalarType, v: unknown, path: string, protoJson: boolean): unknown {
  switch (type) {
    case ScalarType.STRING:
    case ScalarType.BYTES:
      if (typeof v !== "string") wrongType(path, "a string", v);
      return v;
    case ScalarType.BOOL:
      if (typeof v !== "boolean") wrongType(path, "a boolean", v);
      return v;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      if (typeof v !== "number") wrongType(path, "a number", v);
      return v;
    default:
      if (protoJson && INT64.has(type) && typeof v === "string" && /^-?\d{1,20}$/.test(v)) return v;
      // Integer types: a JSON number without a fraction.
      if (typeof v !== "number" || !Number.isInteger(v)) wrongType(path, "an integer", v);
      return v;
  }
}
