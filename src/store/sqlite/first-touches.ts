/**
 * Visitors' first touches in SQLite: a merged table keyed by visitor
 * (`visitor_touches`) and a journal of the better touches written since
 * (`touch_journal`, appended in id order), merged into the table in bulk.
 *
 * Why not an upsert per new visitor straight into `visitor_touches`: its key
 * is the visitor id, a hash, so every new visitor's row lands on its own
 * page of the B-tree; a batch of 3,000 new visitors rewrote about 3,700
 * pages (15 MB of WAL) at 1M visitors, and the WAL's checkpoint wrote them
 * again. Without that upsert, row n of the bench (every event a new
 * visitor) stored 2.4× more events a second (docs/performance.md, "First
 * touches by journal"). A journal row is appended at the end of its table;
 * a merge applies many at once, sorted, to pages that each take many.
 *
 * Every connection (one per server process) keeps the rank of each
 * visitor's best journal row in memory, read from the table by id since the last read
 * ({@link FirstTouches.sync}); a merge moves rows to the table (they stay
 * valid in memory: the table then holds the same touch) and an erasure
 * makes every connection read the journal again.
 */
import { isBetterTouch } from "../../domain/attribution/ranking.js";
import type { VisitorTouch } from "../port.js";
import { type Db, nul, opt } from "./open-sqlite.js";

/** Journal rows written since the last merge that start the next one. */
export const JOURNAL_MERGE_ROWS = 100_000;

/**
 * A merge's slices, by the visitor id's first character (daily ids are
 * hex): each slice one short transaction, with the ingestion commit that
 * runs it, instead of one long one. Ids outside hex sort into the ends.
 */
const SLICE_BOUNDS = [..."123456789abcdef"];
const SLICES = SLICE_BOUNDS.length + 1;

/** Visitor ids `>= lo AND < hi` of slice k (null: unbounded). */
function sliceRange(k: number): { lo: string | null; hi: string | null } {
  return { lo: k === 0 ? null : (SLICE_BOUNDS[k - 1] as string), hi: SLICE_BOUNDS[k] ?? null };
}

interface TouchRow {
  id?: number;
  site_id: string;
  visitor_id: string;
  ts: number;
  internal: number;
  channel: string;
  source: string | null;
  medium: string | null;
  campaign: string | null;
  landing_page: string;
}

const touchOf = (r: TouchRow): VisitorTouch => ({
  siteId: r.site_id,
  visitorId: r.visitor_id,
  ts: r.ts,
  internal: r.internal === 1,
  channel: r.channel,
  source: opt(r.source),
  medium: opt(r.medium),
  campaign: opt(r.campaign),
  landingPage: r.landing_page,
});

const keyOf = (siteId: string, visitorId: string) => `${siteId}\u0000${visitorId}`;

/** First touches of one connection (see the module's comment). */
export interface FirstTouches {
  /**
   * Reads the journal's rows appended since the last call, and what merges
   * and erasures did meanwhile. Call it once at the start of every operation
   * that reads or offers touches (in a write transaction: after its BEGIN).
   */
  sync(): void;
  /** The visitor's first touch, undefined when it has none. */
  get(siteId: string, visitorId: string): VisitorTouch | undefined;
  /**
   * A candidate first touch, inside the caller's write transaction: written
   * unless the journal holds one as good (isBetterTouch). Returns whether it
   * was: true for every touch that became the visitor's first, and for some
   * that did not (worse than the merged table's, which is not read here).
   */
  offer(t: VisitorTouch): boolean;
  /** One slice of a merge when one is due, inside the caller's write transaction. */
  mergeStep(): void;
  /** Deletes the visitors' touches, inside an erasure's transaction: how many had one. */
  forget(siteId: string, visitorIds: readonly string[]): number;
  /** Reads the whole journal again at the next sync (after a rolled-back transaction). */
  reset(): void;
}

const made = new WeakMap<Db, FirstTouches>();

/** The first touches of `db`: one per connection, shared by the adapter's parts. */
export function firstTouchesOf(db: Db, mergeRows = JOURNAL_MERGE_ROWS): FirstTouches {
  let t = made.get(db);
  if (t === undefined) {
    t = createFirstTouches(db, mergeRows);
    made.set(db, t);
  }
  return t;
}

function createFirstTouches(db: Db, mergeRows: number): FirstTouches {
  const COLUMNS =
    "site_id, visitor_id, ts, internal, channel, source, medium, campaign, landing_page";
  const s = {
    state: db.prepare(
      "SELECT merged_through, erasures, cycle_through, slice FROM touch_journal_state WHERE id = 1",
    ),
    newer: db.prepare(
      "SELECT id, site_id, visitor_id, internal, ts FROM touch_journal WHERE id > ? ORDER BY id",
    ),
    journalRow: db.prepare(`SELECT ${COLUMNS} FROM touch_journal WHERE id = ?`),
    row: db.prepare(`SELECT ${COLUMNS} FROM visitor_touches WHERE site_id = ? AND visitor_id = ?`),
    append: db.prepare(`INSERT INTO touch_journal (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    lastId: db.prepare("SELECT max(id) AS id FROM touch_journal"),
    setState: db.prepare(
      "UPDATE touch_journal_state SET merged_through = ?, cycle_through = ?, slice = ? WHERE id = 1",
    ),
    erased: db.prepare("UPDATE touch_journal_state SET erasures = erasures + 1 WHERE id = 1"),
  };
  // A slice's journal rows, each visitor's best first (then the first written),
  // upserted in key order with the table's rule: a row replaces the stored
  // touch only when better, so the best of the slice and the table stays.
  const merge = (range: string) =>
    db.prepare(
      `INSERT INTO visitor_touches (${COLUMNS})
       SELECT ${COLUMNS} FROM touch_journal WHERE id <= ? ${range}
       ORDER BY site_id, visitor_id, internal, ts, id
       ON CONFLICT (site_id, visitor_id) DO UPDATE SET
         ts = excluded.ts, internal = excluded.internal, channel = excluded.channel,
         source = excluded.source, medium = excluded.medium, campaign = excluded.campaign,
         landing_page = excluded.landing_page
       WHERE excluded.internal < visitor_touches.internal
          OR (excluded.internal = visitor_touches.internal AND excluded.ts < visitor_touches.ts)`,
    );
  const slices = Array.from({ length: SLICES }, (_, k) => {
    const { lo, hi } = sliceRange(k);
    return merge(
      `${lo === null ? "" : `AND visitor_id >= '${lo}'`} ${hi === null ? "" : `AND visitor_id < '${hi}'`}`,
    );
  });
  // The merged rows go at the merge's end, all at once: a slice's rows lie on
  // every page of the journal, which a delete per slice would write each time.
  const dropMerged = db.prepare("DELETE FROM touch_journal WHERE id <= ?");

  /**
   * The rank of the journal's best touch per visitor and the id of its row
   * (the row is read when the touch is: the rank alone keeps the memory small).
   */
  const journal = new Map<string, { id: number; internal: boolean; ts: number }>();
  let readThrough = 0;
  let seenErasures = Number.NaN;
  let seenMerged = 0;

  const fold = (
    r: Pick<TouchRow, "site_id" | "visitor_id" | "ts" | "internal"> & { id: number },
  ) => {
    const key = keyOf(r.site_id, r.visitor_id);
    const rank = { id: r.id, internal: r.internal === 1, ts: r.ts };
    const held = journal.get(key);
    if (held === undefined || isBetterTouch(rank, held)) journal.set(key, rank);
  };

  const get = (siteId: string, visitorId: string): VisitorTouch | undefined => {
    const held = journal.get(keyOf(siteId, visitorId));
    const row = s.row.get(siteId, visitorId) as TouchRow | undefined;
    const stored = row === undefined ? undefined : touchOf(row);
    // The journal's touch only when better: a row is written without reading
    // the table (offer), and on equal ranks the touch stored first stays.
    if (held === undefined || (stored !== undefined && !isBetterTouch(held, stored))) return stored;
    const mine = s.journalRow.get(held.id) as TouchRow | undefined;
    return mine === undefined ? stored : touchOf(mine);
  };

  return {
    sync() {
      const st = s.state.get() as {
        merged_through: number;
        erasures: number;
        cycle_through: number;
        slice: number;
      };
      if (st.erasures !== seenErasures) {
        journal.clear();
        readThrough = 0;
        seenErasures = st.erasures;
        seenMerged = st.merged_through;
      } else if (st.merged_through !== seenMerged) {
        // Merged rows are in the table now: memory lets them go.
        for (const [key, e] of journal) if (e.id <= st.merged_through) journal.delete(key);
        seenMerged = st.merged_through;
      }
      for (const r of s.newer.iterate(readThrough) as Iterable<
        Pick<TouchRow, "site_id" | "visitor_id" | "ts" | "internal"> & { id: number }
      >) {
        fold(r);
        readThrough = r.id;
      }
    },
    get,
    offer(t) {
      // Compared with the journal's touch alone: reading the table would cost a
      // random page read per new visitor (most of what the journal saves); a
      // touch worse than the table's is left by the merge and by get.
      const held = journal.get(keyOf(t.siteId, t.visitorId));
      if (held !== undefined && !isBetterTouch(t, held)) return false;
      const id = Number(
        s.append.run(
          t.siteId,
          t.visitorId,
          t.ts,
          t.internal ? 1 : 0,
          t.channel,
          nul(t.source),
          nul(t.medium),
          nul(t.campaign),
          t.landingPage,
        ).lastInsertRowid,
      );
      journal.set(keyOf(t.siteId, t.visitorId), { id, internal: t.internal, ts: t.ts });
      // Under the write lock, after a sync: the next id is this connection's
      // own, so it need not be read back.
      if (id === readThrough + 1) readThrough = id;
      return true;
    },
    mergeStep() {
      const st = s.state.get() as { merged_through: number; cycle_through: number; slice: number };
      let through = st.cycle_through;
      let k = st.slice;
      if (through === 0) {
        const last = (s.lastId.get() as { id: number | null }).id ?? 0;
        if (last - st.merged_through < mergeRows) return;
        through = last;
        k = 0;
      }
      (slices[k] as (typeof slices)[number]).run(through);
      if (k + 1 < SLICES) s.setState.run(st.merged_through, through, k + 1);
      else {
        dropMerged.run(through);
        s.setState.run(through, 0, 0);
      }
    },
    forget(siteId, visitorIds) {
      let had = 0;
      for (const v of visitorIds) if (get(siteId, v) !== undefined) had += 1;
      for (const part of chunks(visitorIds)) {
        const marks = part.map(() => "?").join(",");
        db.prepare(`DELETE FROM touch_journal WHERE site_id = ? AND visitor_id IN (${marks})`).run(
          siteId,
          ...part,
        );
        db.prepare(
          `DELETE FROM visitor_touches WHERE site_id = ? AND visitor_id IN (${marks})`,
        ).run(siteId, ...part);
      }
      // Every connection (this one too) reads the journal again at its next sync.
      s.erased.run();
      return had;
    },
    reset() {
      seenErasures = Number.NaN;
    },
  };
}

/** SQLite limits bound parameters; ids go in chunks. */
function chunks<T>(items: readonly T[], size = 400): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
