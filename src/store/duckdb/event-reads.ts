/**
 * The stored events' reads over DuckDB (ListEvents, the exports,
 * SiteOverview's partial days, erasure's and retention's counts): since
 * migration 19 an event lives here once the feed moved it out of SQLite.
 *
 * A page is read by position (`seq`, SQLite's AUTOINCREMENT id, appended in
 * order): DuckDB keeps each row group's min/max of `seq`, so a query bounded
 * to a window of positions reads only the row groups of that window. A page
 * looks in a window below `before`, widening it (×4) until it has its rows or
 * reaches the first position: the newest pages of a large table read a few
 * row groups, not the whole table, and an export reads each row group about
 * once.
 */
import type { DuckDBConnection, DuckDBValue } from "@duckdb/node-api";
import type { EventCountFilter } from "../../domain/analytics/query-plan.js";
import { EVENT_FIELD_TABLE, type EventRecord } from "../../domain/store/event-fields.js";
import type { EventPage, EventPageQuery } from "../../domain/store/events-port.js";

/** The DuckDB column of each stored field (the event's raw referrer is `referrer_url`). */
const COLUMN_OF: Record<string, string> = { referrer: "referrer_url" };

const SELECT = `seq, site_id, ${EVENT_FIELD_TABLE.map((f) => COLUMN_OF[f.stored] ?? f.stored).join(", ")}`;

/** The least first window of positions a page looks in (a site's events are mostly dense). */
const FIRST_WINDOW = 1_024;

/** A DuckDB row back to the record, by the field table's kinds. */
function eventOf(row: Record<string, DuckDBValue>): EventRecord {
  const e: Record<string, unknown> = { siteId: row.site_id };
  for (const f of EVENT_FIELD_TABLE) {
    const v = row[COLUMN_OF[f.stored] ?? f.stored];
    if (v === null || v === undefined) continue;
    e[f.field] =
      f.kind === "json" || f.kind === "map"
        ? JSON.parse(String(v))
        : f.kind === "text"
          ? String(v)
          : Number(v);
  }
  return e as EventRecord;
}

/** Events with their positions, newest first, as a read returns them. */
export interface PositionedEvents {
  events: EventRecord[];
  seqs: number[];
  /** Whether events are left below the last one. */
  more: boolean;
}

/** A page of a site's events, newest first by position (StoreEventsPart.pageEvents). */
export async function pageEvents(
  conn: DuckDBConnection,
  siteId: string,
  q: EventPageQuery,
): Promise<EventPage> {
  const r = await readEvents(conn, siteId, q);
  return {
    events: r.events,
    ...(r.more ? { next: r.seqs.at(-1) as number } : {}),
  };
}

/** Up to `q.limit` events below `q.before`, newest first, with their positions. */
export async function readEvents(
  conn: DuckDBConnection,
  siteId: string,
  q: EventPageQuery,
): Promise<PositionedEvents> {
  // The first page starts past the last position (one read of the column's newest row groups).
  let hi =
    q.before ??
    Number((await conn.runAndReadAll("SELECT max(seq) FROM events")).getRows()[0]?.[0] ?? -1) + 1;
  const first = 0;
  let width = Math.max(FIRST_WINDOW, q.limit * 4);
  // One more than asked: whether there is a next page, without an empty last one.
  const want = q.limit + 1;
  const seqs: number[] = [];
  // First the positions only (three narrow columns), then the page's rows by their
  // range: the wide columns are decompressed for the page's vectors, not the window's.
  while (seqs.length < want && hi > first) {
    const lo = Math.max(first, hi - width);
    const r = await conn.runAndReadAll(
      `SELECT seq FROM events
       WHERE site_id = $1 AND seq >= $2 AND seq < $3 AND ts >= $4 AND ts < $5
       ORDER BY seq DESC LIMIT $6`,
      [siteId, BigInt(lo), BigInt(hi), BigInt(q.from), BigInt(q.to), want - seqs.length],
    );
    for (const [seq] of r.getRows()) seqs.push(Number(seq));
    hi = lo;
    width *= 4;
  }
  const positions = seqs.slice(0, q.limit);
  if (positions.length === 0) return { events: [], seqs: [], more: false };
  const r = await conn.runAndReadAll(
    `SELECT ${SELECT} FROM events
     WHERE site_id = $1 AND seq >= $2 AND seq <= $3 AND ts >= $4 AND ts < $5
     ORDER BY seq DESC`,
    [
      siteId,
      BigInt(positions.at(-1) as number),
      BigInt(positions[0] as number),
      BigInt(q.from),
      BigInt(q.to),
    ],
  );
  return {
    events: r.getRowObjects().map(eventOf),
    seqs: positions,
    more: seqs.length > q.limit,
  };
}

/** Events a read-ahead fetches at once: this many pages of the caller's size. */
const READ_AHEAD_PAGES = 20;
/** The most events one read-ahead holds. */
const READ_AHEAD_MAX = 2_000;
/** Reads ahead kept at once (exports and listings in progress), oldest dropped first. */
const READ_AHEADS = 8;

/**
 * `pageEvents` for callers that page through a range (the exports: a page
 * of 100 at a time): each read fetches READ_AHEAD_PAGES pages' worth, and
 * the next pages are served from it while it is valid. A read-ahead holds
 * only events older than the reader's position, which new events never
 * join; it is dropped as soon as the feed removed events (an erasure, a
 * pruning: `removals()` moved), so no removed event is ever served from it.
 * Memory: READ_AHEADS × READ_AHEAD_PAGES pages at most.
 */
export function createEventPager(removals: () => number) {
  type Ahead = PositionedEvents & {
    key: string;
    removals: number;
    /** The read's upper bound: it holds every matching event in [last seq, before). */
    before: number;
  };
  const aheads: Ahead[] = [];
  return async (
    conn: () => Promise<DuckDBConnection>,
    siteId: string,
    q: EventPageQuery,
  ): Promise<EventPage> => {
    const key = `${siteId}\u0000${q.from}\u0000${q.to}\u0000${q.limit}`;
    const now = removals();
    const before = q.before ?? Number.MAX_SAFE_INTEGER;
    const hit = aheads.find(
      (a) =>
        a.key === key &&
        a.removals === now &&
        q.before !== undefined &&
        before <= a.before &&
        (a.seqs.at(-1) ?? Number.MAX_SAFE_INTEGER) < before,
    );
    if (hit) {
      const from = hit.seqs.findIndex((x) => x < before);
      const left = hit.seqs.length - from;
      // The page and whether one follows, when the read-ahead knows both.
      if (left > q.limit || !hit.more) {
        const end = from + Math.min(q.limit, left);
        const more = left > q.limit || hit.more;
        return {
          events: hit.events.slice(from, end),
          ...(more ? { next: hit.seqs[end - 1] as number } : {}),
        };
      }
    }
    // A first page (a listing's) reads just itself; the pages after it read ahead.
    const limit =
      q.before === undefined
        ? q.limit
        : Math.max(q.limit, Math.min(q.limit * READ_AHEAD_PAGES, READ_AHEAD_MAX));
    const read = await readEvents(await conn(), siteId, { ...q, limit });
    const ahead: Ahead = { ...read, key, removals: now, before };
    const stale = aheads.findIndex((a) => a.key === key);
    if (stale >= 0) aheads.splice(stale, 1);
    aheads.push(ahead);
    if (aheads.length > READ_AHEADS) aheads.shift();
    const end = Math.min(q.limit, read.seqs.length);
    const more = read.seqs.length > q.limit || read.more;
    return {
      events: read.events.slice(0, end),
      ...(more ? { next: read.seqs[end - 1] as number } : {}),
    };
  };
}

/** How many of a site's events match every condition of `filter`. */
export async function countEvents(
  conn: DuckDBConnection,
  siteId: string,
  filter: EventCountFilter,
): Promise<number> {
  const where = ["site_id = $1"];
  const values: DuckDBValue[] = [siteId];
  const add = (sql: (p: string) => string, v: DuckDBValue) => {
    values.push(v);
    where.push(sql(`$${values.length}`));
  };
  if (filter.before !== undefined) add((p) => `ts < ${p}`, BigInt(filter.before));
  if (filter.identifyUserId !== undefined) {
    add((p) => `user_id = ${p} AND name = '$identify'`, filter.identifyUserId);
  }
  if (filter.visitorIds !== undefined) {
    if (filter.visitorIds.length === 0) return 0;
    const ids = filter.visitorIds.map((id) => `'${id.replaceAll("'", "''")}'`).join(", ");
    where.push(`visitor_id IN (${ids})`);
  }
  const r = await conn.runAndReadAll(
    `SELECT count(*) FROM events WHERE ${where.join(" AND ")}`,
    values,
  );
  return Number(r.getRows()[0]?.[0] ?? 0);
}
