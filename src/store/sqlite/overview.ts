/**
 * The site-overview reads in SQLite: grouped scans over one site's rows of a
 * period (events, first touches, payments). They answer where the analytics
 * engine does not (src/domain/site-overview.ts); no daily cells are kept.
 */
import type {
  DailyNet,
  DailyTraffic,
  DimensionNet,
  PaymentKind,
  StoreOverviewPart,
} from "../port.js";
import { createNetSums } from "./net-sums.js";
import { type Db, opt } from "./open-sqlite.js";
import { type PaymentRow, paymentFromRow } from "./payments.js";

/** The UTC day of a Unix-millisecond column. */
const DAY = (column: string) => `strftime('%Y-%m-%d', ${column} / 1000, 'unixepoch')`;

export function createSqliteOverview(db: Db): StoreOverviewPart {
  const s = {
    // events_site, then the period's rows.
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
    // The period's succeeded payments, one by one, summed per day and dimension below.
    revenuePayments: db.prepare(
      `SELECT ${DAY("paid_at")}, currency,
         CASE kind WHEN 'charge' THEN amount_minor ELSE -amount_minor END,
         json_extract(attribution, '$.source'), json_extract(attribution, '$.campaign'),
         json_extract(attribution, '$.landingPage')
       FROM payments INDEXED BY payments_paid_at
       WHERE site_id = ? AND paid_at >= ? AND paid_at < ? AND status = 'succeeded'`,
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

  const readTraffic = async (siteId: string, from: number, to: number) => {
    const rows = s.traffic.all(siteId, from, to) as DailyTraffic[];
    return rows.map((r) => ({ day: r.day, visitors: r.visitors, pageviews: r.pageviews }));
  };
  const readNewVisitors = async (siteId: string, from: number, to: number) => {
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
  };

  return {
    trafficByDay: (siteId, from, to) => readTraffic(siteId, from, to),
    newVisitorCounts: (siteId, from, to) => readNewVisitors(siteId, from, to),
    // The port's whole-day reads (for the stores that keep daily cells) are the same scans here.
    trafficRollup: (siteId, fromDay, toDay) =>
      readTraffic(siteId, Date.parse(fromDay), Date.parse(toDay)),
    newVisitorRollup: (siteId, fromDay, toDay) =>
      readNewVisitors(siteId, Date.parse(fromDay), Date.parse(toDay)),
    async revenueBreakdown(siteId, from, to) {
      const days = createNetSums<DailyNet>((day) => ({ day }));
      const dims = {
        source: createNetSums<DimensionNet>((value) => ({ value })),
        campaign: createNetSums<DimensionNet>((value) => ({ value })),
        landing_page: createNetSums<DimensionNet>((value) => ({ value })),
      };
      // Rows as arrays: no per-row object of column names.
      const rows = s.revenuePayments
        .safeIntegers(true)
        .raw(true)
        .all(siteId, from, to) as unknown[][];
      for (const [day, currency, net, source, campaign, landingPage] of rows) {
        const c = currency as string;
        const n = net as bigint;
        days.add(day as string, c, n);
        if (source !== null) dims.source.add(source as string, c, n);
        if (campaign !== null) dims.campaign.add(campaign as string, c, n);
        if (landingPage !== null) dims.landing_page.add(landingPage as string, c, n);
      }
      return {
        days: days.list(),
        sources: dims.source.list(),
        campaigns: dims.campaign.list(),
        landingPages: dims.landing_page.list(),
      };
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
