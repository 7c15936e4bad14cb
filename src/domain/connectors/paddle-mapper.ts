/** Paddle Billing notifications (placeholder until mapped). */
import type { Obj } from "./json-access.js";
import { str } from "./json-access.js";
import type { MappedEvent } from "./mapped-event.js";

export async function mapPaddleEvent(event: Obj): Promise<MappedEvent> {
  return { kind: "ignored", type: str(event.event_type) ?? "", eventId: str(event.event_id) };
}
