/**
 * The site-overview lists in SQLite: a period's most recent payments and a
 * customer's payments. The overview's counts and sums are the analytics
 * engine's plans (src/domain/analytics/fixed-reports.ts).
 */
import type { PaymentKind, StoreOverviewPart } from "../port.js";
import { type Db, opt } from "./open-sqlite.js";
import { type PaymentRow, paymentFromRow } from "./payments.js";

export function createSqliteOverview(db: Db): StoreOverviewPart {
  const s = {
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
