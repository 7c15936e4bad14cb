/**
 * protoc-gen-openapi: a local protoc plugin, run by `buf generate`, that
 * writes `openapi/openapi.json` (OpenAPI 3.1) for the REST door.
 *
 * Paths and verbs come from the methods' `google.api.http` annotations and
 * schemas from their messages (proto field names, as the REST door takes
 * them; unknown fields are refused, so `additionalProperties: false`). What
 * the proto cannot say about REST (the success envelope, statuses, headers,
 * error messages, body limits) comes from the service's own code: the error
 * catalogues of src/domain/errors.ts and src/edge/door-errors.ts, the HTTP
 * table of src/edge/http-errors.ts and the limits of
 * src/edge/body-limits.ts, so the document states what the server enforces.
 */
import { readFileSync } from "node:fs";
import {
  create,
  createFileRegistry,
  type DescEnum,
  type DescExtension,
  type DescField,
  type DescMessage,
  type DescMethod,
  getOption,
  hasOption,
  ScalarType,
} from "@bufbuild/protobuf";
import {
  type CodeGeneratorRequest,
  CodeGeneratorResponse_Feature,
  CodeGeneratorResponseSchema,
  FileDescriptorSetSchema,
} from "@bufbuild/protobuf/wkt";
import { getComments, type Plugin, runNodeJs } from "@bufbuild/protoplugin";
import { errors } from "../src/domain/errors.js";
import { bodyLimitOf, COLLECT_BODY_LIMIT } from "../src/edge/body-limits.js";
import { doorErrors, INTERNAL_MESSAGE, type ServiceError } from "../src/edge/door-errors.js";
import { HTTP_ERRORS, httpErrorOf } from "../src/edge/http-errors.js";
import { CONNECTOR_BODY_LIMIT } from "../src/http/connectors/connector-limits.js";

type Json = Record<string, unknown>;

const OUTPUT = "openapi.json";
const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  version: string;
  description: string;
};

/** An error response's example: the exact envelope the server sends. */
function envelope(err: ServiceError): Json {
  return { ok: false, error: { code: httpErrorOf(err).code, message: err.message } };
}

const errorExamples = (list: { summary: string; err: Parameters<typeof envelope>[0] }[]) =>
  Object.fromEntries(
    list.map((e, i) => [`e${i + 1}`, { summary: e.summary, value: envelope(e.err) }]),
  );

const mediaTypeError = doorErrors.unsupportedMediaType("Content-Type must be application/json");

interface ErrorResponse {
  description: string;
  examples: Json;
  /** An example Retry-After value, when the response carries the header. */
  retryAfter?: string;
}

/** What REST adds to each annotated method: outcome, errors and examples. */
interface RestProfile {
  scope: "payments" | "events";
  success: (method: DescMethod) => Json;
  /** Error responses by status: examples of the exact messages. */
  errors: Record<number, ErrorResponse>;
  examples: Json;
}

const authErrors = (scope: string) => ({
  401: {
    description: "Missing, malformed, unknown or revoked key.",
    examples: errorExamples([
      { summary: "No bearer key, or not an mk_live_ key", err: errors.missingKey() },
      { summary: "Deleted or never existed", err: errors.unknownKey() },
    ]),
  },
  403: {
    description: `The key lacks the \`${scope}\` scope${scope === "events" ? ", or `s` names another site" : ""}.`,
    examples: errorExamples([
      { summary: "Scope missing", err: errors.missingScope(scope) },
      ...(scope === "events"
        ? [{ summary: "Another site's id in `s`", err: errors.foreignSite() }]
        : []),
    ]),
  },
});

const commonErrors = (limitKb: number) => ({
  413: {
    description: `Body larger than ${limitKb} KB (checked before it is read).`,
    examples: errorExamples([
      { summary: "Too large", err: doorErrors.bodyTooLarge(limitKb * 1024) },
    ]),
  },
  415: {
    description: "Content-Type other than application/json (or text/plain).",
    examples: errorExamples([{ summary: "Wrong media type", err: mediaTypeError }]),
  },
  500: {
    description: "A fault of the service; the cause is logged, never shown. Retry with backoff.",
    examples: errorExamples([
      {
        summary: "Internal",
        err: errors.internal(INTERNAL_MESSAGE),
      },
    ]),
  },
});

const PROFILES: Record<string, RestProfile> = {
  "ingest.v1.PaymentsService.RecordPayment": {
    scope: "payments",
    success: (method) => ({
      200: {
        description:
          "Stored (or updated: re-sending a payment_id updates the payment, so retries are safe).",
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["ok", "data"],
              additionalProperties: false,
              properties: { ok: { const: true }, data: ref(method.output) },
            },
            example: { ok: true, data: { payment_id: "pay_1001" } },
          },
        },
      },
    }),
    errors: {
      400: {
        description:
          "Malformed JSON, an unknown field, or invalid fields (all reported at once, sorted by field).",
        examples: errorExamples([
          {
            summary: "Invalid fields",
            err: errors.invalid(
              "invalid payment input: amount: must be greater than 0; currency: must be a 3-letter ISO 4217 code",
            ),
          },
          { summary: "Unknown field", err: doorErrors.invalidJson('unknown field "amout"') },
        ]),
      },
      ...authErrors("payments"),
      503: {
        description: "The store is unavailable. Retry after `Retry-After` seconds, with backoff.",
        retryAfter: "2",
        examples: errorExamples([{ summary: "Store down", err: errors.storeUnavailable() }]),
      },
    },
    examples: {
      charge: {
        summary: "A charge with its customer",
        value: {
          payment_id: "pay_1001",
          customer: { id: "cus_42", email: "ada@example.com", user_id: "u_42" },
          amount: 29.99,
          currency: "USD",
          kind: "charge",
          paid_at: "2024-01-15T10:30:00Z",
        },
      },
      subscription: {
        summary: "A subscription renewal",
        value: {
          payment_id: "in_2002",
          customer: { id: "cus_42" },
          amount: 49,
          fee: 1.72,
          currency: "EUR",
          kind: "charge",
          paid_at: "2024-02-15T10:30:00Z",
          subscription: { id: "sub_7", plan: "pro", interval: "month", amount: 49 },
        },
      },
    },
  },
  "ingest.v1.EventsService.RecordEvents": {
    scope: "events",
    success: () => ({
      204: {
        description:
          "Recorded. Events that look automated are dropped and still answer 204, with `X-Ingest-Dropped`.",
        headers: {
          "X-Quota-Remaining": { $ref: "#/components/headers/X-Quota-Remaining" },
          "X-Ingest-Dropped": { $ref: "#/components/headers/X-Ingest-Dropped" },
          "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" },
        },
      },
    }),
    errors: {
      400: {
        description:
          "Malformed JSON, an unknown or invalid field, more than 50 events, a host not on the site, or several sites in one batch.",
        examples: errorExamples([
          { summary: "Unknown field", err: doorErrors.invalidJson('unknown field "x"') },
        ]),
      },
      ...authErrors("events"),
      404: {
        description: "Unknown site.",
        examples: errorExamples([{ summary: "Unknown site", err: errors.unknownSite() }]),
      },
      429: {
        description:
          "The account is over its monthly event ceiling. Stop until `Retry-After` (seconds to the next UTC month); earlier retries are refused.",
        retryAfter: "1296000",
        examples: errorExamples([{ summary: "Quota", err: errors.quotaExceeded(1_296_000) }]),
      },
      503: {
        description:
          "The ingest queue is full (`rate_limited`) or the store is unavailable (`unavailable`). Retry after `Retry-After` seconds, with exponential backoff.",
        retryAfter: "2",
        examples: errorExamples([
          { summary: "Queue full", err: errors.queueFull() },
          { summary: "Store down", err: errors.storeUnavailable() },
        ]),
      },
    },
    examples: {
      pageview: {
        summary: "A pageview forwarded with the visitor's IP and user agent",
        value: {
          s: "site_123",
          e: "pageview",
          u: "https://acme.test/pricing?utm_source=newsletter",
          ip: "203.0.113.9",
          ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 Safari/605.1.15",
        },
      },
      batch: {
        summary: "A batch (up to 50 events for one site)",
        value: {
          s: "site_123",
          b: [
            { e: "pageview", u: "https://acme.test/", ts: 1705314600000 },
            { e: "signup", u: "https://acme.test/welcome", p: { plan: "pro" } },
            { e: "$identify", u: "https://acme.test/welcome", uid: "u_42" },
          ],
        },
      },
    },
  },
};

/** `#/components/schemas/<Name>` for a message; the schema is added on first use. */
const schemas: Record<string, Json> = {};
function ref(message: DescMessage): Json {
  if (message.typeName === "google.protobuf.Struct") {
    return { type: "object", description: "Any JSON object." };
  }
  const name = message.name;
  if (!(name in schemas)) {
    schemas[name] = {}; // placeholder first: messages may refer to themselves
    schemas[name] = messageSchema(message);
  }
  return { $ref: `#/components/schemas/${name}` };
}

function describe(text: string | undefined): Json {
  const t = text?.trim().replace(/\s*\n\s*/g, " ");
  return t ? { description: t } : {};
}

function scalarSchema(type: ScalarType): Json {
  switch (type) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { type: "number" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return { type: "integer", format: "int64" };
    default:
      return { type: "integer", format: "int32" };
  }
}

/** An enum as proto JSON writes it: by value name. */
function enumSchema(e: DescEnum): Json {
  return { type: "string", enum: e.values.map((v) => v.name) };
}

/** A list's items or a map's values: a message, an enum or a scalar. */
function elementSchema(e: { scalar?: ScalarType; enum?: DescEnum; message?: DescMessage }): Json {
  if (e.message) return ref(e.message);
  if (e.enum) return enumSchema(e.enum);
  return scalarSchema(e.scalar as ScalarType);
}

function fieldSchema(field: DescField): Json {
  const doc = describe(getComments(field).leading);
  switch (field.fieldKind) {
    case "scalar":
      return { ...scalarSchema(field.scalar), ...doc };
    case "enum":
      return { ...enumSchema(field.enum), ...doc };
    case "message":
      return { ...ref(field.message), ...doc };
    case "list":
      return { type: "array", items: elementSchema(field), ...doc };
    case "map":
      return { type: "object", additionalProperties: elementSchema(field), ...doc };
  }
}

/**
 * A message as a JSON Schema. A field is required when the proto declares
 * it without `optional` and it is neither a list nor a map: that is how the
 * API's protos mark the fields the validators require.
 */
function messageSchema(message: DescMessage): Json {
  const properties: Record<string, Json> = {};
  const required: string[] = [];
  for (const field of message.fields) {
    properties[field.name] = fieldSchema(field);
    const optional = field.proto.proto3Optional || field.oneof !== undefined;
    if (!optional && field.fieldKind !== "list" && field.fieldKind !== "map") {
      required.push(field.name);
    }
  }
  return {
    type: "object",
    ...describe(getComments(message).leading),
    ...(required.length ? { required } : {}),
    additionalProperties: false,
    properties,
  };
}

const jsonError = (examples: Json) => ({
  "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" }, examples },
});

function operation(method: DescMethod, verb: string, path: string): Json {
  const id = `${method.parent.typeName}.${method.name}`;
  const profile = PROFILES[id];
  if (!profile) throw new Error(`${id} has a google.api.http rule but no REST profile`);
  const limit = bodyLimitOf(method.parent.typeName, method.name);
  const limitKb = Math.round(limit / 1024);
  const responses: Json = { ...profile.success(method) };
  const errs: Record<string, ErrorResponse> = { ...profile.errors, ...commonErrors(limitKb) };
  for (const [status, e] of Object.entries(errs)) {
    responses[status] = {
      description: e.description,
      headers: {
        "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" },
        ...(e.retryAfter ? { "Retry-After": { $ref: "#/components/headers/Retry-After" } } : {}),
      },
      content: jsonError(e.examples),
    };
  }
  return {
    [verb]: {
      operationId: `${method.parent.name}_${method.name}`,
      tags: [method.parent.name],
      summary: `${method.name} (${verb.toUpperCase()} ${path})`,
      description: [
        getComments(method).leading?.trim(),
        `Requires a key with the \`${profile.scope}\` scope.`,
        `The body is at most ${limitKb} KB (${limit} bytes); larger bodies get 413 before they are read.`,
        `Also served over Connect, gRPC-Web and gRPC as \`${method.parent.typeName}/${method.name}\`.`,
      ]
        .filter(Boolean)
        .join("\n\n"),
      security: [{ apiKey: [] }],
      "x-body-limit-bytes": limit,
      requestBody: {
        required: true,
        description: `JSON, at most ${limitKb} KB.`,
        content: {
          "application/json": { schema: ref(method.input), examples: profile.examples },
        },
      },
      responses,
    },
  };
}

/** What REST adds to each annotated ReportsService read: its query's errors and an example. */
interface ReadProfile {
  /** Query parameters the method requires (the others may be left out). */
  required: readonly string[];
  /** The 400s of its query and fields, exact messages. */
  invalid: ServiceError[];
  /** The 404s. */
  notFound: ServiceError[];
}

const queryErrors = [
  errors.invalid('unknown query parameter "x"'),
  errors.invalid("from: must be given once"),
];

const READ_PROFILES: Record<string, ReadProfile> = {
  "ingest.v1.ReportsService.SiteOverview": {
    required: ["from", "to"],
    invalid: [
      errors.invalid("from: required"),
      errors.invalid("from: must be RFC 3339, e.g. 2024-01-15T10:30:00Z"),
      errors.invalid("to: must be after from"),
      errors.invalid("to: must be at most 366 days after from"),
      ...queryErrors,
    ],
    notFound: [errors.siteNotFound("site_123")],
  },
  "ingest.v1.ReportsService.CustomerJourney": {
    required: [],
    invalid: queryErrors,
    notFound: [errors.customerNotFound("cus_42")],
  },
  "ingest.v1.ReportsService.GetAccess": { required: [], invalid: queryErrors, notFound: [] },
};

/** Output-form schemas: proto JSON as Connect writes it (JSON names, defaults left out). */
const outputSchemas: Record<string, Json> = {};
function outputRef(message: DescMessage): Json {
  if (message.typeName === "google.protobuf.Struct") {
    return { type: "object", description: "Any JSON object." };
  }
  const name = `${message.name}Json`;
  if (!(name in outputSchemas)) {
    outputSchemas[name] = {};
    const properties: Record<string, Json> = {};
    for (const field of message.fields) {
      const doc = describe(getComments(field).leading);
      type Element = { scalar?: ScalarType; enum?: DescEnum; message?: DescMessage };
      const element = (e: Element) =>
        e.message ? outputRef(e.message) : e.enum ? enumSchema(e.enum) : outputScalar(e.scalar);
      properties[field.jsonName] =
        field.fieldKind === "list"
          ? { type: "array", items: element(field), ...doc }
          : field.fieldKind === "map"
            ? { type: "object", additionalProperties: element(field), ...doc }
            : { ...element(field as Element), ...doc };
    }
    outputSchemas[name] = {
      type: "object",
      description: [
        getComments(message)
          .leading?.trim()
          .replace(/\s*\n\s*/g, " "),
        "Proto JSON: fields at their default (empty, zero, unset) are left out.",
      ]
        .filter(Boolean)
        .join(" "),
      additionalProperties: false,
      properties,
    };
  }
  return { $ref: `#/components/schemas/${name}` };
}

/** A scalar as proto JSON writes it: 64-bit integers as decimal strings. */
function outputScalar(type: ScalarType | undefined): Json {
  const s = scalarSchema(type as ScalarType);
  return s.format === "int64" ? { type: "string", format: "int64", pattern: "^-?[0-9]+$" } : s;
}

/** A ReportsService read served by the reports door (src/http/reports/reports-door.ts). */
function readOperation(method: DescMethod, path: string, given?: ReadProfile): Json {
  const id = `${method.parent.typeName}.${method.name}`;
  const profile = given ?? READ_PROFILES[id];
  if (!profile) throw new Error(`${id} has a google.api.http GET rule but no read profile`);
  const bound = [...path.matchAll(/\{([a-z_]+)\}/g)].map((x) => x[1] as string);
  const parameters = method.input.fields.map((field) => ({
    name: field.name,
    in: bound.includes(field.name) ? "path" : "query",
    required: bound.includes(field.name) || profile.required.includes(field.name),
    schema: { type: "string" },
    ...describe(getComments(field).leading),
  }));
  const errorResponse = (description: string, list: ServiceError[], retryAfter = false) => ({
    description,
    headers: {
      "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" },
      ...(retryAfter ? { "Retry-After": { $ref: "#/components/headers/Retry-After" } } : {}),
    },
    content: jsonError(
      errorExamples(list.map((err) => ({ summary: err.message.slice(0, 60), err }))),
    ),
  });
  return {
    get: {
      operationId: `${method.parent.name}_${method.name}`,
      tags: [method.parent.name],
      summary: `${method.name} (GET ${path})`,
      description: [
        getComments(method).leading?.trim(),
        "Requires `Authorization: Bearer <ADMIN_TOKEN>` (every site) or a `reports` key (its own site only; a key with the events or payments scope is refused), as over RPC.",
        "The body is the proto JSON of the response, identical to the Connect JSON of the same call. Query parameters are the request's other fields, each at most once; any other parameter is refused.",
        `Also served over Connect, gRPC-Web and gRPC as \`${method.parent.typeName}/${method.name}\`.`,
      ]
        .filter(Boolean)
        .join("\n\n"),
      security: [{ adminToken: [] }, { apiKey: [] }],
      parameters,
      responses: {
        200: {
          description: "The report.",
          headers: { "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" } },
          content: { "application/json": { schema: outputRef(method.output) } },
        },
        400: errorResponse("A query parameter unknown, repeated or invalid.", profile.invalid),
        401: errorResponse("Missing or wrong ADMIN_TOKEN, or an unknown or revoked key.", [
          errors.badAdminToken(),
          errors.unknownKey(),
        ]),
        403: errorResponse("A key without the reports scope, or of another site.", [
          errors.missingScope("reports"),
          errors.foreignSite(),
        ]),
        ...(profile.notFound.length > 0
          ? { 404: errorResponse("Unknown site or customer.", profile.notFound) }
          : {}),
        500: errorResponse("A fault of the service; the cause is logged, never shown.", [
          errors.internal(INTERNAL_MESSAGE),
        ]),
        503: errorResponse("The store is unavailable.", [errors.storeUnavailable()], true),
      },
    },
  };
}

/** The 400s of each ReportsService POST (a query in its body): examples of the exact messages. */
const QUERY_PROFILES: Record<string, ServiceError[]> = {
  "ingest.v1.ReportsService.Query": [
    errors.invalid('metrics: unknown metric "visits_total"'),
    errors.invalid("currency: required with a revenue metric (net_revenue)"),
  ],
  "ingest.v1.ReportsService.Funnel": [errors.invalid("steps: must have 2 to 8 steps")],
};

/**
 * A ReportsService read whose request is a JSON body (POST): the reports'
 * access rule and answer, with the request message as its body.
 */
function queryOperation(method: DescMethod, path: string): Json {
  const id = `${method.parent.typeName}.${method.name}`;
  const invalid = QUERY_PROFILES[id];
  if (!invalid) throw new Error(`${id} has a google.api.http POST rule but no query profile`);
  const read = readOperation(method, path, { required: [], invalid, notFound: [] }) as {
    get: { parameters: { in: string }[]; description: string } & Record<string, unknown>;
  };
  const limitKb = Math.round(bodyLimitOf(method.parent.typeName, method.name) / 1024);
  return {
    post: {
      ...read.get,
      summary: `${method.name} (POST ${path})`,
      description: [
        getComments(method).leading?.trim(),
        "Requires `Authorization: Bearer <ADMIN_TOKEN>` (every site) or a `reports` key (its own site only), as over RPC.",
        "The answer is the proto JSON of the response, identical to the Connect JSON of the same call.",
        `Also served over Connect, gRPC-Web and gRPC as \`${method.parent.typeName}/${method.name}\`.`,
      ]
        .filter(Boolean)
        .join("\n\n"),
      parameters: read.get.parameters.filter((p) => p.in === "path"),
      requestBody: {
        required: true,
        description: `The request's proto JSON, at most ${limitKb} KB; the path names the site.`,
        content: { "application/json": { schema: ref(method.input) } },
      },
    },
  };
}

/**
 * The browser side, which has no proto method of its own: the public collect
 * endpoint (the events body of RecordEvents, without a key) and the script.
 */
function browserPaths(eventsInput: DescMessage): Json {
  const limitKb = Math.round(COLLECT_BODY_LIMIT / 1024);
  const cors = {
    "Access-Control-Allow-Origin": { $ref: "#/components/headers/Access-Control-Allow-Origin" },
  };
  const errorsOf = (list: Record<number, ErrorResponse>): Json =>
    Object.fromEntries(
      Object.entries(list).map(([status, e]) => [
        status,
        {
          description: e.description,
          headers: {
            ...cors,
            ...(e.retryAfter
              ? { "Retry-After": { $ref: "#/components/headers/Retry-After" } }
              : {}),
          },
          content: jsonError(e.examples),
        },
      ]),
    );
  return {
    "/api/v1/collect": {
      post: {
        operationId: "collect",
        tags: ["Browser"],
        summary: "Collect (POST /api/v1/collect): events from the tracking script",
        description: [
          "The public endpoint the browser script posts to. No key: the site id `s` is the credential, the `Origin` (when sent) must be a page on one of the site's hostnames, and the visitor's address and user agent come from the connection (`ip` and `ua` in the body are refused).",
          "Same body and rules as POST /api/v1/events. `Content-Type: text/plain` is accepted so browsers send it without a CORS preflight.",
          `The body is at most ${limitKb} KB. Each client address may send COLLECT_RATE_LIMIT requests a minute (default 600).`,
        ].join("\n\n"),
        security: [],
        "x-body-limit-bytes": COLLECT_BODY_LIMIT,
        requestBody: {
          required: true,
          content: {
            "text/plain": { schema: ref(eventsInput) },
            "application/json": {
              schema: ref(eventsInput),
              example: {
                s: "site_123",
                e: "pageview",
                u: "https://acme.test/pricing",
                r: "https://www.google.com/",
              },
            },
          },
        },
        responses: {
          200: {
            description: "Stored; the visitor id to pass with payments as `customer.visitor_id`.",
            headers: cors,
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  required: ["ok", "data"],
                  additionalProperties: false,
                  properties: {
                    ok: { const: true },
                    data: {
                      type: "object",
                      required: ["visitor_id"],
                      additionalProperties: false,
                      properties: { visitor_id: { type: "string" } },
                    },
                  },
                },
                example: { ok: true, data: { visitor_id: "v_3f2a…" } },
              },
            },
          },
          204: {
            description: "Nothing stored: every event looked automated (`X-Ingest-Dropped`).",
            headers: {
              ...cors,
              "X-Ingest-Dropped": { $ref: "#/components/headers/X-Ingest-Dropped" },
            },
          },
          ...errorsOf({
            400: {
              description:
                "Malformed JSON, an unknown or invalid field, `ip`/`ua` in the body, or an `Origin` not on the site.",
              examples: errorExamples([
                { summary: "Unknown field", err: doorErrors.invalidJson('unknown field "x"') },
              ]),
            },
            404: {
              description: "Unknown site.",
              examples: errorExamples([{ summary: "Unknown site", err: errors.unknownSite() }]),
            },
            429: {
              description:
                "Too many requests from this address (`rate_limited`), or the account is over its monthly quota (`quota_exceeded`). Wait `Retry-After` seconds.",
              retryAfter: "1",
              examples: errorExamples([
                { summary: "Per-address limit", err: errors.tooManyRequests(1) },
                { summary: "Quota", err: errors.quotaExceeded(1_296_000) },
              ]),
            },
            503: {
              description: "The ingest queue is full or the store is unavailable.",
              retryAfter: "2",
              examples: errorExamples([
                { summary: "Queue full", err: errors.queueFull() },
                { summary: "Store down", err: errors.storeUnavailable() },
              ]),
            },
            ...commonErrors(limitKb),
          }),
        },
      },
      options: {
        operationId: "collectPreflight",
        tags: ["Browser"],
        summary: "CORS preflight of POST /api/v1/collect",
        security: [],
        responses: {
          204: {
            description: "Any origin may post JSON here.",
            headers: {
              ...cors,
              "Access-Control-Allow-Methods": { schema: { type: "string", const: "POST" } },
              "Access-Control-Allow-Headers": { schema: { type: "string", const: "Content-Type" } },
              "Access-Control-Max-Age": { schema: { type: "integer" } },
            },
          },
        },
      },
    },
    "/js/script.js": {
      get: {
        operationId: "trackerScript",
        tags: ["Browser"],
        summary: "The tracking script (see docs/tracker.md for the snippet)",
        security: [],
        responses: {
          200: {
            description: "JavaScript; gzip or brotli when accepted; cached an hour, with an ETag.",
            headers: { ETag: { schema: { type: "string" } } },
            content: { "text/javascript": { schema: { type: "string" } } },
          },
          304: { description: "Not modified (If-None-Match matched the ETag)." },
          404: {
            description: "The script was not built (`npm run build`).",
            content: jsonError(
              errorExamples([
                {
                  summary: "Not built",
                  err: doorErrors.notServed("the tracking script is not built: run npm run build"),
                },
              ]),
            ),
          },
        },
      },
    },
    ...dashboardPaths(),
  };
}

/** The dashboard's page and files (docs/dashboard.md); its data comes from ReportsService over RPC. */
function dashboardPaths(): Json {
  const notBuilt = {
    description: "The dashboard was not built (`npm run build`).",
    content: jsonError(
      errorExamples([
        {
          summary: "Not built",
          err: doorErrors.notServed("the dashboard is not built: run npm run build"),
        },
      ]),
    ),
  };
  const file = (operationId: string, summary: string, type: string): Json => ({
    get: {
      operationId,
      tags: ["Browser"],
      summary,
      security: [],
      responses: {
        200: {
          description: "gzip or brotli when accepted; revalidated on every load (no-cache, ETag).",
          headers: { ETag: { schema: { type: "string" } } },
          content: { [type]: { schema: { type: "string" } } },
        },
        304: { description: "Not modified (If-None-Match matched the ETag)." },
        404: notBuilt,
      },
    },
  });
  return {
    "/dashboard": {
      get: {
        operationId: "dashboard",
        tags: ["Browser"],
        summary:
          "The revenue dashboard (a page; sign in with ADMIN_TOKEN; `?site=<id>&period=30d`, see docs/dashboard.md)",
        security: [],
        responses: {
          200: {
            description: "HTML, with a Content-Security-Policy that allows only this origin.",
            content: { "text/html": { schema: { type: "string" } } },
          },
          404: notBuilt,
        },
      },
    },
    "/dashboard/app.js": file("dashboardScript", "The dashboard's script", "text/javascript"),
    "/dashboard/app.css": file("dashboardStyles", "The dashboard's styles", "text/css"),
    ...setupPaths(notBuilt),
  };
}

/** The first run's setup page and its two calls (docs/running.md, First run). */
function setupPaths(notBuilt: Json): Json {
  const refusals = (list: { summary: string; err: ServiceError }[]) => ({
    description: "Refused, with the service's own message (the page shows it).",
    content: jsonError(errorExamples(list)),
  });
  const tokenRefusals = [
    { summary: "Not the last start's token", err: errors.setupTokenInvalid() },
    { summary: "Used already", err: errors.setupTokenUsed() },
    { summary: "More than an hour old", err: errors.setupTokenExpired() },
  ];
  const body = (properties: Json, required: string[]) => ({
    required: true,
    content: {
      "application/json": {
        schema: { type: "object", additionalProperties: false, required, properties },
      },
    },
  });
  const token = { type: "string", description: "The `token` of the printed setup URL." };
  return {
    "/dashboard/setup": {
      get: {
        operationId: "setupPage",
        tags: ["Browser"],
        summary:
          "The first run's setup page (`?token=…`, printed at start while the store has no account)",
        security: [],
        responses: {
          200: {
            description: "HTML (no-store), with the dashboard's Content-Security-Policy.",
            content: { "text/html": { schema: { type: "string" } } },
          },
          404: notBuilt,
        },
      },
      post: {
        operationId: "completeSetup",
        tags: ["Browser"],
        summary:
          "Spends the setup token: the owner's account (Scale), the first site and a reports key",
        security: [],
        requestBody: body(
          {
            token,
            owner_email: { type: "string" },
            account_name: { type: "string", description: "Default: the first hostname." },
            hostnames: { type: "array", items: { type: "string" }, maxItems: 100 },
            time_zone: { type: "string", description: "IANA name; default UTC." },
          },
          ["token", "owner_email", "hostnames"],
        ),
        responses: {
          200: {
            description: "What was created (no-store); the reports key is shown this once.",
            content: { "application/json": { schema: { type: "object" } } },
          },
          400: refusals([
            {
              summary: "Bad input (the token is not spent)",
              err: errors.invalid("email must be an email address"),
            },
          ]),
          401: refusals(tokenRefusals),
          409: refusals([{ summary: "An account exists", err: errors.setupDone() }]),
        },
      },
    },
    "/dashboard/setup/check": {
      post: {
        operationId: "checkSetupToken",
        tags: ["Browser"],
        summary: "Whether the setup token would be accepted now",
        security: [],
        requestBody: body({ token }, ["token"]),
        responses: {
          204: { description: "It would." },
          401: refusals(tokenRefusals),
          409: refusals([{ summary: "An account exists", err: errors.setupDone() }]),
        },
      },
    },
    "/dashboard/setup.js": {
      get: {
        operationId: "setupScript",
        tags: ["Browser"],
        summary: "The setup page's script",
        security: [],
        responses: {
          200: {
            description:
              "gzip or brotli when accepted; revalidated on every load (no-cache, ETag).",
            headers: { ETag: { schema: { type: "string" } } },
            content: { "text/javascript": { schema: { type: "string" } } },
          },
          304: { description: "Not modified (If-None-Match matched the ETag)." },
          404: notBuilt,
        },
      },
    },
  };
}

/**
 * The export door (src/http/export/export-door.ts): a streamed NDJSON body,
 * which no proto method maps to (ReportsService.ExportEvents streams it over RPC).
 */
function exportPaths(): Json {
  const refusal = (description: string, list: { summary: string; err: ServiceError }[]) => ({
    description,
    content: jsonError(errorExamples(list)),
  });
  const time = (name: string, what: string) => ({
    name,
    in: "query",
    required: false,
    description: `RFC 3339: ${what}; unbounded when absent.`,
    schema: { type: "string", format: "date-time" },
  });
  const common = [{ name: "site_id", in: "query", required: true, schema: { type: "string" } }];
  const refusals = (formats: string) => ({
    400: refusal(
      "A missing or repeated parameter, a time that is not RFC 3339, a reversed range or another format.",
      [
        { summary: "No site", err: errors.invalid("site_id: required") },
        { summary: "Repeated", err: errors.invalid("site_id: must be given once") },
        {
          summary: "Bad time",
          err: errors.invalid("from: must be RFC 3339, e.g. 2024-01-15T10:30:00Z"),
        },
        { summary: "Reversed", err: errors.invalid("to: must not be before from") },
        { summary: "Format", err: errors.invalid(`format: must be ${formats}`) },
      ],
    ),
    401: refusal("No ADMIN_TOKEN, a wrong one, or none configured; an unknown or deleted key.", [
      { summary: "Wrong token", err: errors.badAdminToken() },
      { summary: "Unset", err: errors.adminTokenUnset() },
      { summary: "Unknown key", err: errors.unknownKey() },
    ]),
    403: refusal(
      "A reports key of another site (or an unknown one), or a key without the reports scope.",
      [
        { summary: "Other site", err: errors.foreignSite() },
        { summary: "Write key", err: errors.missingScope("reports") },
      ],
    ),
    404: refusal("The site does not exist.", [
      { summary: "Unknown site", err: errors.siteNotFound("site_nope") },
    ]),
  });
  const streamedNote =
    "The body is streamed: the server reads the store a page at a time, as fast as the client reads, and stops reading when the client goes away.";
  return {
    "/api/v1/export/events": {
      get: {
        operationId: "exportEvents",
        tags: ["Export"],
        summary: "Every event of a site in a time range, as NDJSON, streamed",
        description: [
          "One line per event, its StoredEvent in proto JSON (as ReportsService.ListEvents gives it), newest first by order of arrival; events stored after the export began are not in it.",
          streamedNote,
        ].join("\n\n"),
        security: [{ adminToken: [] }, { reportsKey: [] }],
        parameters: [
          ...common,
          time("from", "only events whose `ts` is at or after it"),
          time("to", "only events whose `ts` is before it"),
          {
            name: "format",
            in: "query",
            required: false,
            schema: { type: "string", enum: ["ndjson"], default: "ndjson" },
          },
        ],
        responses: {
          200: {
            description: "The events, one JSON object a line (possibly none).",
            content: { "application/x-ndjson": { schema: { type: "string" } } },
          },
          ...refusals("ndjson"),
        },
      },
    },
    "/api/v1/export/payments": {
      get: {
        operationId: "exportPayments",
        tags: ["Export"],
        summary: "Every payment of a site paid in a time range, as NDJSON or CSV, streamed",
        description: [
          "Oldest first by (`paid_at`, `payment_id`). NDJSON: one StoredPayment a line in proto JSON (as ReportsService.GetPayment gives it, amounts as Money with `minorUnits` and `decimal`). CSV (`format=csv`): a header row, then one row a payment, CRLF line ends, fields quoted as RFC 4180 says, amounts and fees as exact decimals in major units (`29.99`; `1000` for JPY), a text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return prefixed with `'` against formula injection (OWASP CSV Injection); metadata and the attribution's details are in the NDJSON form only.",
          streamedNote,
        ].join("\n\n"),
        security: [{ adminToken: [] }, { reportsKey: [] }],
        parameters: [
          ...common,
          time("from", "only payments paid at or after it"),
          time("to", "only payments paid before it"),
          {
            name: "format",
            in: "query",
            required: false,
            schema: { type: "string", enum: ["ndjson", "csv"], default: "ndjson" },
          },
        ],
        responses: {
          200: {
            description: "The payments (possibly none; the CSV header row is always there).",
            content: {
              "application/x-ndjson": { schema: { type: "string" } },
              "text/csv": {
                schema: { type: "string" },
                example:
                  "payment_id,customer_id,kind,status,currency,amount,fee,paid_at,subscription_id,channel,created_at,updated_at\r\npay_1,cus_1,charge,succeeded,USD,29.99,1.17,2026-03-10T12:00:01.000Z,sub_1,Organic Search,2026-03-10T12:00:01.000Z,2026-03-10T12:00:01.000Z\r\n",
              },
            },
          },
          ...refusals("ndjson or csv"),
        },
      },
    },
  };
}

/**
 * The connectors' webhook door, which has no proto method: providers post
 * their own events there (docs/connectors.md), signed, without a key.
 */
function connectorPaths(): Json {
  const limitKb = Math.round(CONNECTOR_BODY_LIMIT / 1024);
  const refusal = (
    status: number,
    description: string,
    list: { summary: string; err: ServiceError }[],
  ) => [status, { description, content: jsonError(errorExamples(list)) }];
  return {
    "/api/v1/connectors/{connector_id}": {
      post: {
        operationId: "connectorWebhook",
        tags: ["Connectors"],
        summary: "A payment provider's webhook (Stripe, Paddle, Lemon Squeezy, Polar)",
        description: [
          "The URL to paste into the provider is the `url_path` of `connector create` (AdminService.CreateConnector). No key: the provider's signature over the exact body is the credential (`Stripe-Signature`, `Paddle-Signature`, Lemon Squeezy's `X-Signature`, Polar's Standard Webhooks headers), checked with each provider's tolerance.",
          "Each provider event is applied at most once and an older state of an object never overwrites a newer one. 200 is sent after the resulting payments, customers and subscriptions are durable; an event type the connector does not use is answered 200 `ignored`.",
          `The body is at most ${limitKb} KB, any content type (the provider's JSON).`,
        ].join("\n\n"),
        security: [],
        parameters: [
          {
            name: "connector_id",
            in: "path",
            required: true,
            schema: { type: "string", pattern: "^conn_[0-9a-f]{24}$" },
          },
        ],
        requestBody: {
          required: true,
          description: "The provider's event, byte for byte as it signed it.",
          content: {
            "application/json": {
              schema: { type: "object" },
              example: {
                id: "evt_1Q0TEST",
                object: "event",
                api_version: "2025-03-31.basil",
                created: 1773230400,
                type: "charge.succeeded",
                data: {
                  object: { id: "ch_3Q0TEST", object: "charge", amount: 2999, currency: "usd" },
                },
              },
            },
          },
        },
        responses: {
          200: {
            description:
              "Applied now (`applied`), applied before (`duplicate`), or of a type the connector does not use (`ignored`).",
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  required: ["ok", "data"],
                  properties: {
                    ok: { const: true },
                    data: {
                      type: "object",
                      required: ["event_id", "type", "outcome"],
                      properties: {
                        event_id: { type: ["string", "null"] },
                        type: { type: "string" },
                        outcome: { enum: ["applied", "duplicate", "ignored"] },
                      },
                    },
                  },
                },
                example: {
                  ok: true,
                  data: { event_id: "evt_1Q0TEST", type: "charge.succeeded", outcome: "applied" },
                },
              },
            },
          },
          ...Object.fromEntries([
            refusal(
              400,
              "A missing, malformed or wrong signature, a stale timestamp, a body that is not a JSON object, or a mapped payment the payments rules refuse.",
              [
                { summary: "No signature", err: errors.signatureMissing("Stripe-Signature") },
                { summary: "Wrong signature", err: errors.signatureMismatch("Stripe-Signature") },
                {
                  summary: "Stale",
                  err: errors.signatureStale("Stripe-Signature timestamp", 300, "old"),
                },
              ],
            ),
            refusal(404, "No such connector (never created, or deleted).", [
              { summary: "Unknown connector", err: errors.unknownConnector() },
            ]),
          ]),
          413: {
            description: `Body larger than ${limitKb} KB.`,
            content: jsonError(
              errorExamples([
                { summary: "Too large", err: doorErrors.bodyTooLarge(CONNECTOR_BODY_LIMIT) },
              ]),
            ),
          },
          503: {
            description: "The store is unavailable or the queue full: the provider retries later.",
            headers: { "Retry-After": { $ref: "#/components/headers/Retry-After" } },
            content: jsonError(
              errorExamples([{ summary: "Store down", err: errors.storeUnavailable() }]),
            ),
          },
        },
      },
    },
  };
}

/** Routes of the service that are not API methods: probes and this document. */
function operationalPaths(): Json {
  const ok = (description: string, example: Json): Json => ({
    description,
    content: { "application/json": { schema: { type: "object" }, example } },
  });
  return {
    "/healthz": {
      get: {
        operationId: "healthz",
        tags: ["Operations"],
        summary: "Liveness",
        security: [],
        responses: { 200: ok("The process is alive.", { ok: true, data: { status: "alive" } }) },
      },
    },
    "/readyz": {
      get: {
        operationId: "readyz",
        tags: ["Operations"],
        summary: "Readiness: the store can take a write and the process is not shutting down",
        security: [],
        responses: {
          200: ok("Ready.", { ok: true, data: { status: "ready", store: "sqlite" } }),
          503: {
            description: "Not ready.",
            content: jsonError(
              errorExamples([
                {
                  summary: "Store cannot take writes (unreachable, locked, read-only, full)",
                  err: errors.storeCannotTakeWrites(),
                },
              ]),
            ),
          },
        },
      },
    },
    "/openapi.json": {
      get: {
        operationId: "openapi",
        tags: ["Operations"],
        summary: "This document",
        security: [],
        responses: {
          200: { description: "OpenAPI 3.1", content: { "application/json": { schema: {} } } },
        },
      },
    },
    "/docs": {
      get: {
        operationId: "docs",
        tags: ["Operations"],
        summary: "This document rendered (Swagger UI)",
        security: [],
        responses: { 200: { description: "HTML", content: { "text/html": { schema: {} } } } },
      },
    },
  };
}

/** The document, or undefined for inputs without REST methods (buf runs the plugin per input). */
function generate(request: CodeGeneratorRequest): string | undefined {
  const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: request.protoFile }));
  const http = registry.getExtension("google.api.http") as DescExtension | undefined;
  if (!http) return undefined;
  const paths: Record<string, Json> = {};
  const tags: Json[] = [];
  for (const name of request.fileToGenerate) {
    const file = registry.getFile(name);
    for (const service of file?.services ?? []) {
      for (const method of service.methods) {
        if (!hasOption(method, http)) continue;
        const rule = getOption(method, http) as unknown as {
          pattern: { case: string | undefined; value: unknown };
        };
        const verb = rule.pattern.case;
        if (verb !== "post" && verb !== "get") {
          throw new Error(`${method.name}: unsupported google.api.http rule ${String(verb)}`);
        }
        const path = String(rule.pattern.value);
        paths[path] = {
          ...paths[path],
          ...(verb === "get"
            ? readOperation(method, path)
            : service.typeName === "ingest.v1.ReportsService"
              ? queryOperation(method, path)
              : operation(method, verb, path)),
        };
        if (!tags.some((t) => t.name === service.name)) {
          tags.push({ name: service.name, ...describe(getComments(service).leading) });
        }
      }
    }
  }
  if (Object.keys(paths).length === 0) return undefined;
  const eventsInput = registry.getMessage("ingest.v1.RecordEventsRequest");
  if (!eventsInput) throw new Error("ingest.v1.RecordEventsRequest is not among the inputs");
  tags.push({
    name: "Browser",
    description: "The tracking script and its public endpoint; no key.",
  });
  tags.push({
    name: "Connectors",
    description: "Payment providers' webhooks, signed by the provider; no key.",
  });
  tags.push({ name: "Operations", description: "Probes and this reference; no key needed." });
  const codes = [...new Set(Object.values(HTTP_ERRORS).map((e) => e.code))].sort();
  const doc = {
    openapi: "3.1.0",
    info: {
      title: "Ingestion API",
      version: pkg.version,
      description: `${pkg.description}\n\nGenerated from proto/ by tools/protoc-gen-openapi.ts; see docs/api.md for the full reference (limits, quotas, retry guidance, versioning).`,
    },
    servers: [{ url: "http://127.0.0.1:8080", description: "A local `npm start`" }],
    tags: [
      ...tags,
      {
        name: "Export",
        description: "A site's data, streamed (docs/api.md, Export); ADMIN_TOKEN.",
      },
    ],
    paths: {
      ...sortKeys(paths),
      ...browserPaths(eventsInput),
      ...connectorPaths(),
      ...exportPaths(),
      ...operationalPaths(),
    },
    components: {
      securitySchemes: {
        adminToken: {
          type: "http",
          scheme: "bearer",
          description:
            "The service's ADMIN_TOKEN, as for AdminService and ReportsService: `Authorization: Bearer <ADMIN_TOKEN>`.",
        },
        reportsKey: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "mk_live_ followed by 48 hexadecimal characters",
          description:
            "A site's reports key (scope `reports` alone): reads its own site only, as ReportsService does.",
        },
        apiKey: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "mk_live_ followed by 48 hexadecimal characters",
          description:
            "A site's secret API key, for servers only: `Authorization: Bearer mk_live_…`.",
        },
      },
      headers: {
        "Access-Control-Allow-Origin": {
          description: "`*`: pages on any origin may read the answer.",
          schema: { type: "string", const: "*" },
        },
        "Retry-After": {
          description: "Seconds to wait before retrying.",
          schema: { type: "integer", minimum: 0 },
        },
        "X-Quota-Remaining": {
          description: "Events the account may still send this UTC month.",
          schema: { type: "integer", minimum: 0 },
        },
        "X-Ingest-Dropped": {
          description: "Present when events were dropped as automated: `<count> bot`.",
          schema: { type: "string", pattern: "^[0-9]+ bot$" },
        },
        "X-Request-Id": {
          description:
            "The request's id (yours when you sent a valid X-Request-Id, 1-64 of [A-Za-z0-9_.:-]); quote it in support requests.",
          schema: { type: "string" },
        },
      },
      schemas: {
        ...sortKeys(schemas),
        ...sortKeys(outputSchemas),
        ErrorEnvelope: {
          type: "object",
          description: "Every error, on every route.",
          required: ["ok", "error"],
          additionalProperties: false,
          properties: {
            ok: { const: false },
            error: {
              type: "object",
              required: ["code", "message"],
              additionalProperties: false,
              properties: {
                code: { type: "string", enum: codes },
                message: { type: "string" },
              },
            },
          },
        },
      },
    },
    security: [{ apiKey: [] }],
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

function sortKeys<T>(obj: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(obj).sort(([a], [b]) => a.localeCompare(b)));
}

const plugin: Plugin = {
  name: "protoc-gen-openapi",
  version: pkg.version,
  run(request) {
    const content = generate(request);
    return create(CodeGeneratorResponseSchema, {
      supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
      file: content === undefined ? [] : [{ name: OUTPUT, content }],
    });
  },
};

runNodeJs(plugin);
