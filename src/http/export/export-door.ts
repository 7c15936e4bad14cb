/**
 * The export door: `GET /api/v1/export/events?site_id=&from=&to=`, a site's
 * events of a time range as NDJSON (one StoredEvent per line, in its proto
 * JSON form, as ReportsService.ListEvents and ExportEvents give it), newest
 * first by order of arrival. Behind ADMIN_TOKEN, as ReportsService.
 *
 * The body is streamed: a Node Readable over the reports' export pages, which
 * reads the next store page only when the socket has taken the previous one
 * (a slow reader slows the export; the range is never buffered), and a client
 * that goes away destroys the Readable, which returns the pages' iterator and
 * so ends the reads. Everything that can be refused (the token, the query,
 * the site) is checked before the first byte: errors take the REST envelope.
 */
import { Readable } from "node:stream";
import { create, toJsonString } from "@bufbuild/protobuf";
import type { FastifyPluginAsync } from "fastify";
import { StoredEventSchema } from "../../../gen/ingest/v1/reports_pb.js";
import { checkAdminToken } from "../../domain/admin-token.js";
import { errors } from "../../domain/errors.js";
import type { Reports } from "../../domain/reports.js";
import { toStoredEvent } from "../../edge/stored-event.js";
import { registerMethodNotAllowed } from "../method-not-allowed.js";

/** Where the events export is: part of the public interface. */
export const EXPORT_EVENTS_PATH = "/api/v1/export/events";

/** What the export door calls. */
export interface ExportDoorOptions {
  reports: Reports;
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
  const { reports, config } = options;

  scope.get(EXPORT_EVENTS_PATH, async (request, reply) => {
    checkAdminToken(config.adminToken, request.headers.authorization);
    const siteId = single(request.query, "site_id");
    if (!siteId) throw errors.invalid("site_id: required");
    const format = single(request.query, "format") ?? "ndjson";
    if (format !== "ndjson") throw errors.invalid("format: must be ndjson");
    const pages = await reports.exportEvents({
      siteId,
      from: single(request.query, "from") ?? "",
      to: single(request.query, "to") ?? "",
    });
    // One chunk per page; Readable.from pulls the next only when the socket drains.
    const body = Readable.from(
      (async function* lines() {
        for await (const events of pages) {
          let chunk = "";
          for (const e of events) {
            chunk += `${toJsonString(StoredEventSchema, create(StoredEventSchema, toStoredEvent(e)))}\n`;
          }
          yield chunk;
        }
      })(),
    );
    reply.type("application/x-ndjson; charset=utf-8");
    reply.header("cache-control", "no-store");
    return reply.send(body);
  });
  registerMethodNotAllowed(scope, { url: EXPORT_EVENTS_PATH, allow: ["GET", "HEAD"], use: "GET" });
};
