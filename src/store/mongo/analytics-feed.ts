/**
 * The feed: MongoDB → the DuckDB analytics store, the MongoDB counterpart of
 * src/store/duckdb/analytics-feed.ts (same tables, same row appending from
 * src/store/duckdb/analytics-rows.ts, same engine above it).
 *
 * A watermark, not a change stream: it works on a standalone server as on a
 * replica set, needs no oplog window (a feed stopped for a week resumes), and
 * reads with the service's own `readWrite` role. Three streams, each read in
 * the order of the server's clock:
 * - event buckets by `u` (the server's time of their last append or
 *   erasure; index feed_u), read without their events: a bucket whose `u`
 *   and `n` are those DuckDB last applied (`mongo_buckets`) is skipped; the
 *   others are read whole and compared with the event numbers (`q`) DuckDB
 *   holds for them, and only the difference is applied: new events
 *   appended, missing ones deleted;
 * - payments by `u`: each one read replaces its row;
 * - notices (`analytics_log`, by `at`), written by the store BEFORE a change
 *   no marker can show: a bucket deleted (retention, erasure), a customer's
 *   links or a visitor's stitches written or deleted. Each names keys whose
 *   current documents the feed re-reads and replaces (none left: deleted).
 *
 * Markers are stamped when a write is applied, not when it becomes visible,
 * and a notice precedes its change: so every poll re-reads from `settleMs`
 * before the highest marker applied. Applying a document again is harmless
 * (a bucket whose events DuckDB already holds changes nothing; a payment or a
 * key is replaced by its current state), so the window costs reads, never
 * doubles. Each page of a stream is applied in ONE DuckDB transaction with
 * that stream's watermark (`mongo_feed_state`): after a crash anywhere the
 * next start re-reads from the last committed watermark minus the window,
 * so nothing is lost and nothing counted twice.
 *
 * With no watermark (a new or deleted file), the store is rebuilt from the
 * collections in one transaction, and the streams start at the server's
 * time read before it (docs/mongodb.md, "Analytics").
 */

import { listValue } from "@duckdb/node-api";
import { type Document, MongoClient, ObjectId, ReadPreference } from "mongodb";
import { EVENT_FIELD_TABLE } from "../../domain/store/event-fields.js";
import { UNATTRIBUTED } from "../../domain/vocabulary.js";
import { type AnalyticsFeed, compactedCopy } from "../duckdb/analytics-feed.js";
import {
  appendEvent,
  appendPayment,
  type EventRow,
  type PaymentRow,
} from "../duckdb/analytics-rows.js";
import { type AnalyticsStore, visitorKey } from "../duckdb/analytics-store.js";
import { markDueForRewrite } from "../duckdb/file-upgrades.js";
import {
  forgetVisitorNumbers,
  moveStagedEvents,
  openEventStage,
  openRebuildStage,
} from "../duckdb/visitor-numbers.js";
import {
  rebuildVisits,
  refreshVisits,
  scratchOf,
  type TouchedVisitor,
} from "../duckdb/visits-maintenance.js";
import type {
  AnalyticsNoticeDoc,
  CustomerVisitorDoc,
  EventBucketDoc,
  EventDoc,
  PaymentDoc,
  VisitorStitchDoc,
} from "./documents.js";
import { fromPairs, toNumber } from "./documents.js";
import { type Collections, collections } from "./schema.js";
import { clientOptions } from "./time-limit.js";

/** The collections the feed reads: the driver boundary its tests stand in for. */
export type FeedCollections = Pick<
  Collections,
  | "events"
  | "payments"
  | "customerVisitors"
  | "stitches"
  | "analyticsLog"
  | "analyticsFeedState"
  | "sites"
>;

/** Where the feed reads from: its own connection to the store's database. */
export interface MongoFeedSource {
  c: FeedCollections;
  /** The server's clock, in ms (the clock every marker is stamped with). */
  serverTime(): Promise<number>;
  close(): Promise<void>;
}

/**
 * Connects the feed to the database of a `mongodb://` STORE_URL. Reads go to
 * the primary (they must see what was just acknowledged), without the
 * per-operation time limit of requests: a rebuild reads whole collections.
 */
export async function openMongoFeedSource(
  database: { url: string; dbName: string },
  timeoutMs: number,
): Promise<MongoFeedSource> {
  const client = new MongoClient(database.url, clientOptions(timeoutMs));
  await client.connect();
  const db = client.db(database.dbName, { readPreference: ReadPreference.PRIMARY });
  return {
    c: collections(db),
    async serverTime() {
      const hello = await db.command({ hello: 1 });
      return (hello.localTime as Date).getTime();
    },
    close: () => client.close(),
  };
}

export interface MongoAnalyticsFeedOptions {
  source: MongoFeedSource;
  analytics: AnalyticsStore;
  /** The clock `dirtySince` is read from (default: the system's). */
  now?: () => number;
  /** Time between two polls (ANALYTICS_FEED_INTERVAL_MS). */
  intervalMs: number;
  /**
   * How far before its watermark each poll reads again: longer than a write
   * takes from its marker to being visible, and than a notice precedes its
   * change (one operation, at most STORE_TIMEOUT_MS), with room for the
   * clock step of a new primary. Default 60 s.
   */
  settleMs?: number;
  /** Documents per page (one DuckDB transaction each). Default 100. */
  pageSize?: number;
  /** Events a rebuild commits at a time (REBUILD_STAGE_ROWS; tests make it small). */
  rebuildStageRows?: number;
  /** A failed page (rolled back; the poll after the next interval reads it again). */
  onError?: (err: unknown) => void;
  /**
   * Tests stand for a crash at the two edges of a page: a throw before
   * DuckDB's commit (it rolls back), or after it (before anything else); or
   * after a rebuild's slice of events was committed.
   */
  faults?: {
    beforeCommit?(): void;
    afterCommit?(): void;
    afterRebuildSlice?(): void;
    /** A rewrite's copy is written, before the swap (a test holds it there). */
    afterCopy?(): void | Promise<void>;
  };
  /**
   * Called once per page, inside its DuckDB transaction, with the (site,
   * visitor key) pairs whose events the page appended or deleted: where a
   * table derived per visitor (the visits table of issue 30) is brought up
   * to date in the same transaction as the events.
   */
  onVisitorsChanged?: (
    writer: AnalyticsStore["writer"],
    changed: ReadonlyMap<string, ReadonlySet<bigint>>,
  ) => Promise<void>;
}

/** The three streams and their marker fields. */
type Stream = "buckets" | "payments" | "notices";

/**
 * The feed's own tables in the analytics file: each stream's watermark (the
 * server's time, ms), and which event numbers each bucket gave DuckDB.
 */
const FEED_SCHEMA = `
CREATE TABLE IF NOT EXISTS mongo_feed_state (stream VARCHAR PRIMARY KEY, mark BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS mongo_buckets (
  bucket VARCHAR NOT NULL, u BIGINT NOT NULL, n INTEGER NOT NULL, seqs BIGINT[] NOT NULL
);
`;

/** A stored event of a bucket as the shared row (every field of the event-field table). */
export function eventRowOf(siteId: string, d: EventDoc): EventRow {
  const row: Record<string, unknown> = { id: d.q, site_id: siteId };
  const doc = d as unknown as Record<string, unknown>;
  for (const f of EVENT_FIELD_TABLE) {
    const v = doc[f.stored];
    if (v === undefined || v === null) row[f.stored] = null;
    else if (f.kind === "time") row[f.stored] = (v as Date).getTime();
    else if (f.kind === "map") row[f.stored] = JSON.stringify(fromPairs(v as never));
    else row[f.stored] = v;
  }
  return row as unknown as EventRow;
}

/** A payment document as the shared row. */
export function paymentRowOf(d: PaymentDoc): PaymentRow {
  const a = d.attribution;
  return {
    site_id: d.site_id,
    payment_id: d.payment_id,
    customer_id: d.customer_id,
    currency: d.currency,
    amount_minor: toNumber(d.amount_minor),
    kind: d.kind,
    status: d.status,
    paid_at: d.paid_at.getTime(),
    channel: d.channel ?? UNATTRIBUTED,
    attribution: a
      ? JSON.stringify({
          source: a.source,
          medium: a.medium,
          campaign: a.campaign,
          landingPage: a.landing_page,
          visitorId: a.visitor_id,
          touchedAt: a.touched_at.getTime(),
        })
      : null,
  };
}

/** Whether two lists of rows hold the same rows, in any order. */
function sameRows(a: readonly unknown[][], b: readonly unknown[][]): boolean {
  const key = (r: readonly unknown[]) => r.map(String).join("\u0000");
  const x = a.map(key).sort();
  const y = b.map(key).sort();
  return x.length === y.length && x.every((k, i) => k === y[i]);
}

/** One turn of the event loop (a rebuild of millions of rows runs beside ingestion). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Documents a rebuild appends between two turns of the event loop. */
const REBUILD_SLICE = 5_000;

/** The `analytics_feed_state` document of the notice log's trim horizon. */
const NOTICES_STATE = "notices";

/** Creates the feed of a MongoDB deployment's analytics store. */
export function createMongoAnalyticsFeed(options: MongoAnalyticsFeedOptions): AnalyticsFeed {
  const { source, analytics } = options;
  const { c } = source;
  const settleMs = options.settleMs ?? 60_000;
  const pageSize = options.pageSize ?? 100;
  // The writer of the file open now: a rewrite (between two drains) opens a new one.
  let w = analytics.writer;
  const marks = new Map<Stream, number>();
  /** The (site, visitor key) pairs whose events the page in progress changed. */
  let visitorsChanged = new Map<string, Set<bigint>>();
  const visitorChanged = (siteId: string, vid: bigint) => {
    let set = visitorsChanged.get(siteId);
    if (!set) {
      set = new Set();
      visitorsChanged.set(siteId, set);
    }
    set.add(vid);
  };
  const siteHosts = new Map<string, string[]>();
  let ready: Promise<void> | undefined;
  let running: Promise<number> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  /**
   * When rows were first removed since the last rewrite: kept in the file
   * (feed_state row 3, as the SQLite feed does) in the page's transaction, so
   * a restart does not forget a rewrite that is due.
   */
  let dirty: number | undefined;
  /** The time the page in progress marked the file dirty with (kept once it commits). */
  let dirtyNow: number | undefined;
  const markDirty = async () => {
    if (dirty !== undefined || dirtyNow !== undefined) return;
    dirtyNow = (options.now ?? Date.now)();
    await markDueForRewrite(w, dirtyNow);
  };
  /**
   * Set while a rewrite copies the file: the notices stay in MongoDB until
   * the new file (whose watermarks are the copy's) has replayed them.
   */
  let deferring = false;
  /** The rewrite in progress (compact). */
  let compacting: ReturnType<AnalyticsFeed["compact"]> | undefined;
  /** Deletions of events applied (the event pager drops its read-ahead when this moves). */
  let removals = 0;
  /** Whether the transaction in progress removed events (counted at its commit). */
  let removedNow = false;

  const hostsOf = async (siteId: string): Promise<string[]> => {
    let hosts = siteHosts.get(siteId);
    if (!hosts) {
      const site = await c.sites.findOne({ _id: siteId }, { projection: { hostnames: 1 } });
      hosts = site?.hostnames ?? [];
      siteHosts.set(siteId, hosts);
    }
    return hosts;
  };

  const setMark = (stream: Stream, mark: number) =>
    w.run(
      "INSERT INTO mongo_feed_state VALUES ($1, $2) ON CONFLICT (stream) DO UPDATE SET mark = excluded.mark",
      [stream, BigInt(mark)],
    );

  /** Runs `body` in one DuckDB transaction (rolled back when it throws). */
  const transaction = async (body: () => Promise<void>) => {
    await w.run("BEGIN TRANSACTION");
    dirtyNow = undefined;
    removedNow = false;
    try {
      await body();
      options.faults?.beforeCommit?.();
      await w.run("COMMIT");
    } catch (err) {
      await w.run("ROLLBACK").catch(() => {});
      dirtyNow = undefined;
      removedNow = false;
      throw err;
    }
    dirty ??= dirtyNow;
    dirtyNow = undefined;
    // Counted once DuckDB committed the removal: a read taken while it was
    // applied (it saw the removed rows) is then older than the count.
    if (removedNow) removals += 1;
    removedNow = false;
    options.faults?.afterCommit?.();
  };

  /** What DuckDB holds of these buckets: their marker and count when last applied, their events. */
  const heldBuckets = async (ids: string[]) => {
    const held = new Map<string, { u: number; n: number; seqs: number[] }>();
    const r = await w.runAndReadAll(
      "SELECT bucket, u, n, seqs FROM mongo_buckets WHERE list_contains($1::VARCHAR[], bucket)",
      [listValue(ids)],
    );
    for (const [bucket, u, n, seqs] of r.getRowsJS() as [string, bigint, number, bigint[]][]) {
      held.set(bucket, { u: Number(u), n, seqs: seqs.map(Number) });
    }
    return held;
  };

  /**
   * A page of the bucket stream, read without events (`_id`, `u`, `n`):
   * a bucket whose marker and count are those DuckDB applied is skipped, so
   * the window's re-reads cost index reads, not events; the others are read
   * whole and synchronized.
   */
  const applyBucketHeads = async (heads: EventBucketDoc[]) => {
    const held = await heldBuckets(heads.map((b) => (b._id as ObjectId).toHexString()));
    const changed = heads.filter((b) => {
      const h = held.get((b._id as ObjectId).toHexString());
      return h === undefined || h.u !== b.u?.getTime() || h.n !== b.n;
    });
    if (changed.length === 0) return;
    const read = await c.events
      .find({ _id: { $in: changed.map((b) => b._id as ObjectId) } })
      .toArray();
    await syncBuckets(
      changed.map((b) => (b._id as ObjectId).toHexString()),
      read,
    );
  };

  /**
   * Brings DuckDB's rows of the buckets `ids` (read now: `read`; an id
   * missing from it was deleted) to their current events: appends the new,
   * deletes the missing, records what it applied.
   */
  const syncBuckets = async (ids: string[], read: EventBucketDoc[]) => {
    if (ids.length === 0) return;
    const held = await heldBuckets(ids);
    const current = new Map(read.map((b) => [(b._id as ObjectId).toHexString(), b]));
    const gone: number[] = [];
    const added: { siteId: string; e: EventDoc }[] = [];
    const changed: { id: string; u: number; n: number; seqs: number[] }[] = [];
    for (const id of ids) {
      const h = held.get(id);
      const before = h?.seqs ?? [];
      const b = current.get(id);
      const now = b ? b.events.map((e) => e.q) : [];
      const u = b?.u?.getTime() ?? 0;
      const had = new Set(before);
      const has = new Set(now);
      const same = had.size === has.size && now.every((q) => had.has(q));
      if (same && (b === undefined || (h?.u === u && h?.n === b.n))) continue;
      for (const q of before) if (!has.has(q)) gone.push(q);
      if (b) for (const e of b.events) if (!had.has(e.q)) added.push({ siteId: b.site_id, e });
      changed.push({ id, u, n: b?.n ?? 0, seqs: now });
    }
    if (changed.length === 0) return;
    if (gone.length > 0) {
      // Anything but an append leaves old rows' bytes in the file until it is rewritten.
      await markDirty();
      removedNow = true;
      const left: { siteId: string; vid: bigint }[] = [];
      for (let k = 0; k < gone.length; k += 1000) {
        const deleted = await w.runAndReadAll(
          "DELETE FROM events WHERE list_contains($1::BIGINT[], seq) RETURNING site_id, vid",
          [listValue(gone.slice(k, k + 1000).map(BigInt))],
        );
        for (const [site, vid] of deleted.getRowsJS() as [string, bigint][]) {
          visitorChanged(site, vid);
          left.push({ siteId: site, vid });
        }
      }
      // Those left without events (erased, pruned) lose their numbers.
      await forgetVisitorNumbers(w, left);
    }
    await w.run("DELETE FROM mongo_buckets WHERE list_contains($1::VARCHAR[], bucket)", [
      listValue(changed.map((x) => x.id)),
    ]);
    for (const { siteId, e } of added) visitorChanged(siteId, visitorKey(e.visitor_id));
    if (added.length > 0) {
      const events = await openEventStage(w);
      try {
        for (const { siteId, e } of added)
          appendEvent(events, eventRowOf(siteId, e), await hostsOf(siteId));
      } finally {
        events.closeSync();
      }
      await moveStagedEvents(w);
    }
    const rows = changed.filter((x) => x.seqs.length > 0);
    if (rows.length > 0) {
      const ap = await w.createAppender("mongo_buckets");
      try {
        for (const x of rows) {
          ap.appendVarchar(x.id);
          ap.appendBigInt(BigInt(x.u));
          ap.appendInteger(x.n);
          ap.appendList(listValue(x.seqs.map(BigInt)));
          ap.endRow();
        }
      } finally {
        ap.closeSync();
      }
    }
  };

  /** Replaces the rows of `docs`' payments by their current state. */
  const replacePayments = async (docs: PaymentDoc[]) => {
    if (docs.length === 0) return;
    // The page's rows beside the held ones: only a payment whose row changed is
    // replaced, so the window's re-reads of unchanged payments leave no old
    // bytes in the file (nor mark it due for a rewrite).
    await w.run(
      "CREATE TEMP TABLE IF NOT EXISTS incoming_payments AS FROM payments LIMIT 0; DELETE FROM incoming_payments",
    );
    const ap = await w.createAppender("incoming_payments");
    try {
      for (const p of docs) appendPayment(ap, paymentRowOf(p));
    } finally {
      ap.closeSync();
    }
    const stale = await w.runAndReadAll(
      `DELETE FROM payments WHERE (site_id, payment_id) IN (
         SELECT site_id, payment_id FROM (FROM payments SEMI JOIN incoming_payments USING (site_id, payment_id)
                                          EXCEPT FROM incoming_payments))
       RETURNING 1`,
    );
    if (stale.currentRowCount > 0) await markDirty();
    await w.run("INSERT INTO payments FROM incoming_payments EXCEPT FROM payments");
  };

  /** Applies one notice: the named keys' current documents replace DuckDB's rows. */
  const applyNotice = async (n: AnalyticsNoticeDoc) => {
    const site = n.site_id;
    if (n.kind === "bucket") {
      const ids = n.keys.filter((k) => ObjectId.isValid(k));
      const read = await c.events.find({ _id: { $in: ids.map((k) => new ObjectId(k)) } }).toArray();
      await syncBuckets(ids, read);
    } else if (n.kind === "links") {
      const links = await c.customerVisitors
        .find({ site_id: site, customer_id: { $in: n.keys } })
        .toArray();
      const keys = [site, listValue(n.keys)];
      const held = await w.runAndReadAll(
        "SELECT customer_id, vid FROM links WHERE site_id = $1 AND list_contains($2::VARCHAR[], customer_id)",
        keys,
      );
      // Re-applied for the whole window: only a change is written.
      if (
        sameRows(
          held.getRowsJS(),
          links.map((l) => [l.customer_id, visitorKey(l.visitor_id)]),
        )
      )
        return;
      await markDirty();
      await w.run(
        "DELETE FROM links WHERE site_id = $1 AND list_contains($2::VARCHAR[], customer_id)",
        keys,
      );
      await appendLinks(links);
    } else {
      const stitches = await c.stitches
        .find({
          site_id: site,
          $or: [{ visitor_id: { $in: n.keys } }, { persistent_id: { $in: n.keys } }],
        })
        .toArray();
      const keys = [site, listValue(n.keys.map(visitorKey))];
      const touching =
        "site_id = $1 AND (list_contains($2::BIGINT[], vid) OR list_contains($2::BIGINT[], pvid))";
      const held = await w.runAndReadAll(`SELECT vid, pvid FROM stitches WHERE ${touching}`, keys);
      const now = stitches.map((x) => [visitorKey(x.visitor_id), visitorKey(x.persistent_id)]);
      if (sameRows(held.getRowsJS(), now)) return;
      await markDirty();
      await w.run(`DELETE FROM stitches WHERE ${touching}`, keys);
      await appendStitches(stitches);
    }
  };

  const appendLinks = async (links: Iterable<CustomerVisitorDoc>) => {
    const ap = await w.createAppender("links");
    try {
      for (const l of links) {
        ap.appendVarchar(l.site_id);
        ap.appendVarchar(l.customer_id);
        ap.appendBigInt(visitorKey(l.visitor_id));
        ap.endRow();
      }
    } finally {
      ap.closeSync();
    }
  };

  const appendStitches = async (stitches: Iterable<VisitorStitchDoc>) => {
    const ap = await w.createAppender("stitches");
    try {
      for (const x of stitches) {
        ap.appendVarchar(x.site_id);
        ap.appendBigInt(visitorKey(x.visitor_id));
        ap.appendBigInt(visitorKey(x.persistent_id));
        ap.endRow();
      }
    } finally {
      ap.closeSync();
    }
  };

  /** The marker field of each stream and how a page of it is applied. */
  const STREAMS: {
    stream: Stream;
    field: "u" | "at";
    find: (filter: Document) => Promise<Document[]>;
    apply: (docs: Document[]) => Promise<void>;
  }[] = [
    {
      stream: "buckets",
      field: "u",
      // Heads only: the events of a bucket are read when it changed (applyBucketHeads).
      find: (filter) =>
        c.events
          .find(filter, { projection: { _id: 1, u: 1, n: 1 } })
          .sort({ u: 1, _id: 1 })
          .limit(pageSize)
          .toArray(),
      apply: (docs) => applyBucketHeads(docs as EventBucketDoc[]),
    },
    {
      stream: "payments",
      field: "u",
      find: (filter) => c.payments.find(filter).sort({ u: 1, _id: 1 }).limit(pageSize).toArray(),
      apply: (docs) => replacePayments(docs as PaymentDoc[]),
    },
    {
      stream: "notices",
      field: "at",
      find: (filter) =>
        c.analyticsLog.find(filter).sort({ at: 1, _id: 1 }).limit(pageSize).toArray(),
      apply: async (docs) => {
        for (const n of docs as AnalyticsNoticeDoc[]) await applyNotice(n);
      },
    },
  ];

  /**
   * Fills an empty analytics store from the collections; the streams start
   * at `t0`. DuckDB commits it in steps (openRebuildStage): the first deletes
   * the streams' watermarks with the rows, the last sets them, so a crash
   * between them leaves a file the next start rebuilds again.
   */
  const rebuild = async (t0: number) => {
    await transaction(async () => {
      // A file with rows (one too old to resume) keeps their bytes until it is
      // rewritten: erased rows among them, so it is due for a rewrite.
      const before = await w.runAndReadAll(
        "SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM payments) + (SELECT count(*) FROM links) + (SELECT count(*) FROM stitches)",
      );
      if (Number(before.getRows()[0]?.[0]) > 0) await markDirty();
      await w.run(
        "DELETE FROM mongo_feed_state; DELETE FROM events; DELETE FROM payments; DELETE FROM links; DELETE FROM stitches; DELETE FROM mongo_buckets; DELETE FROM visitor_numbers",
      );
    });
    marks.clear();
    let n = 0;
    const stage = await openRebuildStage(
      w,
      options.rebuildStageRows,
      options.faults?.afterRebuildSlice,
    );
    // Its rows are flushed in whichever slice's transaction is open then: a
    // crash before the last step rebuilds them with the rest.
    const held = await w.createAppender("mongo_buckets");
    try {
      for await (const b of c.events.find({}).sort({ _id: 1 })) {
        const hosts = await hostsOf(b.site_id);
        held.appendVarchar((b._id as ObjectId).toHexString());
        held.appendBigInt(BigInt(b.u?.getTime() ?? 0));
        held.appendInteger(b.n);
        held.appendList(listValue(b.events.map((e) => BigInt(e.q))));
        held.endRow();
        for (const e of b.events) {
          appendEvent(stage.appender, eventRowOf(b.site_id, e), hosts);
          await stage.added();
        }
        n += b.events.length;
        if (n >= REBUILD_SLICE) {
          n = 0;
          await turn();
        }
      }
      held.closeSync();
      await stage.end();
    } catch (err) {
      try {
        held.closeSync();
      } catch {
        // Already closed.
      }
      await stage.abort();
      throw err;
    }
    // Each slice of visitors its own statement, committed in a scratch file (visits-maintenance.ts).
    await rebuildVisits(w, { scratch: scratchOf(analytics.path) });
    await transaction(async () => {
      const payments = await w.createAppender("payments");
      try {
        for await (const p of c.payments.find({}).sort({ _id: 1 })) {
          appendPayment(payments, paymentRowOf(p));
          if (++n % REBUILD_SLICE === 0) await turn();
        }
      } finally {
        payments.closeSync();
      }
      await appendLinks(await c.customerVisitors.find({}).toArray());
      await appendStitches(await c.stitches.find({}).toArray());
      for (const s of STREAMS) await setMark(s.stream, t0);
    });
    for (const s of STREAMS) marks.set(s.stream, t0);
  };

  /** Loads the watermarks, or rebuilds the store when it has none. */
  const load = async () => {
    await w.run(FEED_SCHEMA);
    const r = await w.runAndReadAll("SELECT stream, mark FROM mongo_feed_state");
    for (const [stream, mark] of r.getRowsJS() as [Stream, bigint][]) {
      marks.set(stream, Number(mark));
    }
    const due = await w.runAndReadAll("SELECT seq FROM feed_state WHERE id = 3");
    const since = due.getRowsJS()[0]?.[0];
    dirty = since === undefined ? undefined : Number(since);
    if (STREAMS.every((s) => marks.has(s.stream)) && !(await missedNotices())) return;
    // The server's time BEFORE the collections are read: what changes while
    // they are read has a later marker, and is read again by the streams.
    await rebuild(await source.serverTime());
  };

  /**
   * Applies one stream from its watermark minus the window, page by page;
   * returns the pages. With `until` (the server's time when the caller
   * looked) it stops after the page that reaches past it: under a steady
   * flow of writes a stream is never read to its end, and a drain that waits
   * for an empty page would hold every read that waits for it.
   */
  const drainStream = async (s: (typeof STREAMS)[number], maxPages: number, until?: number) => {
    const from = new Date((marks.get(s.stream) ?? 0) - settleMs);
    let after: { at: Date; id: ObjectId } | undefined;
    let pages = 0;
    while (pages < maxPages) {
      const filter: Document = after
        ? {
            $or: [
              { [s.field]: { $gt: after.at } },
              { [s.field]: after.at, _id: { $gt: after.id } },
            ],
          }
        : { [s.field]: { $gte: from } };
      const docs = await s.find(filter);
      if (docs.length === 0) break;
      const last = docs.at(-1) as Document;
      const at = last[s.field] as Date;
      const mark = Math.max(marks.get(s.stream) ?? 0, at.getTime());
      await transaction(async () => {
        visitorsChanged = new Map();
        await s.apply(docs);
        // The tables derived per visitor change in the page's transaction: the
        // visits of every visitor whose events it appended or deleted are
        // derived again whole (a page does not carry the events' earliest times).
        if (visitorsChanged.size > 0) {
          const touched: TouchedVisitor[] = [];
          for (const [siteId, vids] of visitorsChanged) {
            for (const vid of vids) touched.push({ siteId, vid, from: Number.MIN_SAFE_INTEGER });
          }
          await refreshVisits(w, touched);
          await options.onVisitorsChanged?.(w, visitorsChanged);
        }
        await setMark(s.stream, mark);
      });
      marks.set(s.stream, mark);
      pages++;
      if (docs.length < pageSize || (until !== undefined && at.getTime() > until)) break;
      after = { at, id: last._id as ObjectId };
    }
    return pages;
  };

  /**
   * Notices older than twice the window were applied for a whole window:
   * they go. How far is recorded first (`analytics_feed_state`), for a
   * server that takes the lease over with an older file of its own.
   */
  const trimNotices = async () => {
    const mark = marks.get("notices");
    if (mark === undefined || deferring) return;
    const before = new Date(mark - 2 * settleMs);
    try {
      await c.analyticsFeedState.updateOne(
        { _id: NOTICES_STATE },
        { $max: { trimmed_before: before } },
        { upsert: true },
      );
      await c.analyticsLog.deleteMany({ at: { $lt: before } });
    } catch {
      // Trimmed at a later poll.
    }
  };

  /**
   * Whether notices this file has not applied were trimmed (by the feed of
   * the server that owned the analytics store meanwhile, with a file of its
   * own): its re-read would start after them, so the file is rebuilt.
   */
  const missedNotices = async () => {
    const state = await c.analyticsFeedState.findOne({ _id: NOTICES_STATE });
    const from = (marks.get("notices") ?? 0) - settleMs;
    return state !== null && from < state.trimmed_before.getTime();
  };

  /** The watermarks and the dirty time of the open file, loaded once (again after a swap). */
  const loaded = () =>
    (ready ??= load().catch((err) => {
      ready = undefined;
      throw err;
    }));

  const drain = async (maxPages: number, until?: number): Promise<number> => {
    await loaded();
    for (const s of STREAMS) await drainStream(s, maxPages, until);
    await trimNotices();
    return marks.get("buckets") ?? 0;
  };

  /** Runs `work` between two drains: one at a time. */
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const prev = running ?? Promise.resolve(0);
    const next = prev.catch(() => 0).then(work);
    running = next.then(
      () => marks.get("buckets") ?? 0,
      () => marks.get("buckets") ?? 0,
    );
    return next;
  };

  // One drain at a time: a poll that finds one running waits for it, then runs.
  const runOnce = (maxPages = Number.POSITIVE_INFINITY): Promise<number> =>
    serial(() => drain(maxPages));

  /** One drain, in its turn, of what MongoDB made visible before the call (and no further). */
  const drainToNow = async (): Promise<number> => {
    const until = await source.serverTime();
    return serial(() => drain(Number.POSITIVE_INFINITY, until));
  };

  /**
   * The rewrite while running, as the SQLite feed does it
   * (src/store/duckdb/analytics-feed.ts): the copy is written beside the
   * drains, which keep the notices in MongoDB meanwhile; the swap runs
   * between two drains, and the new file re-reads from its own watermarks
   * (the copy's, minus the window) before queries resume. Every stream
   * re-read converges (a bucket's events by number, a payment or a key by
   * its current document), so the replay is the crash recovery's own path.
   */
  const rewriteWhileFeeding = async () => {
    const due = await serial(async () => {
      await loaded();
      if (dirty === undefined) return false;
      deferring = true;
      return true;
    });
    if (!due) return undefined;
    try {
      return await analytics.rewrite({
        ...compactedCopy,
        onCopied: () => options.faults?.afterCopy?.(),
        exclusive: (swap) => serial(swap),
        onSwapped: async () => {
          w = analytics.writer;
          marks.clear();
          dirty = undefined;
          ready = undefined;
          deferring = false;
          await drain(Number.POSITIVE_INFINITY, await source.serverTime());
        },
      });
    } finally {
      deferring = false;
    }
  };

  const tick = () => {
    timer = undefined;
    if (stopped) return;
    drainToNow()
      .catch((err) => options.onError?.(err))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, options.intervalMs);
      });
  };

  return {
    runOnce,
    // What MongoDB made visible before the call is read by the next drain, up to then.
    async catchUp() {
      await drainToNow();
    },
    watermark: () => marks.get("buckets") ?? 0,
    removedRows: () => dirty !== undefined,
    dirtySince: () => dirty,
    compact() {
      compacting ??= rewriteWhileFeeding().finally(() => {
        compacting = undefined;
      });
      return compacting;
    },
    removals: () => removals,
    backup: () =>
      Promise.reject(
        new Error(
          "a MongoDB deployment's analytics file is not part of admin store backup: it is rebuilt from the collections (docs/mongodb.md)",
        ),
      ),
    start() {
      if (timer || stopped) return;
      timer = setTimeout(tick, 0);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      // A rewrite in progress ends (its swap replays) before the source closes.
      await compacting?.catch(() => {});
      await running?.catch(() => {});
      await source.close();
    },
  };
}
