/** Placeholder: replaced by the events implementation. */
import type { Store } from "../../store/port.js";
import type { Clock } from "../clock.js";
import { DomainError } from "../errors.js";
import type { EventsApp } from "./events-app.js";

export interface EventsDeps {
  store: Store;
  clock: Clock;
  queue: { capacity: number; batchMax: number; flushMs: number };
  /** A GeoLite2/GeoIP2 MMDB file; the bundled DB-IP country file when unset. */
  geoipDb?: string;
}

export async function createEventsApp(_deps: EventsDeps): Promise<EventsApp> {
  return {
    async record() {
      throw new DomainError("internal", "not implemented");
    },
    async drain() {},
  };
}
