/**
 * The export door: `GET /api/v1/export/events?site_id=&from=&to=`, a site's
 * events of a time range as NDJSON (one StoredEvent per line, in its proto
 * JSON form, as ReportsService.ListEvents and ExportEvents give it, with
 * RFC 3339 times beside the epoch ones) or, with `format=csv`, as CSV, newest
 * first by order of arrival; `GET /api/v1/export/payments?site_id=&from=&to=`
 * its payments paid in the range, oldest first, as NDJSON (StoredPayment, as
 * ExportPayments gives it) or, with `format=csv`, as CSV with a header row,
 * amounts as exact decimals (src/edge/export-formats.ts writes the lines). Behind ADMIN_TOKEN or the site's reports key,
 * the rule of ReportsService (src/domain/reports-access.ts), with its messages.
 *
 * The body is streamed: a Node Readable over the reports' export pages, which
 * reads the next store page only when the socket has taken the previous one
 * (a slow reader slows the export; the range is never buffered), and a client
 * that goes away destroys the Readable, which returns the pages' iterator and
 * so ends the reads. Everything that can be refused (the token, the query,
 * the site) is checked before the first byte: errors take the REST envelope.
 */
import { Readable } from "node:stream";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { Authenticator } from "../../domain/auth.js";
import { errors } from "../../domain/errors.js";
import type { Reports } from "../../domain/reports.js";
import { createReportsAccess } from "../../domain/reports-access.js";
import {
  EVENT_CSV_HEAD,
  EXPORT_FORMATS,
  eventCsvRow,
  eventNdjsonLine,
  PAYMENT_CSV_HEAD,
  paymentCsvRow,
  paymentNdjsonLine,
} from "../../edge/export-formats.js";
import { registerMethodNotAllowed } from "../method-not-allowed.js";

/** Where the events export is: part of the public interface. */
export const EXPORT_EVENTS_PATH = "/api/v1/export/events";

/** Where the payments export is: part of the public interface. */
export const EXPORT_PAYMENTS_PATH = "/api/v1/export/payments";

/**
 * A body streamed from pages: `head`, then one chunk per page. Readable.from
 * pulls the next page only when the socket has drained the previous chunk,
 * and its destruction (the client went away) returns the pages' iterator.
 */
function streamed<T>(pages: AsyncIterable<T[]>, line: (item: T) => string, head = ""): Readable {
  return Readable.from(
    (async function* chunks() {
      if (head) yield head;
      for await (const items of pages) {
        let chunk = "";
        for (const item of items) chunk += line(item);
        yield chunk;
      }
    })(),
  );
}

/** What the export door calls. */
export interface ExportDoorOptions {
  reports: Reports;
  auth: Authenticator;
  config: { adminToken: string | undefined };
}

/**
 * A query parameter given at most once; `undefined` when absent. A repeated
 * one is refused rather than one of its values picked.
 */
function single(query: unknown, name: string): string | undefined {
  const v = (query as Record<string, unknown>)[name];
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw errors.invalid(`${name}: must be given once`);
  return v;
}

/** The export door plugin. */
export const exportDoor: FastifyPluginAsync<ExportDoorOptions> = async (scope, options) => {
  const { reports, auth, config } = options;
  const access = createReportsAccess({ adminToken: config.adminToken, auth });

  /**
   * The request's credential and query, checked in that order before
   * anything is read: a caller without a credential learns nothing of the
   * query's faults. A key is checked against the site only when one
   * `site_id` is given; otherwise the query is refused next. `formats` are
   * the export's formats, the default first.
   */
  async function exportQuery<F extends string>(request: FastifyRequest, formats: readonly F[]) {
    const raw = (request.query as Record<string, unknown>).site_id;
    await access.authorize(
      request.headers.authorization,
      typeof raw === "string" ? raw : undefined,
    );
    const siteId = single(request.query, "site_id");
    if (!siteId) throw errors.invalid("site_id: required");
    const format = single(request.query, "format") ?? formats[0];
    if (!formats.includes(format as F)) {
      throw errors.invalid(`format: must be ${formats.join(" or ")}`);
    }
    return {
      siteId,
      from: single(request.query, "from") ?? "",
      to: single(request.query, "to") ?? "",
      format: format as F,
    };
  }

  scope.get(EXPORT_EVENTS_PATH, async (request, reply) => {
    const { format, ...range } = await exportQuery(request, EXPORT_FORMATS);
    const pages = await reports.exportEvents(range);
    reply.header("cache-control", "no-store");
    if (format === "csv") {
      reply.type("text/csv; charset=utf-8; header=present");
      return reply.send(streamed(pages, eventCsvRow, EVENT_CSV_HEAD));
    }
    reply.type("application/x-ndjson; charset=utf-8");
    return reply.send(streamed(pages, eventNdjsonLine));
  });

  scope.get(EXPORT_PAYMENTS_PATH, async (request, reply) => {
    const { format, ...range } = await exportQuery(request, EXPORT_FORMATS);
    const pages = await reports.exportPayments(range);
    reply.header("cache-control", "no-store");
    if (format === "csv") {
      reply.type("text/csv; charset=utf-8; header=present");
      return reply.send(streamed(pages, paymentCsvRow, PAYMENT_CSV_HEAD));
    }
    reply.type("application/x-ndjson; charset=utf-8");
    return reply.send(streamed(pages, paymentNdjsonLine));
  });
  registerMethodNotAllowed(scope, {
    url: EXPORT_PAYMENTS_PATH,
    allow: ["GET", "HEAD"],
    use: "GET",
  });
  registerMethodNotAllowed(scope, { url: EXPORT_EVENTS_PATH, allow: ["GET", "HEAD"], use: "GET" });
};
