/**
 * Notices for the analytics feed (`analytics_log`). Buckets and payments
 * carry their own marker (`u`, the server's time of their last change), but
 * a deleted document carries nothing, and customer links and stitches are
 * small collections changed in few places: before each such write the store
 * writes a notice naming the keys it is about to change, stamped with the
 * server's time. The feed re-reads those keys' current documents for as long
 * as the notice is within its settle window (src/store/mongo/analytics-feed.ts),
 * so the change reaches DuckDB whether it lands a moment after the notice or
 * not at all (then the re-read finds the documents unchanged). There is no
 * multi-document transaction here: notice first, change second, is what
 * makes a crash between the two harmless.
 */
import { ObjectId } from "mongodb";
import type { AnalyticsNoticeDoc } from "./documents.js";
import type { Collections } from "./schema.js";

/** Most keys in one notice (a notice stays far below the 16 MB document limit). */
const KEYS_PER_NOTICE = 1_000;

/** Records that `keys` (of `kind`, in `siteId`) are about to change; resolves once stored. */
export async function noteChanges(
  c: Pick<Collections, "analyticsLog">,
  kind: AnalyticsNoticeDoc["kind"],
  siteId: string,
  keys: readonly string[],
): Promise<void> {
  const unique = [...new Set(keys)];
  for (let i = 0; i < unique.length; i += KEYS_PER_NOTICE) {
    // An upsert, so the server stamps `at` with its own clock ($currentDate):
    // one clock for every process, the one the feed's watermark is read in.
    await c.analyticsLog.updateOne(
      { _id: new ObjectId() },
      {
        $set: { kind, site_id: siteId, keys: unique.slice(i, i + KEYS_PER_NOTICE) },
        $currentDate: { at: true },
      },
      { upsert: true },
    );
  }
}
