/**
 * Where the stored events are read from: the one place the domain chooses
 * between the store and the analytics engine (ListEvents, the exports,
 * erasure's and retention's counts).
 *
 * On SQLite deployments the store's events table is only the feed's outbox
 * (migration 19): an event leaves it once DuckDB committed it, so every read
 * of stored events goes to the engine, which waits for the feed first
 * (read-your-writes, src/services.ts). A process without the engine (a
 * worker that does not own the analytics file, until the port is forwarded
 * to it) answers unavailable rather than a part of the events.
 *
 * SEAM (MongoDB): a MongoDB store keeps its events until its own feed lands;
 * its reads stay on the store, and erasure and retention count there alone.
 */
import { errors } from "../errors.js";
import type { Store } from "../store/store.js";
import type { AnalyticsEngine } from "./query-plan.js";

/** The stored events' reads the reports, erasure and retention use. */
export type StoredEventReads = Pick<AnalyticsEngine, "pageEvents"> & {
  /**
   * Counts what an erasure or a pruning is about to remove where the store
   * no longer holds it (the engine's part); undefined when the store holds
   * every event (its own counts are the whole).
   */
  countEvents?: AnalyticsEngine["countEvents"];
};

/** The reads of a deployment: the engine's when events live there, else the store's. */
export function storedEventReads(options: {
  store: Pick<Store, "pageEvents">;
  engine: AnalyticsEngine | undefined;
  /** Whether the store moves its events to the engine (SQLite in a file). */
  eventsInEngine: boolean;
}): StoredEventReads {
  const { store, engine } = options;
  if (!options.eventsInEngine) {
    return {
      pageEvents: (siteId, q) => store.pageEvents(siteId, q),
    };
  }
  if (engine) {
    return {
      pageEvents: (siteId, q) => engine.pageEvents(siteId, q),
      countEvents: (siteId, filter) => engine.countEvents(siteId, filter),
    };
  }
  const unserved = () => Promise.reject(errors.analyticsNotServed());
  return {
    pageEvents: unserved,
    countEvents: unserved,
  };
}
