/**
 * SQLite schema migrations, applied in order at start-up. A migration is never
 * edited once released: add a new one. `PRAGMA user_version` records the last
 * applied version.
 */
export interface Migration {
  version: number;
  description: string;
  sql: string;
}

/** revenue_dims' dimensions (migration 12): the stored name and the attribution's JSON field. */
const REVENUE_DIMENSIONS = [
  ["source", "source"],
  ["campaign", "campaign"],
  ["landing_page", "landingPage"],
] as const;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "accounts, sites, keys, quota, events, identities, salts, payments",
    sql: `
CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  plan TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL
);
CREATE TABLE memberships (
  account_id TEXT NOT NULL REFERENCES accounts(id),
  user_id TEXT NOT NULL REFERENCES users(id),
  role TEXT NOT NULL,
  PRIMARY KEY (account_id, user_id)
) WITHOUT ROWID;
CREATE TABLE sites (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  hostnames TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX sites_account ON sites(account_id);
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL REFERENCES sites(id),
  name TEXT NOT NULL,
  scopes TEXT NOT NULL,
  hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_used_at INTEGER
);
CREATE INDEX api_keys_site ON api_keys(site_id);
CREATE TABLE quota_usage (
  account_id TEXT NOT NULL,
  month TEXT NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (account_id, month)
) WITHOUT ROWID;
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  site_id TEXT NOT NULL,
  name TEXT NOT NULL,
  url TEXT NOT NULL,
  referrer TEXT,
  title TEXT,
  width INTEGER,
  language TEXT,
  props TEXT,
  ts INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  visitor_id TEXT NOT NULL,
  user_id TEXT,
  country TEXT,
  browser TEXT,
  os TEXT,
  device TEXT,
  referrer_host TEXT,
  utm_source TEXT,
  utm_medium TEXT,
  utm_campaign TEXT,
  utm_term TEXT,
  utm_content TEXT,
  click_ids TEXT
);
CREATE INDEX events_site ON events(site_id);
CREATE INDEX events_site_visitor_ts ON events(site_id, visitor_id, ts);
CREATE TABLE identities (
  site_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  visitor_id TEXT NOT NULL,
  ts INTEGER NOT NULL,
  PRIMARY KEY (site_id, user_id, visitor_id)
) WITHOUT ROWID;
CREATE INDEX identities_visitor ON identities(site_id, visitor_id);
CREATE TABLE salts (
  day TEXT PRIMARY KEY,
  salt TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE customers (
  site_id TEXT NOT NULL,
  customer_id TEXT NOT NULL,
  email TEXT,
  user_id TEXT,
  name TEXT,
  country TEXT,
  visitor_id TEXT,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (site_id, customer_id)
) WITHOUT ROWID;
CREATE INDEX customers_user ON customers(site_id, user_id);
CREATE TABLE subscriptions (
  site_id TEXT NOT NULL,
  subscription_id TEXT NOT NULL,
  customer_id TEXT NOT NULL,
  currency TEXT NOT NULL,
  plan TEXT,
  interval TEXT,
  status TEXT NOT NULL,
  amount_minor INTEGER,
  started_at INTEGER NOT NULL,
  current_period_end INTEGER,
  canceled_at INTEGER,
  ended_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (site_id, subscription_id)
) WITHOUT ROWID;
CREATE INDEX subscriptions_customer ON subscriptions(site_id, customer_id);
CREATE TABLE payments (
  site_id TEXT NOT NULL,
  payment_id TEXT NOT NULL,
  customer_id TEXT NOT NULL,
  currency TEXT NOT NULL,
  amount_minor INTEGER NOT NULL,
  fee_minor INTEGER,
  kind TEXT NOT NULL,
  status TEXT NOT NULL,
  paid_at INTEGER NOT NULL,
  metadata TEXT NOT NULL,
  subscription_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (site_id, payment_id)
) WITHOUT ROWID;
CREATE INDEX payments_customer ON payments(site_id, customer_id);
CREATE INDEX payments_paid_at ON payments(site_id, paid_at);
`,
  },
  {
    version: 2,
    description: "first touches, customer-visitor links, attribution of customers and payments",
    sql: `
CREATE TABLE visitor_touches (
  site_id TEXT NOT NULL,
  visitor_id TEXT NOT NULL,
  ts INTEGER NOT NULL,
  internal INTEGER NOT NULL,
  channel TEXT NOT NULL,
  source TEXT,
  medium TEXT,
  campaign TEXT,
  landing_page TEXT NOT NULL,
  PRIMARY KEY (site_id, visitor_id)
) WITHOUT ROWID;
CREATE TABLE customer_visitors (
  site_id TEXT NOT NULL,
  customer_id TEXT NOT NULL,
  visitor_id TEXT NOT NULL,
  via TEXT NOT NULL,
  linked_at INTEGER NOT NULL,
  PRIMARY KEY (site_id, customer_id, visitor_id)
) WITHOUT ROWID;
CREATE INDEX customer_visitors_visitor ON customer_visitors(site_id, visitor_id);
ALTER TABLE customers ADD COLUMN attribution TEXT;
ALTER TABLE payments ADD COLUMN attribution TEXT;
ALTER TABLE payments ADD COLUMN channel TEXT NOT NULL DEFAULT 'unattributed';
CREATE INDEX payments_channel ON payments(site_id, paid_at, channel);
CREATE INDEX subscriptions_status ON subscriptions(site_id, status);
`,
  },
  {
    version: 3,
    description:
      "drop the unused events (site, visitor, ts) index: first touches have their own table",
    // No query reads it since visitor_touches (v2), and its random visitor-id
    // keys made every event insert dirty another page (half the write cost).
    sql: `
DROP INDEX IF EXISTS events_site_visitor_ts;
`,
  },
  {
    version: 4,
    description: "one-row table the readiness probe writes to",
    // /readyz writes this row: a real (tiny) write fails on a read-only file or a full disk,
    // where a read or an empty transaction would still succeed.
    sql: `
CREATE TABLE readiness_probe (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  checked_at INTEGER NOT NULL
);
`,
  },
  {
    version: 5,
    description: "a directory version bumped by every key, site and account change",
    // Keys, sites and accounts are cached in each process (src/store/directory-cache.ts)
    // and checked against this one row on every lookup. Triggers bump it in
    // the changing statement's own transaction, whoever writes (server, any
    // worker, the admin CLI); a key's last-use time is not a change.
    sql: `
CREATE TABLE directory_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
INSERT INTO directory_version (id, version) VALUES (1, 0);
CREATE TRIGGER api_keys_insert_bump AFTER INSERT ON api_keys BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER api_keys_delete_bump AFTER DELETE ON api_keys BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER api_keys_update_bump AFTER UPDATE OF id, site_id, name, scopes, hash, prefix ON api_keys BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER sites_insert_bump AFTER INSERT ON sites BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER sites_delete_bump AFTER DELETE ON sites BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER sites_update_bump AFTER UPDATE ON sites BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER accounts_insert_bump AFTER INSERT ON accounts BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER accounts_delete_bump AFTER DELETE ON accounts BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER accounts_update_bump AFTER UPDATE ON accounts BEGIN UPDATE directory_version SET version = version + 1; END;
`,
  },
  {
    version: 6,
    description: "drop the indexes no query uses on the tables events and payments write",
    // Each costs a B-tree write per row written (per $identify link, payment,
    // subscription change or attribution update) and no statement reads it:
    // identities are looked up by (site, user[, visitor]), the primary key;
    // revenue by (site, paid_at) uses payments_paid_at; subscriptions by
    // (site, subscription), the primary key, and MRR by the primary key's
    // site prefix. Which query uses each kept index: docs/performance.md.
    sql: `
DROP INDEX IF EXISTS identities_visitor;
DROP INDEX IF EXISTS payments_channel;
DROP INDEX IF EXISTS subscriptions_customer;
DROP INDEX IF EXISTS subscriptions_status;
`,
  },
  {
    version: 7,
    description: "daily visitor ids stitched to persistent visitor ids (vid)",
    // One persistent id per daily id (the primary key: the first stitch wins);
    // a persistent id's daily ids by the second index (attribution joins them).
    sql: `
CREATE TABLE visitor_stitches (
  site_id TEXT NOT NULL,
  visitor_id TEXT NOT NULL,
  persistent_id TEXT NOT NULL,
  ts INTEGER NOT NULL,
  PRIMARY KEY (site_id, visitor_id)
) WITHOUT ROWID;
CREATE INDEX visitor_stitches_persistent ON visitor_stitches(site_id, persistent_id);
`,
  },
  {
    version: 8,
    description: "payment-provider connectors, the events they applied, object versions",
    // connector_events: each provider event applied at most once per connector.
    // connector_objects: the provider's version of each object's stored state,
    // so an older delivery never overwrites a newer one.
    sql: `
CREATE TABLE connectors (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL REFERENCES sites(id),
  provider TEXT NOT NULL,
  secret TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX connectors_site ON connectors(site_id);
CREATE TABLE connector_events (
  connector_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  applied_at INTEGER NOT NULL,
  PRIMARY KEY (connector_id, event_id)
) WITHOUT ROWID;
CREATE TABLE connector_objects (
  site_id TEXT NOT NULL,
  object TEXT NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (site_id, object)
) WITHOUT ROWID;
`,
  },
  {
    version: 9,
    description: "first touches by time, for the new visitors of a period (SiteOverview)",
    // One more B-tree write per first touch stored (one per new visitor, not
    // per event).
    sql: `
CREATE INDEX visitor_touches_ts ON visitor_touches(site_id, ts);
`,
  },
  {
    version: 10,
    description: "a per-site retention of raw events, in days (NULL: keep)",
    // No index: the pruner walks a site's events in rowid order on events_site
    // (site_id, rowid) and stops at the first event received well after the
    // horizon (src/store/sqlite/retention.ts); an index on (site_id, ts) would
    // cost every insert one more B-tree write for a job that runs in the background.
    sql: `
ALTER TABLE sites ADD COLUMN events_retention_days INTEGER;
`,
  },
  {
    version: 11,
    description: "daily rollups of traffic and new visitors, kept by the events' group commit",
    // traffic_days: visitors and pageviews per (site, UTC day of ts), added to by
    // the group commit (events.ts) in the events' own transaction. visitor_days:
    // the set of (site, day, visitor) already counted, so a visitor counts once
    // a day exactly; keyed day first, so a day's inserts stay on the few pages
    // of that day. new_visitor_days: first touches per (site, UTC day of the
    // touch's ts, channel, source, campaign, landing page): the group commit adds
    // +1 per touch it stores (aggregated per batch, events.ts), and the trigger
    // takes 1 from the touch a better one replaces (only an UPDATE knows the old
    // row; a replacement is rare, so the common insert costs no trigger). The
    // -1 is an upsert too: the replaced touch may be of this same batch, whose
    // +1 is added at the end of the transaction. ''
    // stands for an absent source or campaign (a primary key column cannot be
    // NULL in a WITHOUT ROWID table; channels.ts never makes an empty one). No
    // DELETE trigger: erasure and pruning delete rows, the counts (aggregates)
    // stay. The back-fill gives an upgraded database the numbers it had.
    sql: `
CREATE TABLE traffic_days (
  site_id TEXT NOT NULL,
  day TEXT NOT NULL,
  visitors INTEGER NOT NULL,
  pageviews INTEGER NOT NULL,
  PRIMARY KEY (site_id, day)
) WITHOUT ROWID;
CREATE TABLE visitor_days (
  site_id TEXT NOT NULL,
  day TEXT NOT NULL,
  visitor_id TEXT NOT NULL,
  PRIMARY KEY (site_id, day, visitor_id)
) WITHOUT ROWID;
CREATE TABLE new_visitor_days (
  site_id TEXT NOT NULL,
  day TEXT NOT NULL,
  channel TEXT NOT NULL,
  source TEXT NOT NULL,
  campaign TEXT NOT NULL,
  landing_page TEXT NOT NULL,
  visitors INTEGER NOT NULL,
  PRIMARY KEY (site_id, day, channel, source, campaign, landing_page)
) WITHOUT ROWID;
CREATE TRIGGER visitor_touches_uncount_replaced AFTER UPDATE ON visitor_touches BEGIN
  INSERT INTO new_visitor_days (site_id, day, channel, source, campaign, landing_page, visitors)
  VALUES (OLD.site_id, strftime('%Y-%m-%d', OLD.ts / 1000, 'unixepoch'), OLD.channel,
    ifnull(OLD.source, ''), ifnull(OLD.campaign, ''), OLD.landing_page, -1)
  ON CONFLICT (site_id, day, channel, source, campaign, landing_page) DO UPDATE SET visitors = visitors - 1;
END;
INSERT INTO visitor_days (site_id, day, visitor_id)
  SELECT DISTINCT site_id, strftime('%Y-%m-%d', ts / 1000, 'unixepoch'), visitor_id FROM events;
INSERT INTO traffic_days (site_id, day, visitors, pageviews)
  SELECT site_id, strftime('%Y-%m-%d', ts / 1000, 'unixepoch') AS d, count(DISTINCT visitor_id),
    sum(name = 'pageview')
  FROM events GROUP BY site_id, d;
INSERT INTO new_visitor_days (site_id, day, channel, source, campaign, landing_page, visitors)
  SELECT site_id, strftime('%Y-%m-%d', ts / 1000, 'unixepoch') AS d, channel, ifnull(source, ''),
    ifnull(campaign, ''), landing_page, count(*)
  FROM visitor_touches GROUP BY site_id, d, channel, ifnull(source, ''), ifnull(campaign, ''), landing_page;
`,
  },
  {
    version: 12,
    description: "daily revenue kept by triggers on payments; paying customers by index",
    // The revenue reads of a period read days, not payments
    // (docs/dashboard.md, Performance): revenue_days holds per site, UTC day
    // of paid_at, currency and channel the sums of the succeeded payments by
    // kind and their number; revenue_dims the net revenue per day, currency
    // and value of each first-touch dimension (source, campaign, landing page),
    // with the number of payments in it. The rule is one line: a payment
    // counts while its status is `succeeded`, its amount under its kind, in
    // the day of its paid_at and under its channel and touch. The triggers
    // apply it to every change of a payment, whoever writes it (a re-send, a
    // re-attribution after an identify, an erasure, a deletion): take the old
    // row's part away, add the new one's, drop what no payment counts in.
    // Paying customers are distinct over the whole period and cannot be
    // summed from days: payments_paying answers them from the index alone,
    // ordered by channel, currency and customer so the DISTINCT needs no sort.
    sql: `
CREATE TABLE revenue_days (
  site_id TEXT NOT NULL,
  day TEXT NOT NULL,
  currency TEXT NOT NULL,
  channel TEXT NOT NULL,
  gross INTEGER NOT NULL,
  refunds INTEGER NOT NULL,
  chargebacks INTEGER NOT NULL,
  payments INTEGER NOT NULL,
  PRIMARY KEY (site_id, day, currency, channel)
) WITHOUT ROWID;
CREATE TABLE revenue_dims (
  site_id TEXT NOT NULL,
  day TEXT NOT NULL,
  currency TEXT NOT NULL,
  dimension TEXT NOT NULL,
  value TEXT NOT NULL,
  net INTEGER NOT NULL,
  payments INTEGER NOT NULL,
  PRIMARY KEY (site_id, day, currency, dimension, value)
) WITHOUT ROWID;
${revenueTriggers()}
INSERT INTO revenue_days
  SELECT site_id, ${dayOf("payments")}, currency, channel, sum(${amountOf("payments", "charge")}),
    sum(${amountOf("payments", "refund")}), sum(${amountOf("payments", "chargeback")}), count(*)
  FROM payments WHERE status = 'succeeded'
  GROUP BY 1, 2, 3, 4;
${REVENUE_DIMENSIONS.map(
  ([name, path]) => `INSERT INTO revenue_dims
  SELECT site_id, ${dayOf("payments")}, currency, '${name}', json_extract(attribution, '$.${path}'),
    sum(${netOf("payments")}), count(*)
  FROM payments WHERE status = 'succeeded' AND json_extract(attribution, '$.${path}') IS NOT NULL
  GROUP BY 1, 2, 3, 5;`,
).join("\n")}
CREATE INDEX payments_paying ON payments(site_id, status, kind, channel, currency, customer_id, paid_at);
`,
  },
  {
    version: 13,
    description:
      "daily revenue kept by the payments' writers, summed per write; no per-row triggers",
    // The insert and update triggers of migration 12 ran a trigger program of
    // up to twelve statements for every payment a group commit wrote, which
    // cost new payments a sixth of their throughput (docs/dashboard.md,
    // Performance). The writers now read what they change, sum the deltas
    // per cell with the domain's rule (the domain's revenue-rollup.ts, removed with migration 20) and apply
    // them once per transaction (the SQLite revenue-rollup.ts, removed with migration 20). The
    // delete trigger stays: no writer of the service deletes a payment, so it
    // costs nothing, and a payment deleted by hand still leaves the cells right.
    sql: `
DROP TRIGGER payments_revenue_insert;
DROP TRIGGER payments_revenue_update;
`,
  },
  {
    version: 14,
    description: "a site's name and IANA time zone",
    // Both optional: NULL is no name and UTC (src/domain/site-settings.ts).
    // sites_update_bump (migration 5) raises the directory version on change.
    sql: `
ALTER TABLE sites ADD COLUMN name TEXT;
ALTER TABLE sites ADD COLUMN time_zone TEXT;
`,
  },
  {
    version: 15,
    description:
      "the analytics feed: one ordered log of what the DuckDB analytics store must apply",
    // Written by triggers, so every writer's own transaction records its
    // change (nothing committed can be missed, nothing rolled back is seen).
    // kind 0: an event inserted (ref = its rowid); 1: a payment written or
    // deleted (key = payment id); 2: a customer's visitor links changed (key =
    // customer id); 3: a visitor's stitch changed (key = daily visitor id);
    // 4: an event deleted (ref = its rowid). AUTOINCREMENT: a sequence number
    // is never reused, so the mover's watermark (kept in the DuckDB file, in
    // the transaction that applied the rows) is exact even after the log's
    // head is trimmed; the events' own rowids may be reused after a delete,
    // which is why events are fed through this log and not by rowid.
    sql: `
CREATE TABLE analytics_feed (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  kind INTEGER NOT NULL,
  ref INTEGER,
  site_id TEXT,
  key TEXT
);
CREATE TRIGGER analytics_feed_event_insert AFTER INSERT ON events BEGIN
  INSERT INTO analytics_feed (kind, ref) VALUES (0, NEW.id);
END;
CREATE TRIGGER analytics_feed_event_delete AFTER DELETE ON events BEGIN
  INSERT INTO analytics_feed (kind, ref) VALUES (4, OLD.id);
END;
CREATE TRIGGER analytics_feed_payment_insert AFTER INSERT ON payments BEGIN
  INSERT INTO analytics_feed (kind, site_id, key) VALUES (1, NEW.site_id, NEW.payment_id);
END;
CREATE TRIGGER analytics_feed_payment_update AFTER UPDATE ON payments BEGIN
  INSERT INTO analytics_feed (kind, site_id, key) VALUES (1, NEW.site_id, NEW.payment_id);
END;
CREATE TRIGGER analytics_feed_payment_delete AFTER DELETE ON payments BEGIN
  INSERT INTO analytics_feed (kind, site_id, key) VALUES (1, OLD.site_id, OLD.payment_id);
END;
CREATE TRIGGER analytics_feed_link_insert AFTER INSERT ON customer_visitors BEGIN
  INSERT INTO analytics_feed (kind, site_id, key) VALUES (2, NEW.site_id, NEW.customer_id);
END;
CREATE TRIGGER analytics_feed_link_update AFTER UPDATE ON customer_visitors BEGIN
  INSERT INTO analytics_feed (kind, site_id, key) VALUES (2, NEW.site_id, NEW.customer_id);
END;
CREATE TRIGGER analytics_feed_link_delete AFTER DELETE ON customer_visitors BEGIN
  INSERT INTO analytics_feed (kind, site_id, key) VALUES (2, OLD.site_id, OLD.customer_id);
END;
CREATE TRIGGER analytics_feed_stitch_insert AFTER INSERT ON visitor_stitches BEGIN
  INSERT INTO analytics_feed (kind, site_id, key) VALUES (3, NEW.site_id, NEW.visitor_id);
END;
CREATE TRIGGER analytics_feed_stitch_update AFTER UPDATE ON visitor_stitches BEGIN
  INSERT INTO analytics_feed (kind, site_id, key) VALUES (3, NEW.site_id, NEW.visitor_id);
END;
CREATE TRIGGER analytics_feed_stitch_delete AFTER DELETE ON visitor_stitches BEGIN
  INSERT INTO analytics_feed (kind, site_id, key) VALUES (3, OLD.site_id, OLD.visitor_id);
END;
`,
  },
  {
    version: 16,
    description: "the installation's secrets, made on first use (the erasure audit line's key)",
    // One row per secret, by name: 'erasure_audit' keys the HMAC of the erased id
    // in the erasure audit line (src/domain/erasure.ts), so the line cannot be
    // reversed by hashing guesses (an unsalted SHA-256 could be). The row is
    // made by its first reader (src/store/sqlite/erasure.ts), never by the
    // migration, so a database restored from a backup keeps the key it had.
    sql: `
CREATE TABLE installation_secrets (
  name TEXT PRIMARY KEY,
  secret BLOB NOT NULL
) WITHOUT ROWID;
`,
  },
  {
    version: 17,
    description:
      "a per-site ceiling of the public collect door, in events a minute (NULL: the plan's)",
    // Read with the site (getSite, cached against the directory version, which
    // sites_update_bump moves when it changes): no index, no extra read per request.
    sql: `
ALTER TABLE sites ADD COLUMN collect_per_minute INTEGER;
`,
  },
  {
    version: 18,
    description: "the one-time setup token of a store with no account (first run)",
    // One row at most: a new token (a restart with still no account) replaces
    // the last. Only the SHA-256 of the token is kept (src/domain/first-run.ts).
    sql: `
CREATE TABLE setup_token (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  hash TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER
);
`,
  },
  {
    version: 19,
    description:
      "events become the analytics feed's outbox: ids never reused, deletes no longer logged by a trigger",
    // The feed deletes the events it moved to DuckDB (src/store/duckdb/analytics-feed.ts):
    // from then on an event's id is its position in both stores (ListEvents' page token), so
    // it must never be given again, even when every row has left (AUTOINCREMENT; SQLite can
    // only add it by rebuilding the table, once, here). The delete trigger of migration 15
    // goes: the mover's own deletes are no change for DuckDB. Erasure and retention now log
    // what DuckDB must delete themselves, in their transaction: kind 5 erase a visitor's
    // events (site_id, key = visitor id), 6 erase a user's $identify events (site_id, key =
    // user id), 7 prune a site's events before a time (site_id, ref = Unix ms). A DROP
    // TABLE fires no delete trigger, and the rows keep their ids.
    sql: `
DROP TRIGGER analytics_feed_event_delete;
CREATE TABLE events_outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  site_id TEXT NOT NULL,
  name TEXT NOT NULL,
  url TEXT NOT NULL,
  referrer TEXT,
  title TEXT,
  width INTEGER,
  language TEXT,
  props TEXT,
  ts INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  visitor_id TEXT NOT NULL,
  user_id TEXT,
  country TEXT,
  browser TEXT,
  os TEXT,
  device TEXT,
  referrer_host TEXT,
  utm_source TEXT,
  utm_medium TEXT,
  utm_campaign TEXT,
  utm_term TEXT,
  utm_content TEXT,
  click_ids TEXT
);
INSERT INTO events_outbox SELECT * FROM events;
DROP TABLE events;
ALTER TABLE events_outbox RENAME TO events;
CREATE INDEX events_site ON events(site_id);
CREATE TRIGGER analytics_feed_event_insert AFTER INSERT ON events BEGIN
  INSERT INTO analytics_feed (kind, ref) VALUES (0, NEW.id);
END;
-- A backup asked of the process that holds the analytics file (admin store backup
-- while a server runs): its feed copies both files between two batches and says so here.
CREATE TABLE store_backups (
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL,
  requested_at INTEGER NOT NULL,
  done_at INTEGER,
  report TEXT,
  error TEXT
);
`,
  },
  {
    version: 20,
    description: "no daily rollups: the reports read the analytics engine or the stored rows",
    // The cells of migrations 11 and 12 were kept on every write (a visitor-day
    // insert and a traffic upsert per batch, a new-visitor upsert per first
    // touch, the revenue cells per payment write), for fixed report cuts that
    // the analytics engine now answers from its own copy of the rows
    // (src/domain/site-overview.ts); where no engine runs, SiteOverview and
    // RevenueByChannel read the events, first touches and payments of the
    // period (src/store/sqlite/overview.ts). The visitor ids of visitor_days and
    // the first-touch strings of new_visitor_days go with their tables.
    sql: `
DROP TRIGGER IF EXISTS visitor_touches_uncount_replaced;
DROP TRIGGER IF EXISTS payments_revenue_insert;
DROP TRIGGER IF EXISTS payments_revenue_update;
DROP TRIGGER IF EXISTS payments_revenue_delete;
DROP TABLE traffic_days;
DROP TABLE visitor_days;
DROP TABLE new_visitor_days;
DROP TABLE revenue_days;
DROP TABLE revenue_dims;
`,
  },
  {
    version: 21,
    description:
      "drop payments_paying: revenue by channel counts its paying customers in the scan of the period",
    // A seven-column entry per payment (site, status, kind, channel, currency,
    // customer, paid_at, and the key), a B-tree write per payment written, and the
    // largest index of the file after the payments themselves (docs/performance.md,
    // "Bytes on disk"). Its one reader was the distinct paying customers of
    // RevenueByChannel, which the analytics engine answers now (migration 22).
    sql: `
DROP INDEX IF EXISTS payments_paying;
`,
  },
  {
    version: 22,
    description: "no store reads for the fixed reports: their indexes go",
    // SiteOverview's new visitors and revenue and RevenueByChannel are plans of
    // the query layer on the analytics engine (src/domain/analytics/fixed-reports.ts):
    // SQLite no longer reads first touches by time nor payments by
    // (status, kind, channel, currency, customer). Their indexes were kept on
    // every first-touch and payment write for those reads alone.
    // `payments_paid_at` stays (the recent payments and the exports read it);
    // `payments_paying` went in migration 21.
    sql: `
DROP INDEX IF EXISTS visitor_touches_ts;
`,
  },
  {
    version: 23,
    description: "no feed log entry per event: the mover reads the outbox by id",
    // Since migration 19 an event's AUTOINCREMENT id is its position: given
    // under the write lock, in commit order, never reused. The mover reads the
    // events after the highest id DuckDB holds (src/store/duckdb/analytics-feed.ts),
    // so the log entry each insert wrote (kind 0, a row written, read and
    // deleted per event) orders nothing the id does not. The entries left go
    // with the trigger: their events are the outbox's rows past that id.
    sql: `
DROP TRIGGER analytics_feed_event_insert;
DELETE FROM analytics_feed WHERE kind = 0;
`,
  },
  {
    version: 24,
    description: "the analytics file's owner: one lease row per data directory",
    // The process that owns the analytics file (DuckDB, its feed and engine) is
    // chosen here, not by whichever takes DuckDB's file lock first: it holds
    // this row until expires_at and renews it; another server takes it over
    // once it lapses (src/store/sqlite/analytics-lease.ts). Times are Unix ms.
    sql: `
CREATE TABLE analytics_lease (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  holder TEXT NOT NULL,
  acquired_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
`,
  },
  {
    version: 25,
    description: "first touches by journal: appended by id, merged into visitor_touches in bulk",
    // An upsert per new visitor into visitor_touches (keyed by the visitor id, a
    // hash) wrote a page of its own for nearly every new visitor; a journal row is
    // appended at the end of its table (src/store/sqlite/first-touches.ts).
    // AUTOINCREMENT: a merge deletes rows, and an id must never be given twice
    // (connections read the journal past the last id they read). The state row:
    // the id every row up to which is merged, the erasures (each makes every
    // connection read the journal again), and the merge under way (its last id
    // and next slice; 0 when none).
    sql: `
CREATE TABLE touch_journal (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  site_id TEXT NOT NULL,
  visitor_id TEXT NOT NULL,
  ts INTEGER NOT NULL,
  internal INTEGER NOT NULL,
  channel TEXT NOT NULL,
  source TEXT,
  medium TEXT,
  campaign TEXT,
  landing_page TEXT NOT NULL
);
CREATE TABLE touch_journal_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  merged_through INTEGER NOT NULL,
  erasures INTEGER NOT NULL,
  cycle_through INTEGER NOT NULL,
  slice INTEGER NOT NULL
);
INSERT INTO touch_journal_state VALUES (1, 0, 0, 0, 0);
`,
  },
];

/** The UTC day (YYYY-MM-DD) of a payments row's paid_at (NEW, OLD or the table). */
function dayOf(row: string): string {
  return `strftime('%Y-%m-%d', ${row}.paid_at / 1000, 'unixepoch')`;
}

/** The row's amount when it is of this kind, else 0. */
function amountOf(row: string, kind: string): string {
  return `(CASE ${row}.kind WHEN '${kind}' THEN ${row}.amount_minor ELSE 0 END)`;
}

/** The row's part of a net revenue: a charge adds, a refund or a chargeback takes away. */
function netOf(row: string): string {
  return `(CASE ${row}.kind WHEN 'charge' THEN ${row}.amount_minor ELSE -${row}.amount_minor END)`;
}

/**
 * The triggers of migration 12: add NEW's part to its day and dimension
 * rows, take OLD's away from its own, delete a row once it counts no
 * payment. Only succeeded payments count. Written once here so the three
 * triggers read alike.
 */
function revenueTriggers(): string {
  const dim = (row: string, path: string) => `json_extract(${row}.attribution, '$.${path}')`;
  const add = (row: string) => [
    `INSERT INTO revenue_days
      SELECT ${row}.site_id, ${dayOf(row)}, ${row}.currency, ${row}.channel, ${amountOf(row, "charge")},
        ${amountOf(row, "refund")}, ${amountOf(row, "chargeback")}, 1
      WHERE ${row}.status = 'succeeded'
      ON CONFLICT (site_id, day, currency, channel) DO UPDATE SET
        gross = gross + excluded.gross, refunds = refunds + excluded.refunds,
        chargebacks = chargebacks + excluded.chargebacks, payments = payments + 1;`,
    ...REVENUE_DIMENSIONS.map(
      ([name, path]) => `INSERT INTO revenue_dims
      SELECT ${row}.site_id, ${dayOf(row)}, ${row}.currency, '${name}', ${dim(row, path)}, ${netOf(row)}, 1
      WHERE ${row}.status = 'succeeded' AND ${dim(row, path)} IS NOT NULL
      ON CONFLICT (site_id, day, currency, dimension, value) DO UPDATE SET
        net = net + excluded.net, payments = payments + 1;`,
    ),
  ];
  const dayKey = (row: string) =>
    `site_id = ${row}.site_id AND day = ${dayOf(row)} AND currency = ${row}.currency`;
  const remove = (row: string) => [
    `UPDATE revenue_days SET
      gross = gross - ${amountOf(row, "charge")}, refunds = refunds - ${amountOf(row, "refund")},
      chargebacks = chargebacks - ${amountOf(row, "chargeback")}, payments = payments - 1
    WHERE ${row}.status = 'succeeded' AND ${dayKey(row)} AND channel = ${row}.channel;`,
    `DELETE FROM revenue_days WHERE ${dayKey(row)} AND channel = ${row}.channel AND payments = 0;`,
    ...REVENUE_DIMENSIONS.flatMap(([name, path]) => [
      `UPDATE revenue_dims SET net = net - ${netOf(row)}, payments = payments - 1
      WHERE ${row}.status = 'succeeded' AND ${dayKey(row)} AND dimension = '${name}'
        AND value = ${dim(row, path)};`,
      `DELETE FROM revenue_dims WHERE ${dayKey(row)} AND dimension = '${name}'
        AND value = ${dim(row, path)} AND payments = 0;`,
    ]),
  ];
  const counted = [
    "site_id",
    "status",
    "kind",
    "amount_minor",
    "currency",
    "paid_at",
    "channel",
    "attribution",
  ];
  return `
CREATE TRIGGER payments_revenue_insert AFTER INSERT ON payments BEGIN
  ${add("NEW").join("\n  ")}
END;
CREATE TRIGGER payments_revenue_delete AFTER DELETE ON payments BEGIN
  ${remove("OLD").join("\n  ")}
END;
CREATE TRIGGER payments_revenue_update AFTER UPDATE OF ${counted.join(", ")} ON payments
WHEN ${counted.map((c) => `OLD.${c} IS NOT NEW.${c}`).join(" OR ")} BEGIN
  ${remove("OLD").join("\n  ")}
  ${add("NEW").join("\n  ")}
END;`;
}
