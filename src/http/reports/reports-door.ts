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
 */
import {
  create,
  type DescMessage,
  type DescMethodUnary,
  type MessageInitShape,
  ScalarType,
  toJsonString,
} from "@bufbuild/protobuf";
import type { FastifyPluginAsync } from "fastify";
import { ReportsService } from "../../../gen/ingest/v1/reports_pb.js";
import type { Authenticator } from "../../domain/auth.js";
import { errors } from "../../domain/errors.js";
import type { Reports } from "../../domain/reports.js";
import { createReportsAccess, type ReportsPrincipal } from "../../domain/reports-access.js";
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
  config: { adminToken: string | undefined };
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
