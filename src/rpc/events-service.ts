/** EventsService: the Connect/gRPC door to the events application. */
import { toJson } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { type EventsService, RecordEventsRequestSchema } from "../../gen/ingest/v1/events_pb.js";
import type { Authenticator } from "../domain/auth.js";
import type { EventsApp } from "../domain/events/events-app.js";
import { clientInfoKey } from "./client-info.js";

/** Proto JSON writes int64 as strings; the domain takes `ts` as a JSON number, as REST sends it. */
function tsAsNumber(obj: Record<string, unknown>): Record<string, unknown> {
  if (typeof obj.ts === "string") obj.ts = Number(obj.ts);
  if (Array.isArray(obj.b)) for (const e of obj.b) tsAsNumber(e as Record<string, unknown>);
  return obj;
}

export function createEventsService(deps: {
  auth: Authenticator;
  events: EventsApp;
}): ServiceImpl<typeof EventsService> {
  return {
    async recordEvents(req, ctx) {
      const principal = await deps.auth.authenticate(
        ctx.requestHeader.get("authorization"),
        "events",
      );
      const body = tsAsNumber(
        toJson(RecordEventsRequestSchema, req, { useProtoFieldName: true }) as Record<
          string,
          unknown
        >,
      );
      const result = await deps.events.record(principal, body, ctx.values.get(clientInfoKey));
      if (result.dropped > 0) ctx.responseHeader.set("x-ingest-dropped", `${result.dropped} bot`);
      ctx.responseHeader.set("x-quota-remaining", String(result.quotaRemaining));
      if (result.tsReplaced > 0) {
        ctx.responseHeader.set("x-ingest-ts-replaced", String(result.tsReplaced));
      }
      return {
        accepted: result.accepted,
        dropped: result.dropped,
        quotaRemaining: BigInt(result.quotaRemaining),
      };
    },
  };
}
