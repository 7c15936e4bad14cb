/**
 * Retention in MongoDB: the per-site setting (`events_retention_days` on the
 * site document) and the pruning steps.
 *
 * Events live in buckets, one series per site and UTC hour of insertion
 * (event-buckets.ts), so the pruner removes whole buckets, never single
 * events: a step finds the site's oldest buckets by hour on the
 * `site_hour_n` index, at most `⌊limit / BUCKET_CAP⌋` of them (at least
 * one), with the newest `ts` of each computed by the server
 * (`$max: "$events.ts"`), then deletes by `_id` those whose newest event is
 * before the horizon. A bucket straddling the horizon (some events before,
 * some after) waits, whole, until all of it is past: its events are within
 * an hour or two of the horizon, and the next day's pass removes it. The
 * pass ends at the first straddling bucket: buckets come in order of their
 * hour, and every later one is at least as new.
 *
 * No TTL index: a TTL index expires a document by one date field, and would
 * need a per-site expiry written into every bucket at insert (retention
 * changes would have to rewrite every bucket), and it deletes at its own
 * pace, one document at a time, with no bound on the write load it adds
 * (docs/operations.md).
 */
import type { StoreRetentionPart } from "../port.js";
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
    async pruneEventsStep(siteId, before, limit) {
      const most = Math.max(1, Math.floor(limit / BUCKET_CAP));
      const horizon = new Date(before);
      const found = await c.events
        .find({ site_id: siteId, hour: { $lt: horizon } })
        .sort({ hour: 1 })
        .limit(most)
        .project<{ _id: unknown; n: number; newest: Date | null }>({
          n: 1,
          newest: { $max: "$events.ts" },
        })
        .toArray();
      const past = [];
      for (const b of found) {
        if (b.newest !== null && b.newest.getTime() >= before) break;
        past.push(b);
      }
      if (past.length > 0) {
        await c.events.deleteMany({
          site_id: siteId,
          _id: { $in: past.map((b) => b._id) },
        } as never);
      }
      const removed = past.reduce((n, b) => n + b.n, 0);
      // Over when the last found bucket straddles the horizon or there were no more to find.
      return past.length === most ? { removed, cursor: "more" } : { removed };
    },
  };
}
