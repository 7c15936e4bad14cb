/**
 * Retention in MongoDB: the per-site setting (`events_retention_days` on the
 * site document) and the pruning steps.
 *
 * Events live in buckets, one series per site and UTC hour of insertion
 * (event-buckets.ts), so the pruner removes whole buckets, never single
 * events: a step reads the site's buckets in insertion order (ascending
 * `max_q` on the `site_recent` index, from the cursor), at most
 * `⌊limit / BUCKET_CAP⌋` of them (at least one), with the oldest and newest
 * `ts` of each computed by the server (`$min`/`$max` of `$events.ts`, only
 * those values come back), then deletes by `_id` the buckets whose newest
 * event is before the horizon. A bucket straddling the horizon (some events
 * before, some after) waits, whole, until all of it is past: the next
 * day's pass removes it. As in SQLite, the pass ends at the first bucket
 * whose oldest event is STOP_AFTER_MS past the horizon: every bucket
 * written after it is newer still.
 *
 * No TTL index: a TTL index expires a document by one date field, and would
 * need a per-site expiry written into every bucket at insert (retention
 * changes would have to rewrite every bucket), and it deletes at its own
 * pace, one document at a time, with no bound on the write load it adds
 * (docs/operations.md).
 */

import type { ObjectId } from "mongodb";
import { STOP_AFTER_MS } from "../../domain/store/retention-port.js";
import type { StoreRetentionPart } from "../port.js";
import { noteChanges } from "./analytics-log.js";
import { BUCKET_CAP } from "./event-buckets.js";
import type { Collections } from "./schema.js";

export function createMongoRetention(c: Collections): StoreRetentionPart {
  return {
    async setEventsRetention(siteId, days) {
      const r = await c.sites.updateOne(
        { _id: siteId },
        days === undefined
          ? { $unset: { events_retention_days: "" } }
          : { $set: { events_retention_days: days } },
      );
      return r.matchedCount === 1;
    },
    async getEventsRetention(siteId) {
      const site = await c.sites.findOne(
        { _id: siteId },
        { projection: { events_retention_days: 1 } },
      );
      return site?.events_retention_days ?? undefined;
    },
    async listEventsRetention() {
      const sites = await c.sites
        .find({ events_retention_days: { $exists: true } })
        .project<{ _id: string; events_retention_days: number }>({ events_retention_days: 1 })
        .sort({ _id: 1 })
        .toArray();
      return sites.map((s) => ({ siteId: s._id, days: s.events_retention_days }));
    },
    async pruneEventsStep(siteId, before, limit, cursor) {
      const most = Math.max(1, Math.floor(limit / BUCKET_CAP));
      const after = cursor === undefined ? Number.NEGATIVE_INFINITY : Number(cursor);
      if (Number.isNaN(after)) throw new Error("invalid pruning cursor");
      const found = await c.events
        .find({ site_id: siteId, ...(cursor === undefined ? {} : { max_q: { $gt: after } }) })
        .sort({ max_q: 1 })
        .limit(most)
        .project<{ _id: ObjectId; n: number; max_q: number; oldest: Date; newest: Date }>({
          n: 1,
          max_q: 1,
          oldest: { $min: "$events.ts" },
          newest: { $max: "$events.ts" },
        })
        .toArray();
      const past = found.filter((b) => b.newest.getTime() < before);
      // One delete per bucket (a few per step), matched on the event count read: a bucket that
      // took an append in between (n grew; through the API it cannot, the events are days old)
      // is left for the next pass rather than deleted with an event not yet judged.
      let removed = 0;
      // The analytics feed learns of the deletions first (a bucket deleted leaves no marker).
      await noteChanges(
        c,
        "bucket",
        siteId,
        past.map((b) => b._id.toHexString()),
      );
      for (const b of past) {
        const r = await c.events.deleteOne({ site_id: siteId, _id: b._id, n: b.n });
        if (r.deletedCount === 1) removed += b.n;
      }
      const last = found.at(-1);
      const over =
        !last ||
        found.length < most ||
        found.some((b) => b.oldest.getTime() >= before + STOP_AFTER_MS);
      return over || !last ? { removed } : { removed, cursor: String(last.max_q) };
    },
  };
}
