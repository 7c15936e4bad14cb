/** Lemon Squeezy webhooks (placeholder until mapped). */
import type { Obj } from "./json-access.js";
import { obj, str } from "./json-access.js";
import type { MappedEvent } from "./mapped-event.js";

export async function mapLemonSqueezyEvent(event: Obj): Promise<MappedEvent> {
  return { kind: "ignored", type: str(obj(event, "meta").event_name) ?? "" };
}
