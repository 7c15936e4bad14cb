/**
 * An event record as the reports' StoredEvent message, field by field from
 * the event-field table (src/domain/store/event-fields.ts): each row's
 * `stored` name is the proto field, whose JSON and TypeScript name is the
 * record's (test/internals/edge/stored-event.test.ts checks the proto against
 * the table).
 */
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type { StoredEventSchema } from "../../gen/ingest/v1/reports_pb.js";
import { EVENT_FIELD_TABLE, type EventFieldKind } from "../domain/store/event-fields.js";
import type { EventRecord } from "../domain/store/records.js";

/** A record's value as the message's, by kind (the message's map field is never unset). */
const TO_MESSAGE: Record<EventFieldKind, (v: never) => unknown> = {
  text: (v: string) => v,
  integer: (v: number) => v,
  time: (v: number) => BigInt(v),
  json: (v: Record<string, unknown>) => v as JsonObject,
  map: (v: Record<string, string>) => v,
};

/** The reports' StoredEvent of a record. */
export function toStoredEvent(e: EventRecord): MessageInitShape<typeof StoredEventSchema> {
  const out: Record<string, unknown> = { siteId: e.siteId };
  const record = e as unknown as Record<string, unknown>;
  for (const f of EVENT_FIELD_TABLE) {
    const v = record[f.field];
    out[f.field] =
      v === undefined ? (f.kind === "map" ? {} : undefined) : TO_MESSAGE[f.kind](v as never);
  }
  return out as MessageInitShape<typeof StoredEventSchema>;
}
