/** Stitches of daily visitor ids to persistent ones in SQLite (see src/domain/events/persistent-visitor.ts). */

import { visitorToReplace } from "../../domain/attribution/identity-cap.js";
import {
  isPersistentVisitorId,
  MAX_STITCHES_PER_VISITOR,
} from "../../domain/events/persistent-visitor.js";
import type { StorePersistentVisitorsPart, VisitorStitch } from "../port.js";
import { firstTouchesOf } from "./first-touches.js";
import type { Db } from "./open-sqlite.js";

/**
 * The write of a stitch, run inside the events' transaction after the
 * group's touches (so a daily id's landing counts at the cap). A daily id
 * keeps its first persistent id; past the cap a new daily id replaces the
 * stitched one with the weakest first touch only when its own is better.
 */
export function createStitchWriter(db: Db): (s: VisitorStitch) => void {
  const q = {
    exists: db.prepare("SELECT 1 FROM visitor_stitches WHERE site_id = ? AND visitor_id = ?"),
    // Counting stops at the cap: bounded however many daily ids a vid was sent from.
    count: db.prepare(
      "SELECT count(*) AS n FROM (SELECT 1 FROM visitor_stitches WHERE site_id = ? AND persistent_id = ? LIMIT ?)",
    ),
    stitched: db.prepare(
      "SELECT visitor_id FROM visitor_stitches WHERE site_id = ? AND persistent_id = ?",
    ),
    unlink: db.prepare("DELETE FROM visitor_stitches WHERE site_id = ? AND visitor_id = ?"),
    insert: db.prepare(
      `INSERT INTO visitor_stitches (site_id, visitor_id, persistent_id, ts) VALUES (?, ?, ?, ?)
       ON CONFLICT (site_id, visitor_id) DO NOTHING`,
    ),
  };
  // Read after the events' transaction synced them (events.ts).
  const touches = firstTouchesOf(db);
  const rank = (siteId: string, visitorId: string) => {
    const t = touches.get(siteId, visitorId);
    return t === undefined ? undefined : { internal: t.internal, ts: t.ts };
  };
  return (s) => {
    if (q.exists.get(s.siteId, s.visitorId) !== undefined) return;
    const n = (q.count.get(s.siteId, s.persistentId, MAX_STITCHES_PER_VISITOR) as { n: number }).n;
    if (n >= MAX_STITCHES_PER_VISITOR) {
      const candidate = rank(s.siteId, s.visitorId);
      if (candidate === undefined) return;
      const stitched = (q.stitched.all(s.siteId, s.persistentId) as { visitor_id: string }[]).map(
        (r) => ({ visitorId: r.visitor_id, touch: rank(s.siteId, r.visitor_id) }),
      );
      const replaced = visitorToReplace(stitched, candidate);
      if (replaced === undefined) return;
      q.unlink.run(s.siteId, replaced);
    }
    q.insert.run(s.siteId, s.visitorId, s.persistentId, s.ts);
  };
}

/** SQLite limits bound parameters; look ids up in chunks. */
function chunks<T>(items: T[], size = 500): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

interface StitchRow {
  site_id: string;
  visitor_id: string;
  persistent_id: string;
  ts: number;
}

export function createSqlitePersistentVisitors(db: Db): StorePersistentVisitorsPart {
  const lookup = (siteId: string, column: "visitor_id" | "persistent_id", ids: string[]) =>
    chunks(ids).flatMap(
      (part) =>
        db
          .prepare(
            `SELECT site_id, visitor_id, persistent_id, ts FROM visitor_stitches
             WHERE site_id = ? AND ${column} IN (${part.map(() => "?").join(",")})`,
          )
          .all(siteId, ...part) as StitchRow[],
    );
  return {
    async findStitches(siteId, visitorIds) {
      const ids = [...new Set(visitorIds)];
      const rows = [
        ...lookup(
          siteId,
          "visitor_id",
          ids.filter((id) => !isPersistentVisitorId(id)),
        ),
        ...lookup(siteId, "persistent_id", ids.filter(isPersistentVisitorId)),
      ];
      return (
        rows
          .map(
            (r): VisitorStitch => ({
              siteId: r.site_id,
              visitorId: r.visitor_id,
              persistentId: r.persistent_id,
              ts: r.ts,
            }),
          )
          .sort((a, b) => a.ts - b.ts || (a.visitorId < b.visitorId ? -1 : 1))
          // A stitch found from both of its sides is listed once.
          .filter((s, i, all) => i === 0 || all[i - 1]?.visitorId !== s.visitorId)
      );
    },
  };
}
