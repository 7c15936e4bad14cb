/**
 * The `analytics_log` collection of the model (src/store/mongo/analytics-log.ts):
 * `updateOne` upserts a notice by its new `_id` with `$set` and
 * `$currentDate`, stamped with the model server's clock, as the server does.
 */
import { expect } from "vitest";
import type { Doc } from "./model.js";

export interface FakeAnalyticsLog {
  docs: Doc[];
  updateOne(filter: Doc, update: Doc, options: Doc): Promise<{ upsertedCount: number }>;
}

/** An empty notice log whose server clock is `now` (a fixed time unless given). */
export function fakeAnalyticsLog(now: () => number = () => 0): FakeAnalyticsLog {
  const docs: Doc[] = [];
  return {
    docs,
    async updateOne(filter, update, options) {
      expect(options).toEqual({ upsert: true });
      expect(Object.keys(update).sort()).toEqual(["$currentDate", "$set"]);
      expect(update.$currentDate).toEqual({ at: true });
      docs.push({ ...filter, ...(update.$set as Doc), at: new Date(now()) });
      return { upsertedCount: 1 };
    },
  };
}
