/**
 * An analytics engine over reference data (test/helpers/analytics-reference.ts):
 * the data written into a SQLite database of the service's schema, moved into
 * an in-memory DuckDB by the feed, as the service stores and moves it.
 */
import { join } from "node:path";
import { createDuckDbAnalytics } from "../../src/store/duckdb/analytics-engine.js";
import { createAnalyticsFeed } from "../../src/store/duckdb/analytics-feed.js";
import { openAnalyticsStore } from "../../src/store/duckdb/analytics-store.js";
import type { BitmapLimits } from "../../src/store/duckdb/read-memo.js";
import { openSqlite } from "../../src/store/sqlite/open-sqlite.js";
import type { RefData } from "./analytics-reference.js";

/**
 * Writes `data` into `dir` as the service stores it, then runs the feed;
 * returns the engine. `warm` asks the engine its questions once the first half
 * is in, before the rest arrives: the answers it keeps past the feed's batches
 * (read-memo.ts) must then be those of all the data.
 */
export async function engineOverData(
  dir: string,
  data: RefData,
  warm?: (
    engine: ReturnType<typeof createDuckDbAnalytics>,
    analytics: Awaited<ReturnType<typeof openAnalyticsStore>>,
  ) => Promise<unknown>,
  /** The visitor bitmaps' limits (the engine's option; its defaults when unset). */
  bitmaps?: BitmapLimits,
) {
  const sqlitePath = join(dir, "ingest.sqlite");
  const db = openSqlite(sqlitePath);
  db.pragma("foreign_keys = OFF");
  /** Stores events as ingestion does (the outbox the feed moves). */
  const storeEvents = (events: RefData["events"]) => {
    const event = db.prepare(
      `INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, user_id, country, browser, os, device,
           referrer_host, utm_source, utm_medium, utm_campaign, utm_term, utm_content, click_ids, props)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    for (const e of events) {
      event.run(
        e.siteId,
        e.name,
        e.url,
        e.ts,
        e.ts,
        e.visitorId,
        e.userId ?? null,
        e.country ?? null,
        e.browser ?? null,
        e.os ?? null,
        e.device ?? null,
        e.referrerHost ?? null,
        e.utmSource ?? null,
        e.utmMedium ?? null,
        e.utmCampaign ?? null,
        e.utmTerm ?? null,
        e.utmContent ?? null,
        e.clickIds && Object.keys(e.clickIds).length > 0 ? JSON.stringify(e.clickIds) : null,
        e.props === undefined ? null : JSON.stringify(e.props),
      );
    }
  };
  // Half the events are in the store when the analytics file is made (its
  // rebuild moves them), the rest arrive after and move in small batches:
  // both ways of numbering visitors (visitor-numbers.ts) answer the same.
  const half = Math.ceil(data.events.length / 2);
  db.transaction(() => {
    for (const s of data.sites) {
      db.prepare(
        "INSERT INTO sites (id, account_id, hostnames, created_at) VALUES (?, 'a', ?, 0)",
      ).run(s.id, JSON.stringify(s.hostnames));
    }
    storeEvents(data.events.slice(0, half));
    const link = db.prepare(
      "INSERT OR IGNORE INTO customer_visitors (site_id, customer_id, visitor_id, via, linked_at) VALUES (?, ?, ?, ?, 0)",
    );
    for (const c of data.customers) {
      for (const v of c.visitorIds) link.run(c.siteId, c.customerId, v, "visitor_id");
      // The attributor links a customer to the visitors its user id identified.
      for (const i of data.identities) {
        if (i.siteId === c.siteId && c.userId !== undefined && i.userId === c.userId) {
          link.run(c.siteId, c.customerId, i.visitorId, "user_id");
        }
      }
    }
    const stitch = db.prepare(
      "INSERT INTO visitor_stitches (site_id, visitor_id, persistent_id, ts) VALUES (?, ?, ?, 0)",
    );
    for (const s of data.stitches) stitch.run(s.siteId, s.visitorId, s.persistentId);
    const payment = db.prepare(
      `INSERT INTO payments (site_id, payment_id, customer_id, currency, amount_minor, kind, status, paid_at,
         metadata, created_at, updated_at, attribution, channel)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, '{}', 0, 0, ?, ?)`,
    );
    for (const p of data.payments) {
      payment.run(
        p.siteId,
        p.paymentId,
        p.customerId,
        p.currency,
        p.amountMinor,
        p.kind,
        p.status,
        p.paidAt,
        p.attribution ? JSON.stringify({ ...p.attribution, via: "visitor_id" }) : null,
        p.attribution?.channel ?? "unattributed",
      );
    }
  })();
  const analytics = await openAnalyticsStore({
    path: ":memory:",
    threads: 1,
    memoryLimit: "256MB",
  });
  const feed = createAnalyticsFeed({ sqlitePath, analytics, intervalMs: 1000 });
  await feed.runOnce();
  await feed.stop();
  const batches = createAnalyticsFeed({ sqlitePath, analytics, intervalMs: 1000, batchMax: 3 });
  // Its first run finds nothing to move, but reads the file's watermark: a
  // read on the writer, which may change anything as far as the memo knows.
  await batches.runOnce();
  const engine = createDuckDbAnalytics({ analytics, timeoutMs: 60_000, perSite: 4, bitmaps });
  await warm?.(engine, analytics);
  db.transaction(() => storeEvents(data.events.slice(half)))();
  db.close();
  await batches.runOnce();
  await batches.stop();
  return { engine, close: () => analytics.close() };
}
