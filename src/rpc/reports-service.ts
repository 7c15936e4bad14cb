/** ReportsService: internal reads, behind ADMIN_TOKEN (src/rpc/admin-auth.ts). */
import type { ServiceImpl } from "@connectrpc/connect";
import type { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { formatMinorUnits } from "../domain/payments/money.js";
import type { Reports } from "../domain/reports.js";
import { UNATTRIBUTED } from "../domain/vocabulary.js";
import { toStoredEvent } from "./stored-event.js";

const iso = (ms: number) => new Date(ms).toISOString();
const money = (minor: number | bigint, currency: string) => ({
  currency,
  minorUnits: BigInt(minor),
  decimal: formatMinorUnits(minor, currency),
});

/** A first touch (stored on a customer or a visitor) as the proto Attribution. */
function attributionMessage(a: {
  channel: string;
  source?: string;
  medium?: string;
  campaign?: string;
  landingPage: string;
  visitorId: string;
  via?: string;
  touchedAt?: number;
  ts?: number;
}) {
  return {
    channel: a.channel,
    source: a.source,
    medium: a.medium,
    campaign: a.campaign,
    landingPage: a.landingPage,
    visitorId: a.visitorId,
    link: a.via ?? "",
    touchedAt: iso(a.touchedAt ?? a.ts ?? 0),
  };
}

/** The handlers; src/rpc/admin-auth.ts has authenticated every call before they run. */
export function createReportsService(deps: {
  reports: Reports;
}): ServiceImpl<typeof ReportsService> {
  const { reports } = deps;
  return {
    async listEvents(req) {
      const page = await reports.listEvents({
        siteId: req.siteId,
        limit: req.limit,
        from: req.from,
        to: req.to,
        pageToken: req.pageToken,
      });
      return {
        events: page.events.map(toStoredEvent),
        nextPageToken: page.nextPageToken,
      };
    },
    async getPayment(req) {
      const p = await reports.getPayment({ siteId: req.siteId, paymentId: req.paymentId });
      return {
        payment: {
          siteId: p.siteId,
          paymentId: p.paymentId,
          customerId: p.customerId,
          amount: money(p.amountMinor, p.currency),
          fee: p.feeMinor === undefined ? undefined : money(p.feeMinor, p.currency),
          kind: p.kind,
          status: p.status,
          paidAt: iso(p.paidAt),
          metadata: p.metadata,
          subscriptionId: p.subscriptionId,
          createdAt: iso(p.createdAt),
          updatedAt: iso(p.updatedAt),
          channel: p.attribution?.channel ?? p.erasedChannel ?? UNATTRIBUTED,
          attribution: p.attribution && attributionMessage(p.attribution),
        },
      };
    },
    async getCustomer(req) {
      const v = await reports.getCustomer({ siteId: req.siteId, customerId: req.customerId });
      const c = v.customer;
      return {
        customer: {
          siteId: c.siteId,
          customerId: c.customerId,
          email: c.email,
          userId: c.userId,
          name: c.name,
          country: c.country,
          visitorId: c.visitorId,
          metadata: c.metadata,
          createdAt: iso(c.createdAt),
          updatedAt: iso(c.updatedAt),
        },
        visitors: v.visitors.map((l) => ({
          visitorId: l.visitorId,
          link: l.via,
          linkedAt: iso(l.linkedAt),
          firstTouch: l.firstTouch && attributionMessage({ ...l.firstTouch, via: l.via }),
        })),
        firstTouch: v.firstTouch && attributionMessage(v.firstTouch),
      };
    },
    async revenueByChannel(req) {
      const rows = await reports.revenueByChannel({
        siteId: req.siteId,
        from: req.from,
        to: req.to,
      });
      return {
        rows: rows.map((r) => ({
          channel: r.channel,
          currency: r.currency,
          gross: money(r.grossMinor, r.currency),
          refunds: money(r.refundsMinor, r.currency),
          chargebacks: money(r.chargebacksMinor, r.currency),
          net: money(r.netMinor, r.currency),
          payments: BigInt(r.payments),
          payingCustomers: BigInt(r.payingCustomers),
        })),
      };
    },
    async mrr(req) {
      const v = await reports.mrr({ siteId: req.siteId, at: req.at });
      return {
        at: iso(v.at),
        rows: v.rows.map((r) => ({
          currency: r.currency,
          mrr: money(r.mrrMinor, r.currency),
          subscriptions: BigInt(r.subscriptions),
        })),
      };
    },
  };
}
