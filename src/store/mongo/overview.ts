/** The site-overview reads in MongoDB: aggregations over one site's documents of a period. */
import type { Document } from "mongodb";
import { UNATTRIBUTED } from "../../domain/vocabulary.js";
import type { StoreOverviewPart } from "../port.js";
import { toBigInt } from "./attribution.js";
import { opt, toDate, toNumber } from "./documents.js";
import { paymentFromDoc } from "./payments.js";
import { BY_TOUCH_DIMENSIONS, readNewVisitorRollup, readTrafficRollup } from "./rollups.js";
import { type Collections, REVENUE_FIELDS } from "./schema.js";

/** Sums stay Long (exact), never doubles. */
const EXACT = { promoteLongs: false } as const;

/** The UTC day of a date field, as YYYY-MM-DD. */
const day = (field: string) => ({ $dateToString: { format: "%Y-%m-%d", date: field } });

const count = (v: unknown) => Number(toBigInt(v));

export function createMongoOverview(c: Collections): StoreOverviewPart {
  return {
    async trafficByDay(siteId, from, to) {
      const range = { $gte: toDate(from), $lt: toDate(to) };
      // Every bucket of the site is unpacked: events are bucketed by insertion
      // hour, not by ts. Only for the partial days at a period's ends: whole days
      // read the rollups (src/domain/overview-traffic.ts).
      const rows = await c.events
        .aggregate([
          { $match: { site_id: siteId } },
          { $unwind: "$events" },
          { $match: { "events.ts": range } },
          {
            $group: {
              _id: { day: day("$events.ts"), visitor: "$events.visitor_id" },
              pageviews: { $sum: { $cond: [{ $eq: ["$events.name", "pageview"] }, 1, 0] } },
            },
          },
          {
            $group: { _id: "$_id.day", visitors: { $sum: 1 }, pageviews: { $sum: "$pageviews" } },
          },
          { $sort: { _id: 1 } },
        ])
        .toArray();
      return rows.map((r) => ({
        day: r._id as string,
        visitors: count(r.visitors),
        pageviews: count(r.pageviews),
      }));
    },

    async newVisitorCounts(siteId, from, to) {
      const rows = await c.touches
        .aggregate([
          { $match: { site_id: siteId, ts: { $gte: toDate(from), $lt: toDate(to) } } },
          {
            $group: {
              _id: BY_TOUCH_DIMENSIONS,
              visitors: { $sum: 1 },
            },
          },
        ])
        .toArray();
      return rows.map((r) => {
        const k = r._id as Document;
        return {
          channel: k.channel as string,
          source: opt(k.source as string | undefined),
          campaign: opt(k.campaign as string | undefined),
          landingPage: k.landing_page as string,
          visitors: count(r.visitors),
        };
      });
    },

    trafficRollup: (siteId, fromDay, toDay) => readTrafficRollup(c, siteId, fromDay, toDay),

    newVisitorRollup: (siteId, fromDay, toDay) => readNewVisitorRollup(c, siteId, fromDay, toDay),

    async revenueBreakdown(siteId, from, to) {
      const net = {
        $sum: {
          $cond: [
            { $eq: ["$kind", "charge"] },
            "$amount_minor",
            { $subtract: [0, "$amount_minor"] },
          ],
        },
      };
      // A dimension's net per value and currency, leaving out payments without the value.
      const byValue = (field: string) => [
        { $match: { [field]: { $type: "string" } } },
        { $group: { _id: { value: `$${field}`, currency: "$currency" }, net } },
        { $sort: { "_id.value": 1, "_id.currency": 1 } },
      ];
      const [r] = await c.payments
        .aggregate(
          [
            {
              $match: {
                site_id: siteId,
                status: "succeeded",
                paid_at: { $gte: toDate(from), $lt: toDate(to) },
              },
            },
            // Only fields of site_status_paid_at_revenue: the index answers without the documents.
            { $project: { _id: 0, ...REVENUE_FIELDS } },
            {
              $facet: {
                days: [
                  { $group: { _id: { day: day("$paid_at"), currency: "$currency" }, net } },
                  { $sort: { "_id.day": 1, "_id.currency": 1 } },
                ],
                sources: byValue("attribution.source"),
                campaigns: byValue("attribution.campaign"),
                landingPages: byValue("attribution.landing_page"),
              },
            },
          ],
          EXACT,
        )
        .toArray();
      const values = (rows: Document[] | undefined) =>
        (rows ?? []).map((x) => ({
          value: (x._id as Document).value as string,
          currency: (x._id as Document).currency as string,
          netMinor: toBigInt(x.net),
        }));
      return {
        days: ((r?.days ?? []) as Document[]).map((x) => ({
          day: (x._id as Document).day as string,
          currency: (x._id as Document).currency as string,
          netMinor: toBigInt(x.net),
        })),
        sources: values(r?.sources),
        campaigns: values(r?.campaigns),
        landingPages: values(r?.landingPages),
      };
    },

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
