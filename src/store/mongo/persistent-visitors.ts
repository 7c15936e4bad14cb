/** Stitches of daily visitor ids to persistent ones in MongoDB (see src/domain/events/persistent-visitor.ts). */

import { visitorToReplace } from "../../domain/attribution/identity-cap.js";
import {
  isPersistentVisitorId,
  MAX_STITCHES_PER_VISITOR,
} from "../../domain/events/persistent-visitor.js";
import type { StorePersistentVisitorsPart, VisitorStitch } from "../port.js";
import { noteChanges } from "./analytics-log.js";
import type { VisitorStitchDoc } from "./documents.js";
import { retryDuplicates } from "./retry.js";
import type { Collections } from "./schema.js";

/**
 * Writes stitches after their events landed and their touches were written
 * (so a daily id's landing counts at the cap). A daily id keeps its first
 * persistent id (`$setOnInsert`: whoever inserts first wins, any process);
 * past the cap a new daily id replaces the stitched one with the weakest
 * first touch only when its own is better. The cap is checked per call:
 * concurrent writers may pass it by a few stitches, as with identity links.
 */
export async function writeStitches(
  c: Collections,
  stitches: readonly VisitorStitch[],
): Promise<void> {
  // The analytics feed learns of the daily ids about to be stitched first.
  const bySite = new Map<string, string[]>();
  for (const s of stitches) bySite.set(s.siteId, [...(bySite.get(s.siteId) ?? []), s.visitorId]);
  for (const [siteId, ids] of bySite) await noteChanges(c, "stitches", siteId, ids);
  for (const s of stitches) {
    if (await c.stitches.findOne({ site_id: s.siteId, visitor_id: s.visitorId })) continue;
    const stitched = (
      await c.stitches
        .find(
          { site_id: s.siteId, persistent_id: s.persistentId },
          { projection: { visitor_id: 1 } },
        )
        .limit(MAX_STITCHES_PER_VISITOR)
        .toArray()
    ).map((d) => d.visitor_id);
    if (stitched.length >= MAX_STITCHES_PER_VISITOR) {
      const ids = [...stitched, s.visitorId];
      const touches = new Map(
        (await c.touches.find({ site_id: s.siteId, visitor_id: { $in: ids } }).toArray()).map(
          (t) => [t.visitor_id, { internal: t.internal, ts: t.ts.getTime() }],
        ),
      );
      const replaced = visitorToReplace(
        stitched.map((visitorId) => ({ visitorId, touch: touches.get(visitorId) })),
        touches.get(s.visitorId),
      );
      if (replaced === undefined) continue;
      await noteChanges(c, "stitches", s.siteId, [replaced]);
      await c.stitches.deleteOne({ site_id: s.siteId, visitor_id: replaced });
    }
    await retryDuplicates(() =>
      c.stitches.updateOne(
        { site_id: s.siteId, visitor_id: s.visitorId },
        { $setOnInsert: { persistent_id: s.persistentId, ts: new Date(s.ts) } },
        { upsert: true },
      ),
    );
  }
}

function fromDoc(d: VisitorStitchDoc): VisitorStitch {
  return {
    siteId: d.site_id,
    visitorId: d.visitor_id,
    persistentId: d.persistent_id,
    ts: d.ts.getTime(),
  };
}

export function createMongoPersistentVisitors(c: Collections): StorePersistentVisitorsPart {
  return {
    async findStitches(siteId, visitorIds) {
      const ids = [...new Set(visitorIds)];
      const daily = ids.filter((id) => !isPersistentVisitorId(id));
      const persistent = ids.filter(isPersistentVisitorId);
      const [byDaily, byPersistent] = await Promise.all([
        daily.length === 0
          ? []
          : c.stitches.find({ site_id: siteId, visitor_id: { $in: daily } }).toArray(),
        persistent.length === 0
          ? []
          : c.stitches.find({ site_id: siteId, persistent_id: { $in: persistent } }).toArray(),
      ]);
      return (
        [...byDaily, ...byPersistent]
          .map(fromDoc)
          .sort((a, b) => a.ts - b.ts || (a.visitorId < b.visitorId ? -1 : 1))
          // A stitch found from both of its sides is listed once.
          .filter((s, i, all) => i === 0 || all[i - 1]?.visitorId !== s.visitorId)
      );
    },
  };
}
