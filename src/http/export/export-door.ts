/**
 * The export door: `GET /api/v1/export/events?site_id=&from=&to=`, a site's
 * events of a time range as NDJSON (one StoredEvent per line, in its proto
 * JSON form, as ReportsService.ListEvents and ExportEvents give it), newest
 * first by order of arrival; `GET /api/v1/export/payments?site_id=&from=&to=`
 * its payments paid in the range, oldest first, as NDJSON (StoredPayment, as
 * ExportPayments gives it) or, with `format=csv`, as CSV with a header row,
 * amounts as exact decimals. Behind ADMIN_TOKEN or the site's reports key,
 * the rule of ReportsService (src/domain/reports-access.ts), with its messages.
 *
 * The body is streamed: a Node Readable over the reports' export pages, which
 * reads the next store page only when the socket has taken the previous one
 * (a slow reader slows the export; the range is never buffered), and a client
 * that goes away destroys the Readable, which returns the pages' iterator and
 * so ends the reads. Everything that can be refused (the token, the query,
 * the site) is checked before the first byte: errors take the REST envelope.
 * At most EXPORTS_PER_SITE exports of a site run at once (the reports'
 * rule): another one gets 429 `rate_limited` with Retry-After. The pages
 * give the event loop a turn between them, so an export never holds up
 * other requests (src/domain/reports.ts).
 */
import { Readable } from "node:stream";
import { create, toJsonString } from "@bufbuild/protobuf";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { StoredEventSchema, StoredPaymentSchema } from "../../../gen/ingest/v1/reports_pb.js";
import type { Authenticator } from "../../domain/auth.js";
import { errors } from "../../domain/errors.js";
import { formatMinorUnits } from "../../domain/payments/money.js";
import type { Reports } from "../../domain/reports.js";
import { createReportsAccess } from "../../domain/reports-access.js";
import type { PaymentRecord } from "../../domain/store/store.js";
import { UNATTRIBUTED } from "../../domain/vocabulary.js";
import { toStoredEvent } from "../../edge/stored-event.js";
import { paymentMessage } from "../../edge/stored-payment.js";
import { registerMethodNotAllowed } from "../method-not-allowed.js";

/** Where the events export is: part of the public interface. */
export const EXPORT_EVENTS_PATH = "/api/v1/export/events";

/** Where the payments export is: part of the public interface. */
export const EXPORT_PAYMENTS_PATH = "/api/v1/export/payments";

/** The CSV columns of the payments export, in order (its header row). */
export const PAYMENT_CSV_COLUMNS = [
  "payment_id",
  "customer_id",
  "kind",
  "status",
  "currency",
  "amount",
  "fee",
  "paid_at",
  "subscription_id",
  "channel",
  "created_at",
  "updated_at",
] as const;

/**
 * The columns whose cells are numbers we write (exact decimals, possibly
 * negative): the only cells not guarded against formula injection, so that a
 * spreadsheet still reads `-5.00` as a number.
 */
const NUMBER_COLUMNS: ReadonlySet<string> = new Set(["amount", "fee"]);

/**
 * A text cell safe from CSV (formula) injection, as OWASP's "CSV Injection"
 * says: one that a spreadsheet would read as a formula (it starts with `=`,
 * `+`, `-`, `@`, a tab or a carriage return) gets a leading single quote, so
 * an id a client chose, such as `=HYPERLINK(...)`, is shown, never run.
 */
function guardedText(value: string): string {
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break. */
function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

const isoOf = (ms: number) => new Date(ms).toISOString();

/** A payment as a CSV row: amounts as exact decimals in major units (29.99, 1000 JPY as 1000). */
function csvRow(p: PaymentRecord): string {
  const fields: Record<(typeof PAYMENT_CSV_COLUMNS)[number], string> = {
    payment_id: p.paymentId,
    customer_id: p.customerId,
    kind: p.kind,
    status: p.status,
    currency: p.currency,
    amount: formatMinorUnits(p.amountMinor, p.currency),
    fee: p.feeMinor === undefined ? "" : formatMinorUnits(p.feeMinor, p.currency),
    paid_at: isoOf(p.paidAt),
    subscription_id: p.subscriptionId ?? "",
    channel: p.attribution?.channel ?? p.erasedChannel ?? UNATTRIBUTED,
    created_at: isoOf(p.createdAt),
    updated_at: isoOf(p.updatedAt),
  };
  const cells = PAYMENT_CSV_COLUMNS.map((c) =>
    csvField(NUMBER_COLUMNS.has(c) ? fields[c] : guardedText(fields[c])),
  );
  return `${cells.join(",")}\r\n`;
}

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
    const { siteId, from, to } = await exportQuery(request, ["ndjson"]);
    const pages = await reports.exportEvents({ siteId, from, to });
    // The export's slot is released when the answer ends or the client goes away, even before the first page.
    reply.raw.once("close", () => void pages.return());
    reply.type("application/x-ndjson; charset=utf-8");
    reply.header("cache-control", "no-store");
    return reply.send(
      streamed(
        pages,
        (e) => `${toJsonString(StoredEventSchema, create(StoredEventSchema, toStoredEvent(e)))}\n`,
      ),
    );
  });

  scope.get(EXPORT_PAYMENTS_PATH, async (request, reply) => {
    const { format, ...range } = await exportQuery(request, ["ndjson", "csv"]);
    const pages = await reports.exportPayments(range);
    reply.raw.once("close", () => void pages.return());
    reply.header("cache-control", "no-store");
    if (format === "csv") {
      reply.type("text/csv; charset=utf-8; header=present");
      return reply.send(streamed(pages, csvRow, `${PAYMENT_CSV_COLUMNS.join(",")}\r\n`));
    }
    reply.type("application/x-ndjson; charset=utf-8");
    return reply.send(
      streamed(
        pages,
        (p) =>
          `${toJsonString(StoredPaymentSchema, create(StoredPaymentSchema, paymentMessage(p)))}\n`,
      ),
    );
  });
  registerMethodNotAllowed(scope, {
    url: EXPORT_PAYMENTS_PATH,
    allow: ["GET", "HEAD"],
    use: "GET",
  });
  registerMethodNotAllowed(scope, { url: EXPORT_EVENTS_PATH, allow: ["GET", "HEAD"], use: "GET" });
};
