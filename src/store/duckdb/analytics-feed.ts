/**
 * The feed: SQLite → the DuckDB analytics store. SQLite stays the
 * acknowledgement store (an event is durable in its synced transaction
 * before the 204); triggers of migration 15 record every insert of an event
 * and every change of a payment, a customer's links or a visitor's stitch in
 * `analytics_feed`, in the writer's own transaction. One mover per data
 * directory replays that log in order, in bulk, and records the last applied
 * sequence number in the SAME DuckDB transaction as the rows: after a
 * `kill -9` at any moment, the next start resumes after the last committed
 * batch, so every acknowledged event reaches the engine exactly once. The
 * replay re-reads each record's current row by key and replaces it (or
 * deletes it when gone): applying an entry twice, or after later changes,
 * converges to SQLite's state. Only after DuckDB's commit is the log's head
 * deleted from SQLite.
 *
 * A new or deleted DuckDB file is rebuilt from SQLite's tables, under one
 * SQLite read snapshot whose log position becomes the watermark.
 */

import { type DuckDBAppender, listValue } from "@duckdb/node-api";
import Database from "better-sqlite3";
import { externalReferrer, pageOf } from "../../domain/analytics/visits.js";
import { classifyTouch } from "../../domain/attribution/channels.js";
import { type AnalyticsStore, visitorKey } from "./analytics-store.js";

/** The feed as the wiring and the tests see it. */
/** Rows a rebuild appends between two turns of the event loop. */
const REBUILD_SLICE = 5_000;

/** One turn of the event loop (I/O callbacks run before it resolves). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface AnalyticsFeed {
  /**
   * Applies what SQLite committed so far, in batches, until the log is
   * drained (or `maxBatches` ran); resolves with the watermark.
   */
  runOnce(maxBatches?: number): Promise<number>;
  /** The last log sequence number applied to DuckDB. */
  watermark(): number;
  /** Resolves once every log entry committed before the call is applied (read-your-writes). */
  catchUp(): Promise<void>;
  /**
   * Whether a batch deleted or replaced rows since the feed started (an
   * erasure, a pruning, a payment or link change): the file then still holds
   * their old bytes, and closing rewrites it (closeCompacted).
   */
  removedRows(): boolean;
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
  /** Log entries per DuckDB transaction. */
  batchMax?: number;
  /** A failed batch (rolled back; retried at the next poll). */
  onError?: (err: unknown) => void;
  /**
   * Tests stand for a crash at the two edges of a batch: a throw before
   * DuckDB's commit (it rolls back), or after it, before SQLite's log is
   * trimmed.
   */
  faults?: { beforeCommit?(): void; afterCommit?(): void };
}

interface LogRow {
  seq: number;
  kind: number;
  ref: number | null;
  site_id: string | null;
  key: string | null;
}

interface EventRow {
  id: number;
  site_id: string;
  name: string;
  url: string;
  props: string | null;
  ts: number;
  visitor_id: string;
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

interface PaymentRow {
  site_id: string;
  payment_id: string;
  customer_id: string;
  currency: string;
  amount_minor: number;
  kind: string;
  status: string;
  paid_at: number;
  channel: string;
  attribution: string | null;
}

const EVENT_COLUMNS =
  "id, site_id, name, url, props, ts, visitor_id, country, browser, os, device, referrer_host, utm_source, utm_medium, utm_campaign, utm_term, utm_content, click_ids";
const PAYMENT_COLUMNS =
  "site_id, payment_id, customer_id, currency, amount_minor, kind, status, paid_at, channel, attribution";

const LOG_KIND = { event: 0, payment: 1, links: 2, stitch: 3, eventDeleted: 4 } as const;

/** Creates the mover of one data directory. */
export function createAnalyticsFeed(options: AnalyticsFeedOptions): AnalyticsFeed {
  const { analytics } = options;
  const batchMax = options.batchMax ?? 5_000;
  const db = new Database(options.sqlitePath);
  db.pragma("busy_timeout = 200");
  const s = {
    log: db.prepare(
      "SELECT seq, kind, ref, site_id, key FROM analytics_feed WHERE seq > ? ORDER BY seq LIMIT ?",
    ),
    trim: db.prepare("DELETE FROM analytics_feed WHERE seq <= ?"),
    lastSeq: db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'analytics_feed'"),
    eventsIn: db.prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE id >= ? AND id <= ?`),
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
  let running: Promise<number> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let rewritten = false;
  const w = analytics.writer;

  const appendEvent = (ap: DuckDBAppender, r: EventRow) => {
    const clickIds =
      r.click_ids === null ? undefined : (JSON.parse(r.click_ids) as Record<string, string>);
    const c = classifyTouch({
      url: r.url,
      referrerHost: r.referrer_host ?? undefined,
      utmSource: r.utm_source ?? undefined,
      utmMedium: r.utm_medium ?? undefined,
      utmCampaign: r.utm_campaign ?? undefined,
      ...(clickIds ? { clickIds } : {}),
      siteHostnames: hostsOf(r.site_id),
    });
    ap.appendBigInt(BigInt(r.id));
    ap.appendVarchar(r.site_id);
    ap.appendBigInt(BigInt(r.ts));
    ap.appendBigInt(visitorKey(r.visitor_id));
    ap.appendVarchar(r.name);
    ap.appendVarchar(pageOf(r.url));
    const text = (v: string | null | undefined) =>
      v === null || v === undefined ? ap.appendNull() : ap.appendVarchar(v);
    // The referrer host unless it is the site itself (the visit's touch reads it).
    text(
      externalReferrer(
        { url: r.url, referrerHost: r.referrer_host ?? undefined },
        hostsOf(r.site_id),
      ),
    );
    // An internal navigation (the site's own referrer, untagged) has no channel.
    text(c?.channel);
    text(c?.source);
    text(c?.medium);
    text(c?.campaign);
    text(r.utm_term?.trim() || undefined);
    text(r.utm_content?.trim() || undefined);
    text(r.country);
    text(r.device);
    text(r.browser);
    text(r.os);
    text(r.props);
    ap.endRow();
  };

  const appendPayment = (ap: DuckDBAppender, p: PaymentRow) => {
    const a =
      p.attribution === null
        ? undefined
        : (JSON.parse(p.attribution) as {
            source?: string;
            medium?: string;
            campaign?: string;
            landingPage?: string;
            visitorId?: string;
            touchedAt?: number;
          });
    const text = (v: string | undefined) =>
      v === undefined ? ap.appendNull() : ap.appendVarchar(v);
    const big = (v: number | bigint | undefined) =>
      v === undefined ? ap.appendNull() : ap.appendBigInt(BigInt(v));
    ap.appendVarchar(p.site_id);
    ap.appendVarchar(p.payment_id);
    ap.appendVarchar(p.customer_id);
    ap.appendVarchar(p.currency);
    big(p.amount_minor);
    ap.appendVarchar(p.kind);
    ap.appendVarchar(p.status);
    big(p.paid_at);
    ap.appendVarchar(p.channel);
    text(a?.source);
    text(a?.medium);
    text(a?.campaign);
    text(a?.landingPage);
    big(a?.visitorId === undefined ? undefined : visitorKey(a.visitorId));
    big(a?.touchedAt);
    ap.endRow();
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
      "INSERT INTO feed_state VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq",
      [BigInt(seq)],
    );

  /** The DuckDB file's watermark; rebuilds it from SQLite when it has none. */
  const loadWatermark = async (): Promise<number> => {
    const r = await w.runAndReadAll("SELECT seq FROM feed_state WHERE id = 1");
    const row = r.getRows()[0];
    const last = (s.lastSeq.get() as { seq: number } | undefined)?.seq ?? 0;
    // Past SQLite's own log: the file was derived from another database (a
    // restored backup, a copied directory), so it is rebuilt.
    if (row && Number(row[0]) <= last) return Number(row[0]);
    return rebuild();
  };

  /** Fills an empty analytics store from SQLite's tables, under one read snapshot. */
  const rebuild = async (): Promise<number> => {
    db.exec("BEGIN");
    try {
      const seq = (s.lastSeq.get() as { seq: number } | undefined)?.seq ?? 0;
      await w.run("BEGIN TRANSACTION");
      try {
        await w.run(
          "DELETE FROM events; DELETE FROM payments; DELETE FROM links; DELETE FROM stitches",
        );
        const ap = await w.createAppender("events");
        let n = 0;
        for (const r of s.allEvents.iterate() as IterableIterator<EventRow>) {
          appendEvent(ap, r);
          if (++n % 50_000 === 0) ap.flushSync();
          // A rebuild of millions of rows runs at start, beside ingestion: the
          // event loop gets a turn every few thousand rows (probes, requests).
          if (n % REBUILD_SLICE === 0) await turn();
        }
        ap.closeSync();
        const payments = await w.createAppender("payments");
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
        await w.run("COMMIT");
      } catch (err) {
        await w.run("ROLLBACK").catch(() => {});
        throw err;
      }
      return seq;
    } finally {
      db.exec("COMMIT");
    }
  };

  /** Applies one batch of the log; false when it was empty. */
  const applyBatch = async (from: number): Promise<number | undefined> => {
    const rows = s.log.all(from, batchMax) as LogRow[];
    if (rows.length === 0) return undefined;
    const last = (rows.at(-1) as LogRow).seq;
    await w.run("BEGIN TRANSACTION");
    let ap: DuckDBAppender | undefined;
    try {
      ap = await w.createAppender("events");
      let i = 0;
      while (i < rows.length) {
        const kind = (rows[i] as LogRow).kind;
        let j = i;
        while (j < rows.length && (rows[j] as LogRow).kind === kind) j++;
        const run = rows.slice(i, j);
        i = j;
        if (kind === LOG_KIND.event) {
          // Rowids of one run are near each other: one range read, kept by the set.
          const ids = new Set(run.map((r) => r.ref as number));
          let lo = Number.POSITIVE_INFINITY;
          let hi = 0;
          for (const id of ids) {
            lo = Math.min(lo, id);
            hi = Math.max(hi, id);
          }
          for (const r of s.eventsIn.iterate(lo, hi) as IterableIterator<EventRow>) {
            if (ids.has(r.id)) appendEvent(ap, r);
          }
          continue;
        }
        // Changes are applied after the events before them.
        ap.flushSync();
        // Anything but an append leaves old rows' bytes in the file until it is rewritten.
        rewritten = true;
        if (kind === LOG_KIND.eventDeleted) {
          const ids = run.map((r) => r.ref as number);
          for (let k = 0; k < ids.length; k += 1000) {
            await w.run(`DELETE FROM events WHERE seq IN (${ids.slice(k, k + 1000).join(",")})`);
          }
        } else {
          const keys = new Map<string, { site: string; key: string }>();
          for (const r of run) {
            keys.set(`${r.site_id}\u0000${r.key}`, { site: r.site_id ?? "", key: r.key ?? "" });
          }
          if (kind === LOG_KIND.payment) await replacePayments([...keys.values()]);
          else for (const { site, key } of keys.values()) await applyChange(kind, site, key);
        }
      }
      ap.closeSync();
      ap = undefined;
      await setWatermark(last);
      options.faults?.beforeCommit?.();
      await w.run("COMMIT");
    } catch (err) {
      try {
        ap?.closeSync();
      } catch {
        // The rollback below discards what it held.
      }
      await w.run("ROLLBACK").catch(() => {});
      throw err;
    }
    // After DuckDB's commit: what it holds can leave the log (a crash before
    // this line leaves entries the watermark already skips).
    options.faults?.afterCommit?.();
    try {
      s.trim.run(last);
    } catch {
      // Busy: trimmed at the next batch.
    }
    return last;
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

  const drain = async (maxBatches: number): Promise<number> => {
    if (mark === undefined) mark = await loadWatermark();
    for (let b = 0; b < maxBatches; b++) {
      const next = await applyBatch(mark);
      if (next === undefined) break;
      mark = next;
    }
    return mark;
  };

  const runOnce = (maxBatches = Number.POSITIVE_INFINITY): Promise<number> => {
    // One batch at a time: a poll that finds one running waits for it, then runs.
    const prev = running ?? Promise.resolve(0);
    const next = prev.catch(() => 0).then(() => drain(maxBatches));
    running = next;
    return next;
  };

  const tick = () => {
    timer = undefined;
    if (stopped) return;
    runOnce()
      .catch((err) => options.onError?.(err))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, options.intervalMs);
      });
  };

  return {
    runOnce,
    watermark: () => mark ?? 0,
    async catchUp() {
      // The log's head when the read began: what a caller wrote before it is at or below.
      const head = (s.lastSeq.get() as { seq: number } | undefined)?.seq ?? 0;
      while (mark === undefined || mark < head) {
        const before = mark;
        await runOnce(1);
        // Nothing applied (the log is drained below the head): nothing more to wait for.
        if (mark === before) break;
      }
    },
    removedRows: () => rewritten,
    start() {
      if (timer || stopped) return;
      timer = setTimeout(tick, 0);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await running?.catch(() => {});
      if (db.open) db.close();
    },
  };
}
