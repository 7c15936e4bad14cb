/** Events, identity links, visitor salts and quota counters in SQLite. */

import {
  type LinkPlan,
  linksByUser,
  MAX_VISITORS_PER_USER,
  planLinks,
} from "../../domain/attribution/identity-cap.js";
import type { EventGroupResult, EventRecord, IdentityLink, StoreEventsPart } from "../port.js";
import { createTouchWriter } from "./attribution.js";
import { type Db, nul, opt } from "./open-sqlite.js";

interface EventRow {
  site_id: string;
  name: string;
  url: string;
  referrer: string | null;
  title: string | null;
  width: number | null;
  language: string | null;
  props: string | null;
  ts: number;
  received_at: number;
  visitor_id: string;
  user_id: string | null;
  country: string | null;
  browser: string | null;
  os: string | null;
  device: string | null;
  referrer_host: string | null;
  utm_source: string | null;
  utm_medium: string | null;
  utm_campaign: string | null;
  utm_term: string | null;
  utm_content: string | null;
  click_ids: string | null;
}

/**
 * The insert's parameters, in EVENT_COLUMNS order. Positional, straight from
 * the record: binding 23 named parameters from an intermediate row object
 * cost ~40% more per event (docs/performance.md).
 */
function eventParams(e: EventRecord): unknown[] {
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

function eventFromRow(r: EventRow): EventRecord {
  return {
    siteId: r.site_id,
    name: r.name,
    url: r.url,
    referrer: opt(r.referrer),
    title: opt(r.title),
    width: opt(r.width),
    language: opt(r.language),
    props: r.props === null ? undefined : (JSON.parse(r.props) as Record<string, unknown>),
    ts: r.ts,
    receivedAt: r.received_at,
    visitorId: r.visitor_id,
    userId: opt(r.user_id),
    country: opt(r.country),
    browser: opt(r.browser),
    os: opt(r.os),
    device: opt(r.device),
    referrerHost: opt(r.referrer_host),
    utmSource: opt(r.utm_source),
    utmMedium: opt(r.utm_medium),
    utmCampaign: opt(r.utm_campaign),
    utmTerm: opt(r.utm_term),
    utmContent: opt(r.utm_content),
    clickIds:
      r.click_ids === null ? undefined : (JSON.parse(r.click_ids) as Record<string, string>),
  };
}

const EVENT_COLUMNS = [
  "site_id",
  "name",
  "url",
  "referrer",
  "title",
  "width",
  "language",
  "props",
  "ts",
  "received_at",
  "visitor_id",
  "user_id",
  "country",
  "browser",
  "os",
  "device",
  "referrer_host",
  "utm_source",
  "utm_medium",
  "utm_campaign",
  "utm_term",
  "utm_content",
  "click_ids",
] as const;

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
    linkedTouches: db.prepare(
      `SELECT i.visitor_id, t.internal, t.ts FROM identities i
       LEFT JOIN visitor_touches t ON t.site_id = i.site_id AND t.visitor_id = i.visitor_id
       WHERE i.site_id = ? AND i.user_id = ?`,
    ),
    touchOf: db.prepare(
      "SELECT internal, ts FROM visitor_touches WHERE site_id = ? AND visitor_id = ?",
    ),
    unlink: db.prepare(
      "DELETE FROM identities WHERE site_id = ? AND user_id = ? AND visitor_id = ?",
    ),
    list: db.prepare("SELECT * FROM events WHERE site_id = ? ORDER BY id DESC LIMIT ?"),
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

  const writeTouch = createTouchWriter(db);

  type TouchCols = { internal: number | null; ts: number | null };
  const touchFrom = (r: TouchCols | undefined) =>
    r?.ts == null ? undefined : { internal: r.internal === 1, ts: r.ts };

  /** The first touches the cap weighs: of the user's linked visitors and of the candidates. */
  function touchesFor(siteId: string, userId: string, candidates: readonly string[]) {
    const touches = new Map(
      (s.linkedTouches.all(siteId, userId) as ({ visitor_id: string } & TouchCols)[]).map((r) => [
        r.visitor_id,
        touchFrom(r),
      ]),
    );
    for (const v of candidates) {
      if (!touches.has(v)) touches.set(v, touchFrom(s.touchOf.get(siteId, v) as TouchCols));
    }
    return (visitorId: string) => touches.get(visitorId);
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
      const firstTouches = (g.touches ?? []).filter(writeTouch).map((t) => t.visitorId);
      writeLinks(g.links);
      results.push({
        ok: true,
        remaining: Math.max(0, g.ceiling - usageOf(g.accountId, g.month)),
        ...(firstTouches.length > 0 ? { firstTouches } : {}),
      });
    }
    return results;
  });

  return {
    async getUsage(accountId, month) {
      return usageOf(accountId, month);
    },
    async commitEvents(groups) {
      return commit.immediate(groups);
    },
    async listEvents(siteId, limit) {
      return (s.list.all(siteId, limit) as EventRow[]).map(eventFromRow);
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
