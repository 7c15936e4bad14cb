/**
 * The fields of a stored event, declared once. `EventRecord` (the port's
 * type) derives from this table, and so do the stores' columns and
 * documents, the MongoDB validator's required fields, the body fields the
 * validation knows, and the reports' mapping: adding a field here makes
 * every one of those carry it. docs/architecture.md ("Adding an event
 * field") lists the few places that remain hand-written, and why.
 *
 * Each row: `field`, the record's name; `stored`, the snake_case name of the
 * SQLite column, the MongoDB event field and the reports' StoredEvent field
 * (proto); `kind`, the value's type; `required`, whether every event has
 * one; `body`, the short name in the spec's Event table when the value comes
 * from the request body as is (the rest is derived by enrichment).
 */

/** The value types of event fields, and their TypeScript types. */
export interface EventFieldKinds {
  /** A string. */
  text: string;
  /** A safe integer. */
  integer: number;
  /** Unix milliseconds (a BSON date in MongoDB). */
  time: number;
  /** A JSON object, kept exactly (stored as JSON text). */
  json: Record<string, unknown>;
  /** A string map (stored as JSON text in SQLite, key/value pairs in MongoDB); never empty when present. */
  map: Record<string, string>;
}

export type EventFieldKind = keyof EventFieldKinds;

/** One row of the table. */
export interface EventFieldSpec {
  readonly field: string;
  readonly stored: string;
  readonly kind: EventFieldKind;
  readonly required?: true;
  readonly body?: string;
}

/** Every stored field of an event but its site (each store keeps the site its own way), in column order. */
export const EVENT_FIELD_TABLE = [
  { field: "name", stored: "name", kind: "text", required: true, body: "e" },
  { field: "url", stored: "url", kind: "text", required: true, body: "u" },
  { field: "referrer", stored: "referrer", kind: "text", body: "r" },
  { field: "title", stored: "title", kind: "text", body: "t" },
  { field: "width", stored: "width", kind: "integer", body: "w" },
  { field: "language", stored: "language", kind: "text", body: "l" },
  { field: "props", stored: "props", kind: "json", body: "p" },
  { field: "ts", stored: "ts", kind: "time", required: true, body: "ts" },
  { field: "receivedAt", stored: "received_at", kind: "time", required: true },
  { field: "visitorId", stored: "visitor_id", kind: "text", required: true },
  /** The uid of a `$identify` event. */
  { field: "userId", stored: "user_id", kind: "text", body: "uid" },
  { field: "country", stored: "country", kind: "text" },
  { field: "browser", stored: "browser", kind: "text" },
  { field: "os", stored: "os", kind: "text" },
  { field: "device", stored: "device", kind: "text" },
  { field: "referrerHost", stored: "referrer_host", kind: "text" },
  { field: "utmSource", stored: "utm_source", kind: "text" },
  { field: "utmMedium", stored: "utm_medium", kind: "text" },
  { field: "utmCampaign", stored: "utm_campaign", kind: "text" },
  { field: "utmTerm", stored: "utm_term", kind: "text" },
  { field: "utmContent", stored: "utm_content", kind: "text" },
  { field: "clickIds", stored: "click_ids", kind: "map" },
] as const satisfies readonly EventFieldSpec[];

type Row = (typeof EVENT_FIELD_TABLE)[number];

/** Flattens an intersection, so editors and errors show one object type. */
type Flat<T> = { [K in keyof T]: T[K] };

/** An object of the rows' fields: required rows required, the others optional. */
type FieldsOf<R extends Row, Name extends "field" | "stored", Kinds> = Flat<
  { [F in R as F extends { required: true } ? F[Name] : never]: Kinds[F["kind"] & keyof Kinds] } & {
    [F in R as F extends { required: true } ? never : F[Name]]?: Kinds[F["kind"] & keyof Kinds];
  }
>;

/** One enriched event as stored: its site and the table's fields. */
export type EventRecord = Flat<{ siteId: string } & FieldsOf<Row, "field", EventFieldKinds>>;

/** An event's fields by their stored names, with each store's own value types. */
export type StoredEventFields<Kinds> = FieldsOf<Row, "stored", Kinds>;

/** The record fields taken from the request body as they are (after their rules). */
export type BodyEventFields = FieldsOf<Extract<Row, { body: string }>, "field", EventFieldKinds>;

/** The body's short names of the fields it carries (`e`, `u`, …). */
export const BODY_EVENT_FIELDS = EVENT_FIELD_TABLE.flatMap((f) =>
  "body" in f ? [f.body] : [],
) as readonly Extract<Row, { body: string }>["body"][];

/** The `stored` names of rows, element by element (a homomorphic mapping keeps the tuple). */
type StoredOf<T extends readonly unknown[]> = {
  -readonly [K in keyof T]: T[K] extends { stored: infer S } ? S : never;
};

/** The stored names of the table's rows, as a tuple type (the order of the table). */
export type StoredNames = StoredOf<typeof EVENT_FIELD_TABLE>;
