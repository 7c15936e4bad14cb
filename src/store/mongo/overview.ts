/**
 * The site-overview lists in MongoDB: a period's most recent payments and a
 * customer's payments. The overview's counts and sums are the analytics
 * engine's plans (src/domain/analytics/fixed-reports.ts).
 */
import { UNATTRIBUTED } from "../../domain/vocabulary.js";
import type { StoreOverviewPart } from "../port.js";
import { opt, toDate, toNumber } from "./documents.js";
import { paymentFromDoc } from "./payments.js";
import type { Collections } from "./schema.js";

export function createMongoOverview(c: Collections): StoreOverviewPart {
  return {
    async recentPayments(siteId, from, to, limit) {
      const docs = await c.payments
        .find({
          site_id: siteId,
          status: "succeeded",
          paid_at: { $gte: toDate(from), $lt: toDate(to) },
        })
        .sort({ paid_at: -1, payment_id: -1 })
        // The index in the sort's order, walked from the newest: the scan stops
        // after `limit` succeeded payments instead of sorting the whole period.
        .hint("site_paid_at_payment")
        .limit(limit)
        .toArray();
      return docs.map((d) => ({
        paymentId: d.payment_id,
        customerId: d.customer_id,
        currency: d.currency,
        amountMinor: toNumber(d.amount_minor),
        kind: d.kind,
        paidAt: d.paid_at.getTime(),
        channel: d.channel ?? UNATTRIBUTED,
        source: opt(d.attribution?.source),
        campaign: opt(d.attribution?.campaign),
        landingPage: opt(d.attribution?.landing_page),
      }));
    },

    async customerPayments(siteId, customerId, limit) {
      const docs = await c.payments
        .find({ site_id: siteId, customer_id: customerId })
        .sort({ paid_at: -1, payment_id: -1 })
        .limit(limit)
        .toArray();
      return docs.map(paymentFromDoc);
    },
  };
}
