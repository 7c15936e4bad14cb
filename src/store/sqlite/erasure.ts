/**
 * Erasure in SQLite. Each erasure is one IMMEDIATE transaction; the
 * connection runs with `secure_delete` (open-sqlite.ts), so deleted rows are
 * overwritten with zeros in the database file, and the store checkpoints the
 * WAL after the commit (`wal_checkpoint(TRUNCATE)`, sqlite-store.ts) so the
 * frames that held the old rows are copied over and the WAL emptied.
 */
import { randomBytes } from "node:crypto";
import { UNATTRIBUTED } from "../../domain/vocabulary.js";
import type { StoreErasurePart } from "../port.js";
import { firstTouchesOf } from "./first-touches.js";
import type { Db } from "./open-sqlite.js";

/** SQLite limits bound parameters; ids go in chunks. */
function chunks<T>(items: T[], size = 400): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

const marks = (ids: readonly unknown[]) => ids.map(() => "?").join(",");

export function createSqliteErasure(db: Db): StoreErasurePart {
  const touches = firstTouchesOf(db);
  const s = {
    moveSubscriptions: db.prepare(
      "UPDATE subscriptions SET customer_id = ? WHERE site_id = ? AND customer_id = ?",
    ),
    // The channel stays: revenue by channel does not change. The attribution's
    // details (visitor id, landing page, campaign) are the customer's history.
    movePayments: db.prepare(
      `UPDATE payments INDEXED BY payments_customer SET customer_id = ?, metadata = '{}', attribution = NULL
       WHERE site_id = ? AND customer_id = ?`,
    ),
    customerLinks: db.prepare(
      "DELETE FROM customer_visitors WHERE site_id = ? AND customer_id = ?",
    ),
    customer: db.prepare("DELETE FROM customers WHERE site_id = ? AND customer_id = ?"),
    userLinks: db.prepare("DELETE FROM identities WHERE site_id = ? AND user_id = ?"),
    // $identify events are the only ones with a user id.
    userEvents: db.prepare(
      "DELETE FROM events WHERE site_id = ? AND user_id = ? AND name = '$identify'",
    ),
    // The first caller's random key wins; every later one reads it (migration 16).
    makeAuditKey: db.prepare(
      "INSERT INTO installation_secrets (name, secret) VALUES ('erasure_audit', ?) ON CONFLICT (name) DO NOTHING",
    ),
    auditKey: db.prepare("SELECT secret FROM installation_secrets WHERE name = 'erasure_audit'"),
    // What the analytics store must delete of the events the feed already moved
    // (migration 19's kinds 5 and 6), in the erasure's own transaction.
    logVisitorErased: db.prepare(
      "INSERT INTO analytics_feed (kind, site_id, key) VALUES (5, ?, ?)",
    ),
    logIdentifyErased: db.prepare(
      "INSERT INTO analytics_feed (kind, site_id, key) VALUES (6, ?, ?)",
    ),
    customersByUser: db.prepare(
      "SELECT customer_id FROM customers WHERE site_id = ? AND user_id = ? ORDER BY customer_id",
    ),
  };

  const eraseCustomer = db.transaction((siteId: string, customerId: string, pseudonym: string) => {
    const subscriptions = s.moveSubscriptions.run(pseudonym, siteId, customerId).changes;
    // The attribution's details go, so its dimensions stop counting the payments; the channel stays.
    const payments = s.movePayments.run(pseudonym, siteId, customerId).changes;
    const customerLinks = s.customerLinks.run(siteId, customerId).changes;
    const customers = s.customer.run(siteId, customerId).changes;
    return { customers, payments, subscriptions, customerLinks };
  });

  const eraseUserLinks = db.transaction((siteId: string, userId: string) => {
    s.logIdentifyErased.run(siteId, userId);
    return {
      identityLinks: s.userLinks.run(siteId, userId).changes,
      // The outbox's (not yet moved) events; the engine's are counted by the domain.
      events: s.userEvents.run(siteId, userId).changes,
      customers: (s.customersByUser.all(siteId, userId) as { customer_id: string }[]).map(
        (r) => r.customer_id,
      ),
    };
  });

  const eraseVisitors = db.transaction((siteId: string, visitorIds: string[], names: string[]) => {
    const out = {
      events: 0,
      touches: 0,
      identityLinks: 0,
      customerLinks: 0,
      stitches: 0,
      customers: [] as string[],
    };
    const customers = new Set<string>();
    for (const v of visitorIds) s.logVisitorErased.run(siteId, v);
    touches.sync();
    out.touches = touches.forget(siteId, visitorIds);
    for (const part of chunks(visitorIds)) {
      const run = (sql: string, ...extra: string[]) =>
        db.prepare(sql).run(siteId, ...part, ...extra).changes;
      for (const r of db
        .prepare(
          `SELECT DISTINCT customer_id FROM customer_visitors INDEXED BY customer_visitors_visitor
           WHERE site_id = ? AND visitor_id IN (${marks(part)})`,
        )
        .all(siteId, ...part) as { customer_id: string }[]) {
        customers.add(r.customer_id);
      }
      // The events table has no visitor index (migration 3 dropped it: it cost every
      // insert a page write); an erasure scans the site's events, which is rare.
      out.events += run(`DELETE FROM events WHERE site_id = ? AND visitor_id IN (${marks(part)})`);
      out.identityLinks += run(
        `DELETE FROM identities WHERE site_id = ? AND visitor_id IN (${marks(part)})`,
      );
      out.customerLinks += run(
        `DELETE FROM customer_visitors WHERE site_id = ? AND visitor_id IN (${marks(part)})`,
      );
      out.stitches += db
        .prepare(
          `DELETE FROM visitor_stitches WHERE site_id = ?
           AND (visitor_id IN (${marks(part)}) OR persistent_id IN (${marks(part)}))`,
        )
        .run(siteId, ...part, ...part).changes;
    }
    for (const part of chunks(names)) {
      db.prepare(
        `UPDATE customers SET visitor_id = NULL WHERE site_id = ? AND visitor_id IN (${marks(part)})`,
      ).run(siteId, ...part);
    }
    out.customers = [...customers].sort();
    const clearCustomer = db.prepare(
      "UPDATE customers SET attribution = NULL WHERE site_id = ? AND customer_id = ?",
    );
    const clearPayments = db.prepare(
      `UPDATE payments INDEXED BY payments_customer SET attribution = NULL, channel = '${UNATTRIBUTED}'
       WHERE site_id = ? AND customer_id = ?`,
    );
    for (const c of out.customers) {
      clearCustomer.run(siteId, c);
      clearPayments.run(siteId, c);
    }
    return out;
  });

  return {
    async eraseCustomer(siteId, customerId, pseudonym) {
      return eraseCustomer.immediate(siteId, customerId, pseudonym);
    },
    async eraseUserLinks(siteId, userId) {
      return eraseUserLinks.immediate(siteId, userId);
    },
    async eraseVisitors(siteId, visitorIds, names) {
      return eraseVisitors.immediate(siteId, [...new Set(visitorIds)], [...new Set(names)]);
    },
    async auditKey() {
      s.makeAuditKey.run(randomBytes(32));
      return new Uint8Array((s.auditKey.get() as { secret: Buffer }).secret);
    },
  };
}
