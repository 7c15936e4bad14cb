/** First touches, customer-visitor links, attribution and revenue reports in SQLite. */

import { LINK_KINDS, linkRank } from "../../domain/attribution/ranking.js";
import { RECURRING_STATUSES, UNATTRIBUTED } from "../../domain/vocabulary.js";
import type {
  Attribution,
  CustomerVisitorLink,
  LinkKind,
  MrrRow,
  StoreAttributionPart,
  VisitorTouch,
} from "../port.js";
import { firstTouchesOf } from "./first-touches.js";
import type { Db } from "./open-sqlite.js";

/** The stored link's rank (the domain's linkRank, as SQL): the index of `via` in LINK_KINDS. */
const STORED_LINK_RANK = `(CASE via ${LINK_KINDS.map((k, i) => `WHEN '${k}' THEN ${i}`).join(" ")} END)`;

/** SQLite limits bound parameters; look ids up in chunks. */
function chunks<T>(items: T[], size = 500): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export function createSqliteAttribution(db: Db): StoreAttributionPart {
  const touches = firstTouchesOf(db);
  const s = {
    links: db.prepare(
      "SELECT visitor_id, via, linked_at FROM customer_visitors WHERE site_id = ? AND customer_id = ? ORDER BY linked_at, visitor_id",
    ),
    link: db.prepare(
      `INSERT INTO customer_visitors (site_id, customer_id, visitor_id, via, linked_at)
       VALUES (@site_id, @customer_id, @visitor_id, @via, @linked_at)
       ON CONFLICT (site_id, customer_id, visitor_id) DO UPDATE SET
         linked_at = min(linked_at, excluded.linked_at),
         via = CASE WHEN @rank < ${STORED_LINK_RANK} THEN excluded.via ELSE via END
       -- A link that would not change is not rewritten: every payment re-links the
       -- customer's visitors, and unchanged rows must cost no page writes.
       WHERE excluded.linked_at < linked_at
          OR @rank < ${STORED_LINK_RANK}`,
    ),
    customersByUser: db.prepare(
      "SELECT customer_id FROM customers WHERE site_id = ? AND user_id = ?",
    ),
    // Rows that already hold the value are left alone: a transaction that
    // changes nothing writes nothing, so an unchanged attribution costs no WAL sync.
    setCustomer: db.prepare(
      `UPDATE customers SET attribution = @json
       WHERE site_id = @site AND customer_id = @customer AND attribution IS NOT @json`,
    ),
    // INDEXED BY: without statistics SQLite prefers the primary key's site_id
    // prefix here, i.e. a scan of the whole site's payments for every customer.
    setPayments: db.prepare(
      `UPDATE payments INDEXED BY payments_customer SET attribution = @json, channel = @channel
       WHERE site_id = @site AND customer_id = @customer
         AND (attribution IS NOT @json OR channel IS NOT @channel)`,
    ),
    // The succeeded payments of the period by (site_id, paid_at), summed per
    // channel and currency: the store of record is read, no daily cells.
    mrr: db.prepare(
      `SELECT currency, interval, sum(amount_minor) AS amount, count(*) AS n
       FROM subscriptions
       WHERE site_id = ? AND status IN (${RECURRING_STATUSES.map((v) => `'${v}'`).join(", ")}) AND amount_minor IS NOT NULL
         AND interval IS NOT NULL AND started_at <= ? AND (ended_at IS NULL OR ended_at > ?)
       GROUP BY currency, interval ORDER BY currency, interval`,
    ),
  };

  const linkAll = db.transaction(
    (siteId: string, customerId: string, links: CustomerVisitorLink[]) => {
      for (const l of links) {
        s.link.run({
          site_id: siteId,
          customer_id: customerId,
          visitor_id: l.visitorId,
          via: l.via,
          linked_at: l.linkedAt,
          rank: linkRank(l.via),
        });
      }
    },
  );

  const setAll = db.transaction(
    (siteId: string, customerId: string, attribution: Attribution | undefined) => {
      const json = attribution === undefined ? null : JSON.stringify(attribution);
      const channel = attribution?.channel ?? UNATTRIBUTED;
      s.setCustomer.run({ json, site: siteId, customer: customerId });
      s.setPayments.run({ json, channel, site: siteId, customer: customerId });
    },
  );

  return {
    async getFirstTouches(siteId, visitorIds) {
      touches.sync();
      const out: VisitorTouch[] = [];
      for (const v of new Set(visitorIds)) {
        const t = touches.get(siteId, v);
        if (t !== undefined) out.push(t);
      }
      return out;
    },
    async linkCustomerVisitors(siteId, customerId, links) {
      if (links.length > 0) linkAll.immediate(siteId, customerId, links);
    },
    async getCustomerVisitors(siteId, customerId) {
      const rows = s.links.all(siteId, customerId) as {
        visitor_id: string;
        via: LinkKind;
        linked_at: number;
      }[];
      return rows.map((r) => ({ visitorId: r.visitor_id, via: r.via, linkedAt: r.linked_at }));
    },
    async findCustomersToReattribute(siteId, query) {
      const found = new Set<string>();
      for (const userId of new Set(query.userIds)) {
        for (const r of s.customersByUser.all(siteId, userId) as { customer_id: string }[]) {
          found.add(r.customer_id);
        }
      }
      for (const part of chunks([...new Set(query.visitorIds)])) {
        const rows = db
          .prepare(
            // INDEXED BY: the primary key's site_id prefix would scan every link of the site.
            `SELECT DISTINCT customer_id FROM customer_visitors INDEXED BY customer_visitors_visitor
             WHERE site_id = ? AND visitor_id IN (${part.map(() => "?").join(",")})`,
          )
          .all(siteId, ...part) as { customer_id: string }[];
        for (const r of rows) found.add(r.customer_id);
      }
      return [...found].sort();
    },
    async setAttribution(siteId, customerId, attribution) {
      setAll.immediate(siteId, customerId, attribution);
    },
    async mrrTotals(siteId, at) {
      const rows = s.mrr.safeIntegers(true).all(siteId, at, at) as {
        currency: string;
        interval: MrrRow["interval"];
        amount: bigint;
        n: bigint;
      }[];
      return rows.map((r) => ({
        currency: r.currency,
        interval: r.interval,
        amountMinor: r.amount,
        subscriptions: Number(r.n),
      }));
    },
  };
}
