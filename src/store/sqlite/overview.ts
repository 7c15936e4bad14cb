/** The site-overview reads in SQLite: grouped scans over one site's rows of a period. */
import { UNATTRIBUTED } from "../../domain/vocabulary.js";
import type { PaymentKind, StoreOverviewPart } from "../port.js";
import { type Db, opt } from "./open-sqlite.js";
import { type PaymentRow, paymentFromRow } from "./payments.js";

/** The UTC day of a Unix-millisecond column. */
const DAY = (column: string) => `strftime('%Y-%m-%d', ${column} / 1000, 'unixepoch')`;

export function createSqliteOverview(db: Db): StoreOverviewPart {
  const s = {
    // events_site, then the period's rows: for the partial days at a period's ends only
    // (the whole days read the rollups below; src/domain/overview-traffic.ts).
    traffic: db.prepare(
      `SELECT ${DAY("ts")} AS day, count(DISTINCT visitor_id) AS visitors,
         sum(name = 'pageview') AS pageviews
       FROM events WHERE site_id = ? AND ts >= ? AND ts < ?
       GROUP BY day ORDER BY day`,
    ),
    newVisitors: db.prepare(
      `SELECT channel, source, campaign, landing_page, count(*) AS visitors
       FROM visitor_touches INDEXED BY visitor_touches_ts
       WHERE site_id = ? AND ts >= ? AND ts < ?
       GROUP BY channel, source, campaign, landing_page
       ORDER BY channel, source, campaign, landing_page`,
    ),
    trafficRollup: db.prepare(
      `SELECT day, visitors, pageviews FROM traffic_days
       WHERE site_id = ? AND day >= ? AND day < ? ORDER BY day`,
    ),
    // A group's count falls to 0 when all its touches were replaced by better ones.
    newVisitorRollup: db.prepare(
      `SELECT channel, source, campaign, landing_page, sum(visitors) AS visitors
       FROM new_visitor_days WHERE site_id = ? AND day >= ? AND day < ?
       GROUP BY channel, source, campaign, landing_page HAVING sum(visitors) > 0
       ORDER BY channel, source, campaign, landing_page`,
    ),
    revenue: db.prepare(
      `SELECT ${DAY("paid_at")} AS day, currency, channel,
         json_extract(attribution, '$.source') AS source,
         json_extract(attribution, '$.campaign') AS campaign,
         json_extract(attribution, '$.landingPage') AS landing_page,
         sum(CASE kind WHEN 'charge' THEN amount_minor ELSE 0 END) AS gross,
         sum(CASE kind WHEN 'refund' THEN amount_minor ELSE 0 END) AS refunds,
         sum(CASE kind WHEN 'chargeback' THEN amount_minor ELSE 0 END) AS chargebacks
       FROM payments INDEXED BY payments_paid_at
       WHERE site_id = ? AND paid_at >= ? AND paid_at < ? AND status = 'succeeded'
       GROUP BY day, currency, channel, source, campaign, landing_page
       ORDER BY day, currency, channel, source, campaign, landing_page`,
    ),
    recent: db.prepare(
      `SELECT payment_id, customer_id, currency, amount_minor, kind, paid_at, channel,
         json_extract(attribution, '$.source') AS source,
         json_extract(attribution, '$.campaign') AS campaign,
         json_extract(attribution, '$.landingPage') AS landing_page
       FROM payments INDEXED BY payments_paid_at
       WHERE site_id = ? AND paid_at >= ? AND paid_at < ? AND status = 'succeeded'
       ORDER BY paid_at DESC, payment_id DESC LIMIT ?`,
    ),
    customerPayments: db.prepare(
      `SELECT * FROM payments INDEXED BY payments_customer
       WHERE site_id = ? AND customer_id = ?
       ORDER BY paid_at DESC, payment_id DESC LIMIT ?`,
    ),
  };

  return {
    async trafficByDay(siteId, from, to) {
      const rows = s.traffic.all(siteId, from, to) as {
        day: string;
        visitors: number;
        pageviews: number;
      }[];
      return rows.map((r) => ({ day: r.day, visitors: r.visitors, pageviews: r.pageviews }));
    },
    async newVisitorCounts(siteId, from, to) {
      const rows = s.newVisitors.all(siteId, from, to) as {
        channel: string;
        source: string | null;
        campaign: string | null;
        landing_page: string;
        visitors: number;
      }[];
      return rows.map((r) => ({
        channel: r.channel,
        source: opt(r.source),
        campaign: opt(r.campaign),
        landingPage: r.landing_page,
        visitors: r.visitors,
      }));
    },
    async trafficRollup(siteId, fromDay, toDay) {
      return s.trafficRollup.all(siteId, fromDay, toDay) as {
        day: string;
        visitors: number;
        pageviews: number;
      }[];
    },
    async newVisitorRollup(siteId, fromDay, toDay) {
      const rows = s.newVisitorRollup.all(siteId, fromDay, toDay) as {
        channel: string;
        source: string;
        campaign: string;
        landing_page: string;
        visitors: number;
      }[];
      // '' is the rollup's key for an absent source or campaign (migration 11).
      return rows.map((r) => ({
        channel: r.channel,
        source: r.source === "" ? undefined : r.source,
        campaign: r.campaign === "" ? undefined : r.campaign,
        landingPage: r.landing_page,
        visitors: r.visitors,
      }));
    },
    async revenueCells(siteId, from, to) {
      const rows = s.revenue.safeIntegers(true).all(siteId, from, to) as {
        day: string;
        currency: string;
        channel: string;
        source: string | null;
        campaign: string | null;
        landing_page: string | null;
        gross: bigint;
        refunds: bigint;
        chargebacks: bigint;
      }[];
      return rows.map((r) => ({
        day: r.day,
        currency: r.currency,
        channel: r.channel ?? UNATTRIBUTED,
        source: opt(r.source),
        campaign: opt(r.campaign),
        landingPage: opt(r.landing_page),
        grossMinor: r.gross,
        refundsMinor: r.refunds,
        chargebacksMinor: r.chargebacks,
      }));
    },
    async recentPayments(siteId, from, to, limit) {
      const rows = s.recent.all(siteId, from, to, limit) as {
        payment_id: string;
        customer_id: string;
        currency: string;
        amount_minor: number;
        kind: PaymentKind;
        paid_at: number;
        channel: string;
        source: string | null;
        campaign: string | null;
        landing_page: string | null;
      }[];
      return rows.map((r) => ({
        paymentId: r.payment_id,
        customerId: r.customer_id,
        currency: r.currency,
        amountMinor: r.amount_minor,
        kind: r.kind,
        paidAt: r.paid_at,
        channel: r.channel,
        source: opt(r.source),
        campaign: opt(r.campaign),
        landingPage: opt(r.landing_page),
      }));
    },
    async customerPayments(siteId, customerId, limit) {
      const rows = s.customerPayments.all(siteId, customerId, limit) as PaymentRow[];
      return rows.map(paymentFromRow);
    },
  };
}
