/** Events, identity links, visitor salts and quota counters in SQLite. */

import {
  type LinkPlan,
  linksByUser,
  MAX_VISITORS_PER_USER,
  planLinks,
} from "../../domain/attribution/identity-cap.js";
import {
  EVENT_FIELD_TABLE,
  type EventFieldKind,
  type StoredNames,
} from "../../domain/store/event-fields.js";
import type { EventGroupResult, EventRecord, IdentityLink, StoreEventsPart } from "../port.js";
import { firstTouchesOf } from "./first-touches.js";
import { type Db, nul } from "./open-sqlite.js";
import { createStitchWriter } from "./persistent-visitors.js";

/** An events row: the site and the table's fields by column, NULL when absent. */
type EventRow = { site_id: string } & {
  [C in StoredNames[number]]: string | number | null;
};

/** The columns of the events table, in the order of the event-field table (event-fields.ts). */
const EVENT_COLUMNS = [
  "site_id",
  ...EVENT_FIELD_TABLE.map((f) => f.stored),
] as unknown as readonly ["site_id", ...StoredNames];

/**
 * The insert's parameters, in EVENT_COLUMNS order. Positional, straight from
 * the record, and written out rather than looped over the table: binding 23
 * named parameters from an intermediate row object cost ~40% more per event
 * (docs/performance.md), and a loop over the table ~0.4 µs more per event
 * than these property reads. The return type has one element per column, so
 * a field added to the table fails to compile here until it is bound.
 */
function eventParams(e: EventRecord): OnePer<typeof EVENT_COLUMNS> {
  return [
    e.siteId,
    e.name,
    e.url,
    nul(e.referrer),
    nul(e.title),
    nul(e.width),
    nul(e.language),
    e.props === undefined ? null : JSON.stringify(e.props),
    e.ts,
    e.receivedAt,
    e.visitorId,
    nul(e.userId),
    nul(e.country),
    nul(e.browser),
    nul(e.os),
    nul(e.device),
    nul(e.referrerHost),
    nul(e.utmSource),
    nul(e.utmMedium),
    nul(e.utmCampaign),
    nul(e.utmTerm),
    nul(e.utmContent),
    e.clickIds && Object.keys(e.clickIds).length > 0 ? JSON.stringify(e.clickIds) : null,
  ];
}

/** A tuple of one value per element of `T`. */
type OnePer<T extends readonly unknown[]> = { -readonly [K in keyof T]: unknown };

/** A stored value back to the record's, by kind: JSON text for objects and maps. */
const FROM_SQL: Record<EventFieldKind, (v: string | number) => unknown> = {
  text: (v) => v,
  integer: (v) => v,
  time: (v) => v,
  json: (v) => JSON.parse(v as string),
  map: (v) => JSON.parse(v as string),
};

function eventFromRow(r: EventRow): EventRecord {
  const e: Record<string, unknown> = { siteId: r.site_id };
  for (const f of EVENT_FIELD_TABLE) {
    const v = r[f.stored];
    e[f.field] = v === null ? undefined : FROM_SQL[f.kind](v);
  }
  return e as EventRecord;
}

export function createSqliteEvents(db: Db): StoreEventsPart {
  const s = {
    usage: db.prepare("SELECT count FROM quota_usage WHERE account_id = ? AND month = ?"),
    // The WHERE of the upsert makes the raise conditional: no change when it
    // would pass the ceiling. Not RETURNING the new count: with it the upsert
    // took 55 µs instead of 6 (better-sqlite3 12.11, SQLite 3.53; measured in
    // docs/performance.md), far more than the read of the count after it.
    reserve: db.prepare(
      `INSERT INTO quota_usage (account_id, month, count) SELECT @account, @month, @n WHERE @n <= @ceiling
       ON CONFLICT (account_id, month) DO UPDATE SET count = count + excluded.count
       WHERE quota_usage.count + excluded.count <= @ceiling`,
    ),
    insertEvent: db.prepare(
      `INSERT INTO events (${EVENT_COLUMNS.join(", ")}) VALUES (${EVENT_COLUMNS.map(() => "?").join(", ")})`,
    ),
    insertLink: db.prepare(
      `INSERT INTO identities (site_id, user_id, visitor_id, ts) VALUES (@siteId, @userId, @visitorId, @ts)
       ON CONFLICT (site_id, user_id, visitor_id) DO UPDATE SET ts = min(ts, excluded.ts)`,
    ),
    // Reading stops past the cap: the cost is bounded however many links a caller tried.
    linkedVisitors: db.prepare(
      "SELECT visitor_id FROM identities WHERE site_id = ? AND user_id = ? LIMIT ?",
    ),
    unlink: db.prepare(
      "DELETE FROM identities WHERE site_id = ? AND user_id = ? AND visitor_id = ?",
    ),
    list: db.prepare("SELECT * FROM events WHERE site_id = ? ORDER BY id DESC LIMIT ?"),
    // The rowid is the position: assigned under the write lock, so later commits get higher
    // ones. events_site's entries are (site_id, rowid): the page is a backward range scan.
    page: db.prepare(
      `SELECT * FROM events WHERE site_id = ? AND id < ? AND ts >= ? AND ts < ?
       ORDER BY id DESC LIMIT ?`,
    ),
    visitorsByUser: db.prepare(
      "SELECT site_id, user_id, visitor_id, ts FROM identities WHERE site_id = ? AND user_id = ? ORDER BY ts",
    ),
    insertSalt: db.prepare(
      "INSERT INTO salts (day, salt) VALUES (?, ?) ON CONFLICT (day) DO NOTHING",
    ),
    getSalt: db.prepare("SELECT salt FROM salts WHERE day = ?"),
    // Day strings (YYYY-MM-DD) sort as dates.
    pruneSalts: db.prepare("DELETE FROM salts WHERE day < ?"),
  };

  const touches = firstTouchesOf(db);
  const writeStitch = createStitchWriter(db);

  /** The first touches the cap weighs: of the user's linked visitors and of the candidates. */
  function touchesFor(siteId: string, userId: string, candidates: readonly string[]) {
    const linked = (s.visitorsByUser.all(siteId, userId) as { visitor_id: string }[]).map(
      (r) => r.visitor_id,
    );
    const found = new Map(
      [...linked, ...candidates].map((v) => {
        const t = touches.get(siteId, v);
        return [v, t === undefined ? undefined : { internal: t.internal, ts: t.ts }] as const;
      }),
    );
    return (visitorId: string) => found.get(visitorId);
  }

  /** Writes identity links as the cap on visitors per user id plans them (identity-cap.ts). */
  function writeLinks(links: readonly IdentityLink[]): void {
    for (const group of linksByUser(links)) {
      const { siteId, userId } = group[0] as IdentityLink;
      const candidates = group.map((l) => l.visitorId);
      const linked = (
        s.linkedVisitors.all(siteId, userId, MAX_VISITORS_PER_USER + group.length) as {
          visitor_id: string;
        }[]
      ).map((r) => r.visitor_id);
      // Touches are read only when a new visitor is past the cap.
      const plan =
        planLinks(linked, candidates) ??
        (planLinks(linked, candidates, touchesFor(siteId, userId, candidates)) as LinkPlan);
      for (const v of plan.unlink) s.unlink.run(siteId, userId, v);
      const keep = new Set(plan.link);
      for (const l of group) if (keep.has(l.visitorId)) s.insertLink.run(l);
    }
  }
  const usageOf = (account: string, month: string): number =>
    (s.usage.get(account, month) as { count: number } | undefined)?.count ?? 0;

  // One IMMEDIATE transaction per batch: one WAL sync for many requests, and
  // the write lock held from the first quota check to the commit, so other
  // processes cannot interleave.
  const commit = db.transaction((groups: Parameters<StoreEventsPart["commitEvents"]>[0]) => {
    // Under the write lock (IMMEDIATE): what other processes wrote is read first.
    touches.sync();
    const results: EventGroupResult[] = [];
    for (const g of groups) {
      if (g.countable > 0) {
        const changed = s.reserve.run({
          account: g.accountId,
          month: g.month,
          n: g.countable,
          ceiling: g.ceiling,
        }).changes;
        if (changed === 0) {
          results.push({
            ok: false,
            reason: "quota_exceeded",
            remaining: Math.max(0, g.ceiling - usageOf(g.accountId, g.month)),
          });
          continue;
        }
      }
      for (const e of g.events) s.insertEvent.run(eventParams(e));
      // Touches before links: a visitor's pageview in the same request counts when the cap
      // on visitors per user id decides whether its link is kept.
      // Every visitor whose first touch changed, and a few whose did not
      // (offer): their customers' attribution is computed again, unchanged.
      const firstTouches = (g.touches ?? []).filter(touches.offer).map((t) => t.visitorId);
      writeLinks(g.links);
      for (const st of g.stitches ?? []) writeStitch(st);
      results.push({
        ok: true,
        remaining: Math.max(0, g.ceiling - usageOf(g.accountId, g.month)),
        ...(firstTouches.length > 0 ? { firstTouches } : {}),
      });
    }
    // A merge of the journal, a slice at a time, when one is due (first-touches.ts).
    touches.mergeStep();
    return results;
  });

  return {
    async getUsage(accountId, month) {
      return usageOf(accountId, month);
    },
    async commitEvents(groups) {
      try {
        return commit.immediate(groups);
      } catch (err) {
        // Rolled back: what this connection holds of the journal may include
        // rows that were never committed.
        touches.reset();
        throw err;
      }
    },
    async listEvents(siteId, limit) {
      return (s.list.all(siteId, limit) as EventRow[]).map(eventFromRow);
    },
    async pageEvents(siteId, q) {
      // One more than asked: whether there is a next page, without an empty last one.
      const rows = s.page.all(
        siteId,
        q.before ?? Number.MAX_SAFE_INTEGER,
        q.from,
        q.to,
        q.limit + 1,
      ) as (EventRow & { id: number })[];
      const page = rows.slice(0, q.limit);
      return {
        events: page.map(eventFromRow),
        ...(rows.length > q.limit ? { next: (page.at(-1) as { id: number }).id } : {}),
      };
    },
    async findVisitorsByUser(siteId, userId) {
      const rows = s.visitorsByUser.all(siteId, userId) as {
        site_id: string;
        user_id: string;
        visitor_id: string;
        ts: number;
      }[];
      return rows.map(
        (r): IdentityLink => ({
          siteId: r.site_id,
          userId: r.user_id,
          visitorId: r.visitor_id,
          ts: r.ts,
        }),
      );
    },
    async ensureSalt(day, candidate) {
      s.insertSalt.run(day, candidate);
      return (s.getSalt.get(day) as { salt: string }).salt;
    },
    async pruneSalts(day) {
      s.pruneSalts.run(day);
    },
  };
}
