/**
 * The reports door: the ReportsService methods that declare a google.api.http
 * GET rule (SiteOverview, CustomerJourney, GetAccess), served over REST at
 * the rule's path, with the rule's path parameters and the request's other
 * fields as query parameters. One encapsulated plugin; a request's
 * lifecycle, top to bottom:
 *
 * 1. onRequest (the route's): ReportsService's own access rule
 *    (src/domain/reports-access.ts, as the RPC door's interceptor applies
 *    it): ADMIN_TOKEN for every site, a `reports` key for its own site only
 *    (the path's `site_id`); a write key is refused. 401/403 come before the
 *    query is looked at.
 * 2. handler: the query checked (only the request's fields, each at most
 *    once), the same application function as the RPC handler, and the answer
 *    as the proto JSON of the same response message (src/edge/report-messages.ts),
 *    so REST and Connect answer identical JSON.
 * 3. errors: the server's REST envelope (src/server.ts).
 * Other verbs on these paths: 405 with `Allow: GET, HEAD`.
 *
 * The methods with a POST rule (Query, Funnel) take the request message's
 * proto JSON as the body, decoded strictly as the REST door does
 * (src/edge/decode-json.ts: unknown fields and wrong JSON types are 400
 * `invalid JSON: …`), the site from the path (a `site_id` in the body must be
 * the same); the same access rule runs first. Other verbs: 405 `Allow: POST`.
 */
import {
  create,
  type DescMessage,
  type DescMethodUnary,
  fromJson,
  type JsonValue,
  type MessageInitShape,
  type MessageShape,
  ScalarType,
  toJsonString,
} from "@bufbuild/protobuf";
import type { FastifyPluginAsync } from "fastify";
import { ReportsService } from "../../../gen/ingest/v1/reports_pb.js";
import type { AnalyticsApp } from "../../domain/analytics/analytics-app.js";
import type { Authenticator } from "../../domain/auth.js";
import { errors } from "../../domain/errors.js";
import type { Reports } from "../../domain/reports.js";
import { createReportsAccess, type ReportsPrincipal } from "../../domain/reports-access.js";
import {
  funnelFields,
  funnelResponseMessage,
  queryFields as queryRequestFields,
  queryResponseMessage,
} from "../../edge/analytics-messages.js";
import { bodyLimitOf } from "../../edge/body-limits.js";
import { acceptRawJsonBodies, decodeStrict, parseJsonBody } from "../../edge/decode-json.js";
import type { BodyLimitRouteConfig } from "../../edge/fastify-errors.js";
import {
  accessMessage,
  customerJourneyMessage,
  siteOverviewMessage,
} from "../../edge/report-messages.js";
import { httpRuleOf, routeOf } from "../http-rule.js";
import { registerMethodNotAllowed } from "../method-not-allowed.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The reports door's authorized caller; null before its onRequest ran. */
    reportsPrincipal: ReportsPrincipal | null;
  }
}

/** What the reports door calls. */
export interface ReportsDoorOptions {
  auth: Authenticator;
  reports: Reports;
  queries: AnalyticsApp;
  config: { adminToken: string | undefined };
}

/** A method with a POST rule: its body is the request message, its answer the response's JSON. */
interface PostRoute {
  method: DescMethodUnary;
  answer(body: MessageShape<DescMessage>, signal: AbortSignal): Promise<string>;
}

function postRoute<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  answer: (req: MessageShape<I>, signal: AbortSignal) => Promise<MessageInitShape<O>>,
): PostRoute {
  return {
    method: method as unknown as DescMethodUnary,
    answer: async (body, signal) =>
      toJsonString(
        method.output,
        create(method.output, await answer(body as MessageShape<I>, signal)),
      ),
  };
}

/** The methods served with a JSON body. */
function postRoutes(queries: AnalyticsApp): PostRoute[] {
  const m = ReportsService.method;
  return [
    postRoute(m.query, async (req, signal) => {
      const { plan, result } = await queries.query(queryRequestFields(req), signal);
      return queryResponseMessage(plan, result);
    }),
    postRoute(m.funnel, async (req, signal) => {
      const { plan, result } = await queries.funnel(funnelFields(req), signal);
      return funnelResponseMessage(plan, result);
    }),
  ];
}

/** The request's fields by proto name (path parameters and query), every one a string. */
type Fields = Record<string, string>;

interface ReportRoute {
  method: DescMethodUnary;
  /** The response's proto JSON. */
  answer(fields: Fields, principal: ReportsPrincipal): Promise<string>;
}

/** A route answering `method` with the proto JSON of what `answer` builds. */
function route<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  answer: (fields: Fields, principal: ReportsPrincipal) => Promise<MessageInitShape<O>>,
): ReportRoute {
  return {
    method,
    answer: async (fields, principal) =>
      toJsonString(method.output, create(method.output, await answer(fields, principal))),
  };
}

/** The methods the door serves and how each answers. */
function reportRoutes(reports: Reports): ReportRoute[] {
  const m = ReportsService.method;
  const field = (fields: Fields, name: string) => fields[name] ?? "";
  return [
    route(m.siteOverview, async (f) =>
      siteOverviewMessage(
        await reports.siteOverview({
          siteId: field(f, "site_id"),
          from: field(f, "from"),
          to: field(f, "to"),
        }),
      ),
    ),
    route(m.customerJourney, async (f) =>
      customerJourneyMessage(
        await reports.customerJourney({
          siteId: field(f, "site_id"),
          customerId: field(f, "customer_id"),
        }),
      ),
    ),
    route(m.getAccess, async (f, principal) =>
      accessMessage(await reports.access(principal, f.site_id ?? "")),
    ),
  ];
}

/** The path parameters of a google.api.http path template. */
function pathParameters(path: string): string[] {
  return [...path.matchAll(/\{([a-z_]+)\}/g)].map((x) => x[1] as string);
}

/**
 * The query's fields: only the request message's fields that the path does
 * not bind (`unknown query parameter "x"` otherwise), each given at most once
 * (`x: must be given once`, as the export door says).
 */
function queryFields(query: unknown, allowed: ReadonlySet<string>): Fields {
  const fields: Fields = {};
  for (const [name, value] of Object.entries(query as Record<string, unknown>)) {
    if (!allowed.has(name)) throw errors.invalid(`unknown query parameter "${name}"`);
    if (typeof value !== "string") throw errors.invalid(`${name}: must be given once`);
    fields[name] = value;
  }
  return fields;
}

/** The reports door plugin. */
export const reportsDoor: FastifyPluginAsync<ReportsDoorOptions> = async (scope, options) => {
  const access = createReportsAccess({ adminToken: options.config.adminToken, auth: options.auth });
  scope.decorateRequest("reportsPrincipal", null);

  acceptRawJsonBodies(scope);
  const authorize = async (request: { headers: { authorization?: string }; params: unknown }) => {
    const siteId = (request.params as Fields).site_id ?? "";
    return access.authorize(request.headers.authorization, siteId);
  };
  for (const r of postRoutes(options.queries)) {
    const { verb, path } = httpRuleOf(r.method);
    if (verb !== "POST") throw new Error(`${r.method.name}: expected a POST rule`);
    const url = routeOf(path);
    const bodyLimit = bodyLimitOf(r.method.parent.typeName, r.method.name);
    const config: BodyLimitRouteConfig = { bodyLimit };
    scope.post(url, {
      bodyLimit,
      config,
      onRequest: async function authorizePost(request) {
        request.reportsPrincipal = await authorize(request);
      },
      handler: async (request, reply) => {
        if (!request.reportsPrincipal) throw errors.internal("unauthorized report request");
        const siteId = (request.params as Fields).site_id ?? "";
        const json = decodeStrict(r.method.input, parseJsonBody(request.body as Buffer));
        if (json.site_id !== undefined && json.site_id !== siteId) {
          throw errors.invalid("site_id: must be the site of the path");
        }
        const body = fromJson(r.method.input, { ...json, site_id: siteId } as JsonValue);
        // A client that goes away cancels its query.
        const abort = new AbortController();
        reply.raw.once("close", () => {
          if (!reply.raw.writableFinished) abort.abort();
        });
        const answer = await r.answer(body, abort.signal);
        reply.type("application/json; charset=utf-8");
        reply.header("cache-control", "no-store");
        return reply.send(answer);
      },
    });
    registerMethodNotAllowed(scope, { url, allow: ["POST"], use: "POST" });
  }

  for (const r of reportRoutes(options.reports)) {
    const { verb, path } = httpRuleOf(r.method);
    if (verb !== "GET") throw new Error(`${r.method.name}: the reports door serves GET rules only`);
    const bound = pathParameters(path);
    const queryNames = new Set(
      r.method.input.fields.filter((f) => !bound.includes(f.name)).map((f) => f.name),
    );
    for (const f of r.method.input.fields) {
      // Query strings carry strings: a field of another type would need its own parsing.
      if (f.fieldKind !== "scalar" || f.scalar !== ScalarType.STRING) {
        throw new Error(`${r.method.name}.${f.name}: the reports door reads string fields only`);
      }
    }
    const url = routeOf(path);
    scope.get(url, {
      onRequest: async function authorize(request) {
        const params = request.params as Fields;
        // The call names its site in the path, or optionally in the query
        // (GetAccess; empty or absent names none): as the RPC interceptor.
        const inQuery = (request.query as Record<string, unknown>).site_id;
        const siteId = bound.includes("site_id")
          ? (params.site_id ?? "")
          : typeof inQuery === "string" && inQuery !== ""
            ? inQuery
            : undefined;
        request.reportsPrincipal = await access.authorize(request.headers.authorization, siteId);
      },
      handler: async (request, reply) => {
        const principal = request.reportsPrincipal;
        if (!principal) throw errors.internal("unauthorized report request");
        const fields = { ...queryFields(request.query, queryNames), ...(request.params as Fields) };
        const json = await r.answer(fields, principal);
        reply.type("application/json; charset=utf-8");
        // Revenue and customers: never kept by a shared cache.
        reply.header("cache-control", "no-store");
        return reply.send(json);
      },
    });
    registerMethodNotAllowed(scope, { url, allow: ["GET", "HEAD"], use: "GET" });
  }
};
