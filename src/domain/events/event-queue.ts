/**
 * The events' write queue (step 6 of the events application): each request
 * is one EventGroup in a bounded group-commit queue, and its promise settles
 * after its batch is durably written. A full queue answers 503 at once.
 */
import { createGroupCommit, QueueFullError, type QueueSettings } from "../../lib/group-commit.js";
import type { Attributor } from "../attribution/attribute.js";
import { errors, storeError } from "../errors.js";
import type { EventGroup, EventGroupResult, Store } from "../store/store.js";

/** A group's outcome once written: stored, or refused by the quota. */
export type WrittenGroup = Exclude<EventGroupResult, { reason: "failed" }>;

/** The events' one write queue. */
export interface EventQueue {
  /**
   * Writes a group with other requests' groups; resolves with this group's
   * own outcome (others of its batch may have landed or failed): stored, or
   * refused by the quota. Throws when the queue is full or the write failed.
   */
  submit(group: EventGroup): Promise<WrittenGroup>;
  /** Writes what is queued; called on shutdown. */
  drain(): Promise<void>;
}

/** The queue over `store`: each batch one `commitEvents`, then the re-attribution it may call for. */
export function createEventQueue(deps: {
  store: Store;
  queue: QueueSettings;
  attribution?: Attributor;
}): EventQueue {
  const { store, queue } = deps;
  const pipeline = createGroupCommit<EventGroup, EventGroupResult>({
    ...queue,
    async commit(groups) {
      const results = await store.commitEvents(groups);
      // The events are durable now; attribution catches up on the next trigger if this fails.
      await deps.attribution?.afterEvents(groups, results).catch(() => {});
      return results;
    },
  });
  return {
    async submit(group) {
      let result: EventGroupResult;
      try {
        // Weight = events, so capacity bounds memory in events; a request larger
        // than the whole capacity still goes through when the queue is empty.
        result = await pipeline.submit(group, Math.min(group.events.length, queue.capacity));
      } catch (err) {
        if (err instanceof QueueFullError) throw errors.queueFull();
        throw storeError(err);
      }
      // This request's own outcome: others of its batch may have landed or failed.
      if (!result.ok && result.reason === "failed") throw storeError(result.error);
      return result as WrittenGroup;
    },
    drain() {
      return pipeline.drain();
    },
  };
}
