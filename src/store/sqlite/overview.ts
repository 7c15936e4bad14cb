/** The site-overview reads in SQLite: grouped scans over one site's rows of a period. */
import type { PaymentKind, StoreOverviewPart } from "../port.js";
import { type Db, opt } from "./open-sqlite.js";
import { type PaymentRow, paymentFromRow } from "./payments.js";
import { exactSum, periodParts } from "./revenue-days.js";

/** The UTC day of a Unix-millisecond column. */
const DAY = (column: string) => `strftime('%Y-%m-%d', ${column} / 1000, 'unixepoch')`;

export function createSqliteOverview(db: Db): StoreOverviewPart {
  const s = {
    // events_site, then the period's rows: daily rollups replace this scan later (docs/dashboard.md).
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
    // The payments of a partial day at either end of the period (revenue-days.ts).
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
    // The whole days: the cells as revenue_days keeps them (migration 12).
    revenueDays: db.prepare(
      `SELECT day, currency, channel, source, campaign, landing_page, gross, refunds, chargebacks
       FROM revenue_days WHERE site_id = ? AND day >= ? AND day < ?`,
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
    async revenueCells(siteId, from, to) {
      const parts = periodParts(from, to);
      // Rows as arrays: no per-row object of column names (thousands of cells over 90 days).
      const rows = [
        ...s.revenue
          .safeIntegers(true)
          .raw(true)
          .all(siteId, ...parts.head),
        ...s.revenueDays.safeIntegers(true).raw(true).all(siteId, parts.firstDay, parts.endDay),
        ...s.revenue
          .safeIntegers(true)
          .raw(true)
          .all(siteId, ...parts.tail),
      ] as [
        day: string,
        currency: string,
        channel: string,
        source: string | null,
        campaign: string | null,
        landingPage: string | null,
        gross: bigint,
        refunds: bigint,
        chargebacks: bigint,
      ][];
      return rows.map(([day, currency, channel, source, campaign, landingPage, g, r, c]) => ({
        day,
        currency,
        channel,
        source: opt(source),
        campaign: opt(campaign),
        landingPage: opt(landingPage),
        grossMinor: exactSum(g),
        refundsMinor: exactSum(r),
        chargebacksMinor: exactSum(c),
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
