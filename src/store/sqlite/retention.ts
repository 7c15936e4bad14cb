/**
 * Retention in SQLite: the per-site setting (sites.events_retention_days,
 * migration 10) and the pruning steps.
 *
 * A step walks the site's events in rowid order on events_site, whose
 * entries are (site_id, rowid), from the cursor (the last rowid the pass
 * examined): `EXPLAIN QUERY PLAN` of both statements is
 * `SEARCH events USING INDEX events_site (site_id=? AND rowid>?)` (the
 * delete adds `AND rowid<?`), so a step reads at most `limit` index entries
 * and rows, whatever the table's size, and holds the write lock for one
 * short transaction. Rowids grow with commits, and an event's `ts` is never
 * more than an hour before its receipt (the API replaces it otherwise), so
 * once the walk meets an event received STOP_AFTER_MS past the horizon,
 * every later event is newer than the horizon and the pass ends: a pass
 * reads the events before the horizon and at most two hours after it, never
 * the whole table. No (site_id, ts) index is needed (migration 10).
 *
 * Since migration 19 the table is the analytics feed's outbox: it holds only
 * the events not yet moved to DuckDB, so a walk is short. A pass's first step
 * logs the pruning for DuckDB (kind 7: the site's events before the horizon),
 * which the feed applies to the events it moved before, and before it
 * appends those committed after it (src/store/duckdb/analytics-feed.ts).
 */
import { STOP_AFTER_MS } from "../../domain/store/retention-port.js";
import type { StoreRetentionPart } from "../port.js";
import type { Db } from "./open-sqlite.js";

export function createSqliteRetention(db: Db): StoreRetentionPart {
  const s = {
    set: db.prepare("UPDATE sites SET events_retention_days = ? WHERE id = ?"),
    get: db.prepare("SELECT events_retention_days AS days FROM sites WHERE id = ?"),
    list: db.prepare(
      `SELECT id, events_retention_days AS days FROM sites
       WHERE events_retention_days IS NOT NULL ORDER BY id`,
    ),
    window: db.prepare(
      `SELECT id, ts, received_at FROM events WHERE site_id = ? AND id > ? ORDER BY id LIMIT ?`,
    ),
    remove: db.prepare("DELETE FROM events WHERE site_id = ? AND id > ? AND id <= ? AND ts < ?"),
    // What the analytics store must delete of the events the feed already moved
    // (migration 19's kind 7), written by a pass's first step, in its transaction.
    logPruned: db.prepare("INSERT INTO analytics_feed (kind, site_id, ref) VALUES (7, ?, ?)"),
  };

  const step = db.transaction((siteId: string, before: number, limit: number, after: number) => {
    if (after === 0) s.logPruned.run(siteId, before);
    const rows = s.window.all(siteId, after, limit) as {
      id: number;
      ts: number;
      received_at: number;
    }[];
    const last = rows.at(-1);
    if (!last) return { removed: 0 };
    const removed = s.remove.run(siteId, after, last.id, before).changes;
    const over = rows.length < limit || rows.some((r) => r.received_at >= before + STOP_AFTER_MS);
    return over ? { removed } : { removed, cursor: String(last.id) };
  });

  return {
    async setEventsRetention(siteId, days) {
      return s.set.run(days ?? null, siteId).changes === 1;
    },
    async getEventsRetention(siteId) {
      const r = s.get.get(siteId) as { days: number | null } | undefined;
      return r?.days ?? undefined;
    },
    async listEventsRetention() {
      return (s.list.all() as { id: string; days: number }[]).map((r) => ({
        siteId: r.id,
        days: r.days,
      }));
    },
    async pruneEventsStep(siteId, before, limit, cursor) {
      const after = cursor === undefined ? 0 : Number(cursor);
      if (!Number.isSafeInteger(after) || after < 0) throw new Error("invalid pruning cursor");
      return step.immediate(siteId, before, Math.max(1, Math.floor(limit)), after);
    },
  };
}
