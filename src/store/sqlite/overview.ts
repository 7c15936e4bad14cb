/** The site-overview reads in SQLite: grouped scans over one site's rows of a period. */
import type { DailyNet, DimensionNet, PaymentKind, StoreOverviewPart } from "../port.js";
import { type Db, opt } from "./open-sqlite.js";
import { type PaymentRow, paymentFromRow } from "./payments.js";
import { createNetSums, periodParts } from "./revenue-days.js";

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
    // The whole days of the period (revenue-days.ts), from the daily rows of migration 12.
    revenueDays: db.prepare(
      `SELECT day, currency, sum(gross - refunds - chargebacks)
       FROM revenue_days WHERE site_id = ? AND day >= ? AND day < ?
       GROUP BY day, currency`,
    ),
    revenueDims: db.prepare(
      `SELECT dimension, value, currency, sum(net)
       FROM revenue_dims WHERE site_id = ? AND day >= ? AND day < ?
       GROUP BY dimension, value, currency`,
    ),
    // The partial days at either end: their payments, one by one (a day's worth at most).
    revenueEdge: db.prepare(
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
    async revenueBreakdown(siteId, from, to) {
      const parts = periodParts(from, to);
      const days = createNetSums<DailyNet>((day) => ({ day }));
      const dims = {
        source: createNetSums<DimensionNet>((value) => ({ value })),
        campaign: createNetSums<DimensionNet>((value) => ({ value })),
        landing_page: createNetSums<DimensionNet>((value) => ({ value })),
      };
      // Rows as arrays: no per-row object of column names.
      const read = (st: typeof s.revenueDays, ...args: unknown[]) =>
        st
          .safeIntegers(true)
          .raw(true)
          .all(...args) as unknown[][];
      for (const [day, currency, net] of read(
        s.revenueDays,
        siteId,
        parts.firstDay,
        parts.endDay,
      )) {
        days.add(day as string, currency as string, net as bigint);
      }
      for (const [dimension, value, currency, net] of read(
        s.revenueDims,
        siteId,
        parts.firstDay,
        parts.endDay,
      )) {
        dims[dimension as keyof typeof dims].add(
          value as string,
          currency as string,
          net as bigint,
        );
      }
      for (const range of [parts.head, parts.tail]) {
        for (const [day, currency, net, source, campaign, landingPage] of read(
          s.revenueEdge,
          siteId,
          ...range,
        )) {
          const c = currency as string;
          const n = net as bigint;
          days.add(day as string, c, n);
          if (source !== null) dims.source.add(source as string, c, n);
          if (campaign !== null) dims.campaign.add(campaign as string, c, n);
          if (landingPage !== null) dims.landing_page.add(landingPage as string, c, n);
        }
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
