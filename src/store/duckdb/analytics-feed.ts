/**
 * The feed: SQLite → the DuckDB analytics store. SQLite stays the
 * acknowledgement store (an event is durable in its synced transaction
 * before the 204); triggers of migration 15 record every change of a
 * payment, a customer's links or a visitor's stitch in `analytics_feed`, in
 * the writer's own transaction. Events need no log entry (migration 23): the
 * outbox's AUTOINCREMENT ids already order them, so a batch reads the events
 * after the highest id moved. One mover per data directory replays the log
 * in order and appends the events, in bulk, and records the last applied
 * sequence number and the highest event id moved in the SAME DuckDB
 * transaction as the rows: after a `kill -9` at any moment, the next start
 * resumes after the last committed batch, so every acknowledged event
 * reaches the engine exactly once. The replay re-reads each record's current
 * row by key and replaces it (or deletes it when gone): applying an entry
 * twice, or after later changes, converges to SQLite's state. Only after DuckDB's commit are the log's head
 * and the events it moved deleted from SQLite (migration 19: SQLite's events
 * table is an outbox), by id up to the highest one DuckDB committed, which
 * the same DuckDB transaction records: a crash before or during that delete
 * leaves rows the next start deletes, never one DuckDB lacks. Erasure and
 * retention log what DuckDB must delete (kinds 5–7), in their own
 * transaction.
 *
 * A new DuckDB file is filled from SQLite's tables (payments, links,
 * stitches, and the events not yet moved), under one SQLite read snapshot
 * whose log position becomes the watermark. Moved events live only in the
 * DuckDB file: it is backed up with SQLite's (src/store/sqlite/backup.ts).
 */

import { statSync } from "node:fs";
import { type DuckDBAppender, listValue } from "@duckdb/node-api";
import Database from "better-sqlite3";
import { copyDataDirectory, type DataBackupReport } from "./analytics-backup.js";
import { appendEvent, appendPayment, type EventRow, type PaymentRow } from "./analytics-rows.js";
import {
  type AnalyticsStore,
  type RewriteOptions,
  type RewriteReport,
  visitorKey,
} from "./analytics-store.js";
import { inTransaction, markDueForRewrite } from "./file-upgrades.js";
import {
  forgetSiteVisitorNumbers,
  forgetVisitorNumbers,
  moveStagedEvents,
  openEventStage,
  openRebuildStage,
} from "./visitor-numbers.js";
import {
  rebuildVisits,
  refreshVisits,
  scratchOf,
  TouchedVisitors,
  touchedByDeletion,
} from "./visits-maintenance.js";

/** The feed as the wiring and the tests see it. */
/** Rows a rebuild appends between two turns of the event loop. */
const REBUILD_SLICE = 5_000;

/** One turn of the event loop (I/O callbacks run before it resolves). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface AnalyticsFeed {
  /**
   * Applies what SQLite committed so far, in batches, until the log and
   * the outbox are drained (or `maxBatches` ran); resolves with the watermark.
   */
  runOnce(maxBatches?: number): Promise<number>;
  /** Resolves once every log entry and event committed before the call is applied (read-your-writes). */
  catchUp(): Promise<void>;
  /** The last log sequence number applied to DuckDB. */
  watermark(): number;
  /**
   * How many times events were removed from DuckDB (an erasure, a pruning, a
   * rebuild) since the feed started: a read-ahead of events taken before it
   * moved is dropped (event-reads.ts).
   */
  removals(): number;
  /**
   * Whether a batch deleted or replaced rows since the file was last
   * rewritten (an erasure, a pruning, a payment or link change): the file
   * then still holds their old bytes, and closing rewrites it
   * (closeCompacted, with `compactedCopy`).
   */
  removedRows(): boolean;
  /**
   * When (by the feed's clock) the first batch removed rows that the file
   * still holds the bytes of; undefined when none did since the last
   * rewrite. Kept in the file itself (feed_state row 3, in the batch's
   * transaction), so a crash does not forget it.
   */
  dirtySince(): number | undefined;
  /**
   * Rewrites the file while the server runs (AnalyticsStore.rewrite). The
   * feed goes on moving into the open file while the copy is written, but
   * keeps in SQLite what it moved meanwhile (outbox rows, log entries); at
   * the swap (between two batches, queries waiting) the new file, whose
   * watermark is the copy's, replays them from SQLite: the crash recovery's
   * own path. Nothing to do (undefined) when no rows were removed since the
   * last rewrite.
   */
  compact(): Promise<CompactReport | undefined>;
  /**
   * Copies the data directory (this analytics file, then SQLite) to `file`
   * and `file.analytics.duckdb` between two batches (analytics-backup.ts).
   */
  backup(file: string, busyTimeoutMs: number): Promise<DataBackupReport>;
  /** Starts the polling loop (every `intervalMs`). */
  start(): void;
  /** Stops the loop after the batch in progress; closes the SQLite connection. */
  stop(): Promise<void>;
}

export interface AnalyticsFeedOptions {
  /** The SQLite file of the store (the mover opens its own connection). */
  sqlitePath: string;
  analytics: AnalyticsStore;
  /** Time between two polls of the log (ANALYTICS_FEED_INTERVAL_MS). */
  intervalMs: number;
  /** Log entries, and outbox events, per DuckDB transaction. */
  batchMax?: number;
  /** A failed batch (rolled back; retried at the next poll). */
  onError?: (err: unknown) => void;
  /**
   * Told how long each step that holds SQLite's write lock took: a slice of
   * the outbox's delete, a step giving free pages back (the bench's figures).
   */
  onLockStep?(kind: "delete" | "reclaim", ms: number): void;
  /** Free pages SQLite keeps for the next events (SQLITE_FREE_PAGES_KEPT; FREE_PAGES_KEPT). */
  freePagesKept?: number;
  /** Events a rebuild commits at a time (REBUILD_STAGE_ROWS; tests make it small). */
  rebuildStageRows?: number;
  /**
   * Tests stand for a crash at the edges of a batch: a throw before
   * DuckDB's commit (it rolls back), after it before SQLite's moved events
   * and log are deleted, between two slices of that delete, or between two
   * steps that give the freed pages back, or after a rebuild's slice of
   * events was committed.
   */
  faults?: {
    beforeCommit?(): void;
    afterCommit?(): void;
    duringDelete?(): void;
    duringReclaim?(): void;
    afterRebuildSlice?(): void;
    /** The rewrite's copy is written, before the swap (may hold it, or throw: a crash before the swap). */
    afterCopy?(): void | Promise<void>;
    /** The new file is open, before the replay of what moved during the copy (a throw: a crash there). */
    afterSwap?(): void;
  };
  /** The clock `dirtySince` is read from (default: the system's). */
  now?: () => number;
}

/** What a rewrite while running did (AnalyticsFeed.compact). */
export interface CompactReport extends RewriteReport {
  /**
   * SQLite's WAL was checkpointed into its file and truncated after the
   * rewrite: the pages an erasure zeroed (secure_delete) replace the old
   * ones in the file, and the WAL's older frames are gone. False when
   * SQLite stayed busy; its next checkpoint does it.
   */
  sqliteWalTruncated?: boolean;
}

/**
 * What a rewrite of the file runs on its copy: the copy holds none of the
 * removed rows' bytes, so it is not dirty (feed_state row 3 goes).
 */
export const compactedCopy: RewriteOptions = {
  onCopy: ["DELETE FROM compacted.feed_state WHERE id = 3"],
};

interface LogRow {
  seq: number;
  kind: number;
  ref: number | null;
  site_id: string | null;
  key: string | null;
}

const EVENT_COLUMNS =
  "id, site_id, name, url, referrer, title, width, language, props, ts, received_at, visitor_id, user_id, country, browser, os, device, referrer_host, utm_source, utm_medium, utm_campaign, utm_term, utm_content, click_ids";
const PAYMENT_COLUMNS =
  "site_id, payment_id, customer_id, currency, amount_minor, kind, status, paid_at, channel, attribution";

/**
 * The log's kinds (migrations 15 and 19). 0 is no longer written (migration
 * 23 dropped its trigger and its entries: events are read from the outbox by
 * id); 4 is only found in a log written before migration 19 dropped its
 * trigger; 5–7 are written by erasure and retention in their own
 * transaction, since the mover's deletes of what it moved are no change for
 * DuckDB.
 */
const LOG_KIND = {
  event: 0,
  payment: 1,
  links: 2,
  stitch: 3,
  eventDeleted: 4,
  /** A visitor's events erased (site_id, key = visitor id). */
  eraseVisitor: 5,
  /** A user's `$identify` events erased (site_id, key = user id). */
  eraseIdentify: 6,
  /** A site's events before a time pruned (site_id, ref = Unix ms). */
  pruneBefore: 7,
} as const;

/**
 * The log entries that change no event or visit in DuckDB: a payment, a
 * customer's links, a stitch (their own tables only), and an entry of a log
 * written before migration 23 (skipped).
 */
const CHANGES_NO_EVENT = new Set<number>([
  LOG_KIND.event,
  LOG_KIND.payment,
  LOG_KIND.links,
  LOG_KIND.stitch,
]);

/** Rows of the outbox one delete takes: the write lock is held that long at most. */
const DELETE_SLICE = 1_000;

/**
 * Free pages SQLite keeps for the next events by default
 * (SQLITE_FREE_PAGES_KEPT; 1 MiB of 4 KiB pages, what a few polls of a busy
 * outbox free) rather than give back: in a steady flow the outbox's inserts
 * reuse what the last moves freed, and few pages are moved.
 */
const FREE_PAGES_KEPT = 256;

/**
 * Pages one `incremental_vacuum` step gives back at most: each step is its
 * own transaction holding SQLite's write lock (a few ms, docs/performance.md),
 * and ingestion's commits run between two steps.
 */
const RECLAIM_STEP_PAGES = 512;

/** The WAL file's size past which an idle feed checkpoints and truncates it. */
const IDLE_WAL_BYTES = 1024 * 1024;

/** How long the idle checkpoint waits for the other connections' readers and writer. */
const CHECKPOINT_WAIT_MS = 20;

/** Whether SQLite answered busy (another connection holds the write lock). */
const isBusy = (err: unknown) =>
  err instanceof Error && "code" in err && String(err.code).startsWith("SQLITE_BUSY");

/** Creates the mover of one data directory. */
export function createAnalyticsFeed(options: AnalyticsFeedOptions): AnalyticsFeed {
  const { analytics } = options;
  const batchMax = options.batchMax ?? 5_000;
  const db = new Database(options.sqlitePath);
  db.pragma("busy_timeout = 200");
  // The moved events' bytes are zeroed in the file as the store's own deletes are
  // (open-sqlite.ts): an erasure later finds nothing of them left in SQLite.
  db.pragma("secure_delete = ON");
  // Its commits (the deletes of what DuckDB already holds, the log's trims, the
  // free-page steps) need no sync of their own: a power cut that loses one leaves
  // rows and pages the next run deletes and gives back again (by id, idempotent),
  // and the next synced commit of ingestion syncs the WAL they are in. Each of
  // the thousand slices of a million moved events would otherwise wait for an fsync.
  db.pragma("synchronous = NORMAL");
  const s = {
    log: db.prepare(
      "SELECT seq, kind, ref, site_id, key FROM analytics_feed WHERE seq > ? ORDER BY seq LIMIT ?",
    ),
    trim: db.prepare("DELETE FROM analytics_feed WHERE seq <= ?"),
    // The outbox's oldest moved rows, a slice at a time (rowid order, on the primary key).
    deleteMoved: db.prepare(
      `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id <= ? ORDER BY id LIMIT ${DELETE_SLICE})`,
    ),
    lastSeq: db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'analytics_feed'"),
    freePages: db.prepare("PRAGMA freelist_count").pluck(),
    // The outbox's events not yet moved, oldest first (a range of the primary key).
    eventsAfter: db.prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE id > ? ORDER BY id LIMIT ?`),
    // The highest event id ever given (AUTOINCREMENT), and the outbox's newest.
    lastEventId: db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'events'"),
    outboxTop: db.prepare("SELECT max(id) AS id FROM events"),
    allEvents: db.prepare(`SELECT ${EVENT_COLUMNS} FROM events ORDER BY id`),
    hostnames: db.prepare("SELECT hostnames FROM sites WHERE id = ?"),
    payment: db.prepare(
      `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE site_id = ? AND payment_id = ?`,
    ),
    allPayments: db.prepare(`SELECT ${PAYMENT_COLUMNS} FROM payments`),
    links: db.prepare(
      "SELECT visitor_id FROM customer_visitors WHERE site_id = ? AND customer_id = ?",
    ),
    allLinks: db.prepare("SELECT site_id, customer_id, visitor_id FROM customer_visitors"),
    stitch: db.prepare(
      "SELECT persistent_id FROM visitor_stitches WHERE site_id = ? AND visitor_id = ?",
    ),
    allStitches: db.prepare("SELECT site_id, visitor_id, persistent_id FROM visitor_stitches"),
    backupsAsked: db.prepare(
      "SELECT id, path FROM store_backups WHERE done_at IS NULL ORDER BY id",
    ),
    backupDone: db.prepare(
      "UPDATE store_backups SET done_at = ?, report = ?, error = ? WHERE id = ?",
    ),
  };
  const siteHosts = new Map<string, string[]>();
  const hostsOf = (siteId: string): string[] => {
    let hosts = siteHosts.get(siteId);
    if (!hosts) {
      const row = s.hostnames.get(siteId) as { hostnames: string } | undefined;
      hosts = row ? (JSON.parse(row.hostnames) as string[]) : [];
      siteHosts.set(siteId, hosts);
    }
    return hosts;
  };

  let mark: number | undefined;
  /** The highest event id DuckDB holds (feed_state row 2): the outbox's rows up to it can go. */
  let moved = 0;
  /** `moved` as of DuckDB's last commit (`moved` grows while a batch appends): what reads may rely on. */
  let committed = 0;
  let running: Promise<number> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  /** feed_state row 3: when rows were first removed since the last rewrite. */
  let dirty: number | undefined;
  let removals = 0;
  /**
   * Set while a rewrite copies the file: what the feed moves meanwhile stays
   * in SQLite (outbox rows, log entries), for the new file to replay.
   */
  let deferring = false;
  /** The rewrite in progress (AnalyticsFeed.compact). */
  let compacting: Promise<CompactReport | undefined> | undefined;
  const now = options.now ?? Date.now;
  // The writer of the file open now: a rewrite (between two batches) opens a new one.
  let w = analytics.writer;

  /** Appends one event (analytics-rows.ts), noting the highest id moved; returns its visitor key. */
  const append = (ap: DuckDBAppender, r: EventRow): bigint => {
    const vid = appendEvent(ap, r, hostsOf(r.site_id));
    if (r.id > moved) moved = r.id;
    return vid;
  };

  /** Replaces the payments of `keys` (one site each) by their current rows, in bulk. */
  const replacePayments = async (keys: { site: string; key: string }[]) => {
    const bySite = new Map<string, string[]>();
    for (const k of keys) bySite.set(k.site, [...(bySite.get(k.site) ?? []), k.key]);
    for (const [site, ids] of bySite) {
      await w.run(
        "DELETE FROM payments WHERE site_id = $1 AND list_contains($2::VARCHAR[], payment_id)",
        [site, listValue(ids)],
      );
    }
    const ap = await w.createAppender("payments");
    try {
      for (const k of keys) {
        const p = s.payment.get(k.site, k.key) as PaymentRow | undefined;
        if (p) appendPayment(ap, p);
      }
    } finally {
      ap.closeSync();
    }
  };

  const setWatermark = (seq: number) =>
    w.run(
      "INSERT INTO feed_state VALUES (1, $1), (2, $2) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq",
      [BigInt(seq), BigInt(moved)],
    );

  /**
   * Deletes from SQLite the events DuckDB committed (ids up to `moved`), a
   * slice per transaction, and the log entries it applied. Idempotent: a
   * crash before or during it leaves rows the next run deletes (by id, which
   * AUTOINCREMENT never gives again). Busy: left for the next batch.
   */
  const deleteMoved = async (last: number) => {
    // The copy being written has an older watermark: its replay needs them.
    if (deferring) return;
    try {
      for (;;) {
        const started = performance.now();
        const deleted = s.deleteMoved.run(moved).changes;
        options.onLockStep?.("delete", performance.now() - started);
        if (deleted < DELETE_SLICE) break;
        options.faults?.duringDelete?.();
        // Ingestion's commits get the write lock between two slices.
        await turn();
      }
      s.trim.run(last);
      await reclaimFreePages();
    } catch (err) {
      if (!isBusy(err)) throw err;
    }
  };

  // A file still without incremental auto-vacuum (open-sqlite.ts switches it at
  // the store's open) cannot give pages back: its steps would free nothing.
  const reclaims = db.pragma("auto_vacuum", { simple: true }) === 2;
  const kept = options.freePagesKept ?? FREE_PAGES_KEPT;

  /**
   * Gives SQLite's free pages past `kept` back to the file system, in steps of
   * RECLAIM_STEP_PAGES (`PRAGMA incremental_vacuum`, its own short
   * transaction each), with a turn of the event loop between two steps. What
   * the outbox's deletes, the log's trims, an erasure or a pruning freed
   * otherwise stays in the file for ever: SQLite reuses free pages but never
   * shrinks a file by itself. The file is cut when the WAL is checkpointed.
   */
  const reclaimFreePages = async () => {
    if (!reclaims) return;
    let free = s.freePages.get() as number;
    while (free > kept && !stopped) {
      const started = performance.now();
      db.pragma(`incremental_vacuum(${Math.min(RECLAIM_STEP_PAGES, free - kept)})`);
      options.onLockStep?.("reclaim", performance.now() - started);
      const left = s.freePages.get() as number;
      if (left >= free) return;
      free = left;
      options.faults?.duringReclaim?.();
      await turn();
    }
  };

  /**
   * When a poll found nothing to apply: a WAL file grown past IDLE_WAL_BYTES
   * (a backlog moved, pages given back) is checkpointed and truncated. PASSIVE
   * first, which waits for nobody; TRUNCATE then has nothing left to copy and
   * waits at most CHECKPOINT_WAIT_MS for other connections, so ingestion is
   * never held up for long. A checkpoint that cannot finish is left to the
   * next idle poll (and SQLite's own checkpoints).
   */
  const walPath = `${options.sqlitePath}-wal`;
  const checkpointWhenIdle = () => {
    const size = (() => {
      try {
        return statSync(walPath).size;
      } catch {
        return 0;
      }
    })();
    if (size <= IDLE_WAL_BYTES) return;
    const busy = db.pragma("busy_timeout", { simple: true }) as number;
    try {
      db.pragma("wal_checkpoint(PASSIVE)");
      db.pragma(`busy_timeout = ${CHECKPOINT_WAIT_MS}`);
      db.pragma("wal_checkpoint(TRUNCATE)");
    } catch (err) {
      if (!isBusy(err)) throw err;
    } finally {
      db.pragma(`busy_timeout = ${busy}`);
    }
  };

  /** The DuckDB file's watermark; rebuilds it from SQLite when it has none. */
  const loadWatermark = async (): Promise<number> => {
    const r = await w.runAndReadAll("SELECT id, seq FROM feed_state ORDER BY id");
    const state = new Map(r.getRows().map(([id, seq]) => [Number(id), Number(seq)]));
    const seq = state.get(1);
    const last = (s.lastSeq.get() as { seq: number } | undefined)?.seq ?? 0;
    const lastEvent = (s.lastEventId.get() as { seq: number } | undefined)?.seq ?? 0;
    // A file from before migration 19 has no row 2: its events came in id
    // order, so its highest one is the highest moved.
    const fileMoved =
      state.get(2) ??
      Number(
        (await w.runAndReadAll("SELECT coalesce(max(seq), 0) FROM events")).getRows()[0]?.[0] ?? 0,
      );
    // Past SQLite's own log or ids: the file was derived from another database
    // (a restored backup, a copied directory), so it is rebuilt.
    if (seq !== undefined && seq <= last && fileMoved <= lastEvent) {
      moved = fileMoved;
      committed = moved;
      dirty = state.get(3);
      // What a crash left between DuckDB's commit and SQLite's delete.
      await deleteMoved(seq);
      return seq;
    }
    const rebuilt = await rebuild();
    await deleteMoved(rebuilt);
    return rebuilt;
  };

  /**
   * Fills an empty analytics store from SQLite's tables, under one read
   * snapshot. DuckDB commits it in steps (openRebuildStage): the first
   * deletes the watermark with the rows, the last sets it, so a crash
   * between them leaves a file the next start rebuilds again.
   */
  const rebuild = async (): Promise<number> => {
    db.exec("BEGIN");
    try {
      const seq = (s.lastSeq.get() as { seq: number } | undefined)?.seq ?? 0;
      await inTransaction(w, () =>
        w.run(
          "DELETE FROM feed_state WHERE id IN (1, 2); DELETE FROM events; DELETE FROM payments; DELETE FROM links; DELETE FROM stitches; DELETE FROM visitor_numbers",
        ),
      );
      moved = 0;
      const stage = await openRebuildStage(
        w,
        options.rebuildStageRows,
        options.faults?.afterRebuildSlice,
      );
      try {
        let n = 0;
        for (const r of s.allEvents.iterate() as IterableIterator<EventRow>) {
          append(stage.appender, r);
          await stage.added();
          // A rebuild of millions of rows runs at start, beside ingestion: the
          // event loop gets a turn every few thousand rows (probes, requests).
          if (++n % REBUILD_SLICE === 0) await turn();
        }
        await stage.end();
      } catch (err) {
        await stage.abort();
        throw err;
      }
      // Each slice of visitors its own statement, committed in a scratch file (visits-maintenance.ts).
      await rebuildVisits(w, { scratch: scratchOf(analytics.path) });
      await inTransaction(w, async () => {
        const payments = await w.createAppender("payments");
        let n = 0;
        for (const p of s.allPayments.iterate() as IterableIterator<PaymentRow>) {
          appendPayment(payments, p);
          if (++n % REBUILD_SLICE === 0) await turn();
        }
        payments.closeSync();
        const links = await w.createAppender("links");
        for (const l of s.allLinks.iterate() as IterableIterator<{
          site_id: string;
          customer_id: string;
          visitor_id: string;
        }>) {
          links.appendVarchar(l.site_id);
          links.appendVarchar(l.customer_id);
          links.appendBigInt(visitorKey(l.visitor_id));
          links.endRow();
        }
        links.closeSync();
        const stitches = await w.createAppender("stitches");
        for (const x of s.allStitches.iterate() as IterableIterator<{
          site_id: string;
          visitor_id: string;
          persistent_id: string;
        }>) {
          stitches.appendVarchar(x.site_id);
          stitches.appendBigInt(visitorKey(x.visitor_id));
          stitches.appendBigInt(visitorKey(x.persistent_id));
          stitches.endRow();
        }
        stitches.closeSync();
        await setWatermark(seq);
      });
      committed = moved;
      // Counted once committed, as a batch's removals are: a read that began before is older.
      removals += 1;
      return seq;
    } finally {
      db.exec("COMMIT");
    }
  };

  /**
   * Applies one batch: the log's next entries, then the outbox's next events;
   * undefined when both were empty, else the log's new position. Both are
   * read in one SQLite read transaction, and the events only once the log
   * was read to its end there: an erasure or a pruning logged before an
   * event was committed is applied before that event is appended (it stays),
   * and one logged after it finds it in DuckDB (it goes), as in SQLite.
   */
  const applyBatch = async (from: number): Promise<number | undefined> => {
    let rows: LogRow[];
    let events: EventRow[];
    db.exec("BEGIN");
    try {
      rows = s.log.all(from, batchMax) as LogRow[];
      events = rows.length < batchMax ? (s.eventsAfter.all(moved, batchMax) as EventRow[]) : [];
    } finally {
      db.exec("COMMIT");
    }
    if (rows.length === 0 && events.length === 0) return undefined;
    const last = rows.at(-1)?.seq ?? from;
    const movedBefore = moved;
    let dirtyNow: number | undefined;
    // A batch of events changes its sites' events and visits from a time on,
    // which it says (the sites' earliest time its visits reach, below): queries
    // over earlier times keep their answers (read-memo.ts), and breakdowns of
    // events grow (grown-breakdowns.ts). So does one whose log entries are
    // payments, customers' links or stitches, which change no event or visit
    // (the revenue statements that read them are computed again after any
    // write). A deletion, an erasure or a pruning may change anything.
    const scope = rows.every((r) => CHANGES_NO_EVENT.has(r.kind))
      ? { sites: new Map<string, number>() }
      : undefined;
    // Counted once DuckDB committed the removal: a read that began before
    // (and saw the removed rows) is then known to be older than it.
    let removed = false;
    const write = async () => {
      await w.run("BEGIN TRANSACTION");
      let ap: DuckDBAppender | undefined;
      // The visitors whose visits the batch changes: appended or deleted events.
      const touched = new TouchedVisitors();
      try {
        let i = 0;
        while (i < rows.length) {
          const kind = (rows[i] as LogRow).kind;
          let j = i;
          while (j < rows.length && (rows[j] as LogRow).kind === kind) j++;
          const run = rows.slice(i, j);
          i = j;
          // An entry of a log written before migration 23: its event is in the outbox still, or moved.
          if (kind === LOG_KIND.event) continue;
          // Anything but an append leaves old rows' bytes in the file until it is
          // rewritten: noted in the same transaction, so a crash does not forget it.
          if (dirty === undefined) {
            dirtyNow ??= now();
            await markDueForRewrite(w, dirtyNow);
          }
          if (kind === LOG_KIND.eventDeleted || kind >= LOG_KIND.eraseVisitor) removed = true;
          if (kind === LOG_KIND.eventDeleted) {
            const ids = run.map((r) => r.ref as number);
            await touchedByDeletion(w, ids, touched);
            for (let k = 0; k < ids.length; k += 1000) {
              await w.run(`DELETE FROM events WHERE seq IN (${ids.slice(k, k + 1000).join(",")})`);
            }
          } else if (kind >= LOG_KIND.eraseVisitor) {
            for (const r of run) await applyRemoval(r, touched);
          } else {
            const keys = new Map<string, { site: string; key: string }>();
            for (const r of run) {
              keys.set(`${r.site_id}\u0000${r.key}`, { site: r.site_id ?? "", key: r.key ?? "" });
            }
            if (kind === LOG_KIND.payment) await replacePayments([...keys.values()]);
            else for (const { site, key } of keys.values()) await applyChange(kind, site, key);
          }
        }
        // So far only removals touched visitors: those left without events lose their numbers.
        await forgetVisitorNumbers(w, touched.values());
        if (events.length > 0) {
          ap = await openEventStage(w);
          for (const r of events) touched.add(r.site_id, append(ap, r), r.ts);
          ap.closeSync();
          ap = undefined;
          await moveStagedEvents(w);
        }
        // The visits change in the same transaction as the events that make them.
        await refreshVisits(w, touched.values(), movedBefore, scope?.sites);
        await setWatermark(last);
        options.faults?.beforeCommit?.();
        await w.run("COMMIT");
        committed = moved;
      } catch (err) {
        try {
          ap?.closeSync();
        } catch {
          // The rollback below discards what it held.
        }
        await w.run("ROLLBACK").catch(() => {});
        // Not in DuckDB after all: none of the batch's events may leave SQLite.
        moved = movedBefore;
        throw err;
      }
    };
    if (scope) await analytics.scopedWrite(scope, write);
    else await write();
    if (removed) removals += 1;
    if (dirtyNow !== undefined) dirty ??= dirtyNow;
    // After DuckDB's commit: what it holds can leave SQLite, the moved events
    // and the log (a crash before this line leaves rows the next start deletes
    // and entries the watermark already skips).
    options.faults?.afterCommit?.();
    await deleteMoved(last);
    return last;
  };

  /**
   * Applies an erasure's or a pruning's entry: the same rows go from DuckDB,
   * and the visits they made are re-derived from what remains (`touched`).
   */
  const applyRemoval = async (r: LogRow, touched: TouchedVisitors) => {
    const site = r.site_id ?? "";
    let where: string;
    let params: (string | bigint)[];
    if (r.kind === LOG_KIND.eraseVisitor) {
      const key = r.key ?? "";
      where = "site_id = $1 AND vid = $2 AND visitor_id = $3";
      params = [site, visitorKey(key), key];
    } else if (r.kind === LOG_KIND.eraseIdentify) {
      where = "site_id = $1 AND user_id = $2 AND name = '$identify'";
      params = [site, r.key ?? ""];
    } else if (r.kind === LOG_KIND.pruneBefore) {
      const before = BigInt(r.ref ?? 0);
      // Whole visits before the cut go at once; only a visit that spans it is
      // re-derived (from what stays), so a pruning touches few visitors.
      await w.run("DELETE FROM visits WHERE site_id = $1 AND v_end < $2", [site, before]);
      await touchedWhere("visits", "site_id = $1 AND v_start < $2", [site, before], touched);
      await w.run("DELETE FROM events WHERE site_id = $1 AND ts < $2", [site, before]);
      await forgetSiteVisitorNumbers(w, site);
      return;
    } else {
      return;
    }
    await touchedWhere("events", where, params, touched);
    await w.run(`DELETE FROM events WHERE ${where}`, params);
  };

  /** Adds the visitors of the rows of `table` that `where` selects, each from its earliest time. */
  const touchedWhere = async (
    table: "events" | "visits",
    where: string,
    params: (string | bigint)[],
    into: TouchedVisitors,
  ) => {
    const time = table === "events" ? "ts" : "v_start";
    const r = await w.runAndReadAll(
      `SELECT site_id, vid, min(${time}) FROM ${table} WHERE ${where} GROUP BY ALL`,
      params,
    );
    for (const [site, vid, ts] of r.getRows()) into.add(String(site), vid as bigint, Number(ts));
  };

  const applyChange = async (kind: number, site: string, key: string) => {
    if (kind === LOG_KIND.links) {
      await w.run("DELETE FROM links WHERE site_id = $1 AND customer_id = $2", [site, key]);
      for (const l of s.links.all(site, key) as { visitor_id: string }[]) {
        await w.run("INSERT INTO links VALUES ($1, $2, $3)", [site, key, visitorKey(l.visitor_id)]);
      }
    } else if (kind === LOG_KIND.stitch) {
      const vid = visitorKey(key);
      await w.run("DELETE FROM stitches WHERE site_id = $1 AND vid = $2", [site, vid]);
      const x = s.stitch.get(site, key) as { persistent_id: string } | undefined;
      if (x) {
        await w.run("INSERT INTO stitches VALUES ($1, $2, $3)", [
          site,
          vid,
          visitorKey(x.persistent_id),
        ]);
      }
    }
  };

  /**
   * One batch (loading the watermark first when the file's is not known);
   * whether it found anything to apply. A first batch that finds nothing
   * checkpoints an idle WAL.
   */
  const step = async (first: boolean): Promise<boolean> => {
    if (mark === undefined) mark = await loadWatermark();
    const next = await applyBatch(mark);
    if (next === undefined) {
      if (first) checkpointWhenIdle();
      return false;
    }
    mark = next;
    return true;
  };

  /** What SQLite committed so far: the log's head and the outbox's newest event. */
  const committedInSqlite = () => ({
    head: (s.lastSeq.get() as { seq: number } | undefined)?.seq ?? 0,
    top: (s.outboxTop.get() as { id: number | null }).id ?? 0,
  });
  type Target = ReturnType<typeof committedInSqlite>;
  const reached = (t: Target) => mark !== undefined && mark >= t.head && committed >= t.top;

  /**
   * Applies batches until `target` (what SQLite had committed when the
   * caller looked) is in DuckDB, and no further: under a steady flow of
   * events the outbox is never empty, and a drain "until nothing is left"
   * would never end, holding every read that waits for it. With `serialized`
   * each batch takes its own turn (`serial`): reads' catch-ups, backups and
   * a rewrite's swap get in between two batches. Without it the caller
   * already holds the turn (the swap's replay). Resolves with whether a
   * batch found anything.
   */
  const applyUpTo = async (target: Target, serialized: boolean): Promise<boolean> => {
    let worked = false;
    // No idle checkpoint here (a read's path): the poll does it when it found nothing.
    while (!(serialized && stopped) && !reached(target)) {
      const before = [mark, committed];
      const found = serialized ? await turnStep(false) : await step(false);
      if (found) worked = true;
      // Nothing new (another caller's batch applied it meanwhile): the target is in.
      if (!found || (mark === before[0] && committed === before[1])) break;
    }
    return worked;
  };

  /** Runs `work` after the batch (or backup) in progress: one at a time. */
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const prev = running ?? Promise.resolve(0);
    const next = prev.catch(() => 0).then(work);
    running = next.then(
      () => mark ?? 0,
      () => mark ?? 0,
    );
    return next;
  };

  /** One batch in its turn (`serial`); none once the feed is stopped (its connection closes). */
  const turnStep = (first: boolean) => serial(async () => !stopped && step(first));

  /** Up to `maxBatches` batches, each its own turn; stops at the first that finds nothing. */
  const runOnce = async (maxBatches = Number.POSITIVE_INFINITY): Promise<number> => {
    for (let b = 0; b < maxBatches; b++) {
      if (!(await turnStep(b === 0))) break;
    }
    return mark ?? 0;
  };

  /**
   * Copies the data directory between two batches, and never while a
   * rewrite copies the file (it checkpoints the file the copy reads).
   */
  const backup = async (file: string, busyTimeoutMs: number): Promise<DataBackupReport> => {
    for (;;) {
      await compacting?.catch(() => {});
      const report = await serial(async () =>
        compacting
          ? undefined
          : copyDataDirectory(options.sqlitePath, analytics, file, busyTimeoutMs),
      );
      if (report) return report;
    }
  };

  /**
   * The rewrite while running: the copy is written beside the feed's
   * batches, which keep their SQLite rows meanwhile (`deferring`); the swap
   * runs between two batches, and the new file replays from its own
   * watermark (the copy's) what they moved: `loadWatermark` deletes from
   * SQLite what the copy holds, `applyUpTo` applies the rest, exactly as after a
   * crash. Queries wait for that replay (onSwapped runs before they resume),
   * so none sees the new file without an event the old one showed.
   */
  const rewriteWhileMoving = async (): Promise<CompactReport | undefined> => {
    const due = await serial(async () => {
      if (mark === undefined) mark = await loadWatermark();
      if (dirty === undefined) return false;
      // Set between two batches: every row deleted from SQLite so far is in the copy's snapshot.
      deferring = true;
      return true;
    });
    if (!due) return undefined;
    let report: RewriteReport;
    try {
      report = await analytics.rewrite({
        ...compactedCopy,
        onCopied: () => options.faults?.afterCopy?.(),
        exclusive: (swap) => serial(swap),
        onSwapped: async () => {
          // The open file's state is read again from it, from here on (also when
          // the replay fails: the next batch loads it).
          w = analytics.writer;
          mark = undefined;
          dirty = undefined;
          deferring = false;
          options.faults?.afterSwap?.();
          // What SQLite holds now, no further: a steady flow would keep the
          // queries waiting for ever; the ticks move the rest.
          await applyUpTo(committedInSqlite(), false);
        },
      });
    } finally {
      deferring = false;
    }
    return { ...report, sqliteWalTruncated: await truncateSqliteWal() };
  };

  /**
   * Checkpoints SQLite's WAL into its file and truncates it. Until then the
   * file can keep a page as it was before an erasure zeroed its rows (the
   * newer page is in the WAL), and the WAL older frames. It needs a moment
   * without a writer: tried for about two seconds, between ingestion's commits.
   */
  const truncateSqliteWal = async (): Promise<boolean> => {
    for (let attempt = 0; attempt < 40; attempt++) {
      try {
        const [r] = db.pragma("wal_checkpoint(TRUNCATE)") as { busy: number }[];
        if (r?.busy === 0) return true;
      } catch (err) {
        if (!isBusy(err)) throw err;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  };

  /** Answers the backups `admin store backup` asked of this process (analytics-backup.ts). */
  const serveBackups = async () => {
    // Not while a rewrite copies the file: the polls go on meanwhile, and a later one serves it.
    if (compacting) return;
    const asked = s.backupsAsked.all() as { id: number; path: string }[];
    for (const b of asked) {
      try {
        const report = await backup(b.path, 5_000);
        s.backupDone.run(Date.now(), JSON.stringify(report), null, b.id);
      } catch (err) {
        s.backupDone.run(Date.now(), null, err instanceof Error ? err.message : String(err), b.id);
      }
    }
  };

  /**
   * A poll: applies what SQLite committed before it (a backlog too, batch
   * after batch), serves the backups asked, and polls again after
   * `intervalMs`. Not at once when it found work: under a steady flow the
   * next batch is then a poll's worth of events, not the few that arrived
   * during this one, and each batch's fixed cost (its transactions, the
   * visits' statements, the outbox's delete) is paid that much less often
   * (row n of bench/new-visitors.mjs: 1.42× against 1.27× today's build).
   */
  const tick = () => {
    timer = undefined;
    if (stopped) return;
    applyUpTo(committedInSqlite(), true)
      .then(async (worked) => {
        // Nothing to apply: a grown WAL is checkpointed.
        if (!worked) await serial(async () => !stopped && checkpointWhenIdle());
      })
      .then(serveBackups)
      .catch((err) => options.onError?.(err))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, options.intervalMs);
      });
  };

  return {
    runOnce,
    backup,
    async catchUp() {
      await applyUpTo(committedInSqlite(), true);
    },
    watermark: () => mark ?? 0,
    removals: () => removals,
    removedRows: () => dirty !== undefined,
    dirtySince: () => dirty,
    compact() {
      compacting ??= rewriteWhileMoving().finally(() => {
        compacting = undefined;
      });
      return compacting;
    },
    start() {
      if (timer || stopped) return;
      timer = setTimeout(tick, 0);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      // A rewrite in progress ends (its swap replays) before the connection closes.
      await compacting?.catch(() => {});
      await running?.catch(() => {});
      if (db.open) db.close();
    },
  };
}
