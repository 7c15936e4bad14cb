/**
 * The lines of the exports, shared by the REST export door and the admin
 * CLI's `export`: NDJSON (a StoredEvent or StoredPayment in its proto JSON
 * form) and CSV (RFC 4180 with a header row, every text cell guarded
 * against formula injection). Event times are given twice: Unix
 * milliseconds as stored (`ts`, `received_at`) and RFC 3339 beside them
 * (`tsIso`/`receivedAtIso` in NDJSON, `ts_iso`/`received_at_iso` in CSV).
 */
import { create, type JsonObject, toJson, toJsonString } from "@bufbuild/protobuf";
import { StoredEventSchema, StoredPaymentSchema } from "../../gen/ingest/v1/reports_pb.js";
import { formatMinorUnits } from "../domain/payments/money.js";
import { EVENT_FIELD_TABLE } from "../domain/store/event-fields.js";
import type { EventRecord, PaymentRecord } from "../domain/store/store.js";
import { UNATTRIBUTED } from "../domain/vocabulary.js";
import { toStoredEvent } from "./stored-event.js";
import { paymentMessage } from "./stored-payment.js";

/** The formats both exports are written in, the default first. */
export const EXPORT_FORMATS = ["ndjson", "csv"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

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
 * The CSV columns of the events export: the stored fields in the event-field
 * table's order, each time followed by its RFC 3339 form.
 */
export const EVENT_CSV_COLUMNS: readonly string[] = EVENT_FIELD_TABLE.flatMap((f) =>
  f.kind === "time" ? [f.stored, `${f.stored}_iso`] : [f.stored],
);

/**
 * The columns whose cells are numbers we write (exact decimals, possibly
 * negative, or integers): the only cells not guarded against formula
 * injection, so that a spreadsheet still reads `-5.00` as a number.
 */
const NUMBER_COLUMNS: ReadonlySet<string> = new Set([
  "amount",
  "fee",
  ...EVENT_FIELD_TABLE.filter((f) => f.kind === "time" || f.kind === "integer").map(
    (f) => f.stored,
  ),
]);

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

/** One CSV line of `cells` by column, guarded and quoted. */
function csvLine(columns: readonly string[], cells: Record<string, string>): string {
  const fields = columns.map((c) => {
    const v = cells[c] ?? "";
    return csvField(NUMBER_COLUMNS.has(c) ? v : guardedText(v));
  });
  return `${fields.join(",")}\r\n`;
}

const isoOf = (ms: number) => new Date(ms).toISOString();

/** The payments CSV header line. */
export const PAYMENT_CSV_HEAD = `${PAYMENT_CSV_COLUMNS.join(",")}\r\n`;

/** A payment as a CSV row: amounts as exact decimals in major units (29.99, 1000 JPY as 1000). */
export function paymentCsvRow(p: PaymentRecord): string {
  const cells: Record<(typeof PAYMENT_CSV_COLUMNS)[number], string> = {
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
  return csvLine(PAYMENT_CSV_COLUMNS, cells);
}

/** A payment as an NDJSON line (StoredPayment's proto JSON, as ExportPayments gives it). */
export function paymentNdjsonLine(p: PaymentRecord): string {
  return `${toJsonString(StoredPaymentSchema, create(StoredPaymentSchema, paymentMessage(p)))}\n`;
}

/** The events CSV header line. */
export const EVENT_CSV_HEAD = `${EVENT_CSV_COLUMNS.join(",")}\r\n`;

/** An event as a CSV row: JSON for its properties and click ids, "" for what is absent. */
export function eventCsvRow(e: EventRecord): string {
  const record = e as unknown as Record<string, unknown>;
  const cells: Record<string, string> = {};
  for (const f of EVENT_FIELD_TABLE) {
    const v = record[f.field];
    if (v === undefined) continue;
    if (f.kind === "time") {
      cells[f.stored] = String(v);
      cells[`${f.stored}_iso`] = isoOf(v as number);
    } else if (f.kind === "json" || f.kind === "map") {
      cells[f.stored] = JSON.stringify(v);
    } else {
      cells[f.stored] = String(v);
    }
  }
  return csvLine(EVENT_CSV_COLUMNS, cells);
}

/**
 * An event as an NDJSON line: StoredEvent's proto JSON (camelCase names,
 * 64-bit times as strings), with `tsIso` after `ts` and `receivedAtIso`
 * after `receivedAt`.
 */
export function eventNdjsonLine(e: EventRecord): string {
  const json = toJson(StoredEventSchema, create(StoredEventSchema, toStoredEvent(e))) as JsonObject;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(json)) {
    out[k] = v;
    if (k === "ts") out.tsIso = isoOf(e.ts);
    else if (k === "receivedAt") out.receivedAtIso = isoOf(e.receivedAt);
  }
  return `${JSON.stringify(out)}\n`;
}
