/** Polar webhooks (placeholder until mapped). */
import type { Obj } from "./json-access.js";
import { str } from "./json-access.js";
import type { MappedEvent } from "./mapped-event.js";

export async function mapPolarEvent(event: Obj): Promise<MappedEvent> {
  return { kind: "ignored", type: str(event.type) ?? "" };
}
