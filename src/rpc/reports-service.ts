/** ReportsService: reads, behind ADMIN_TOKEN or a site's reports key (src/rpc/reports-auth.ts). */
import type { ServiceImpl } from "@connectrpc/connect";
import type { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import type { CustomerView, MrrView, Reports, RevenueView } from "../domain/reports.js";
import type { TopEntryView } from "../domain/site-overview.js";
import { toStoredEvent } from "../edge/stored-event.js";
import { attributionMessage, iso, money, paymentMessage } from "../edge/stored-payment.js";
import { reportsPrincipalKey } from "./reports-auth.js";

/** A revenue row (RevenueByChannel, SiteOverview) as the proto ChannelRevenue. */
function channelRevenue(r: RevenueView) {
  return {
    channel: r.channel,
    currency: r.currency,
    gross: money(r.grossMinor, r.currency),
    refunds: money(r.refundsMinor, r.currency),
    chargebacks: money(r.chargebacksMinor, r.currency),
    net: money(r.netMinor, r.currency),
    payments: BigInt(r.payments),
    payingCustomers: BigInt(r.payingCustomers),
  };
}

/** An MRR row (Mrr, SiteOverview) as the proto CurrencyMrr. */
function currencyMrr(r: MrrView["rows"][number]) {
  return {
    currency: r.currency,
    mrr: money(r.mrrMinor, r.currency),
    subscriptions: BigInt(r.subscriptions),
  };
}

/** A customer view (GetCustomer, CustomerJourney) as the proto's customer, visitors and first touch. */
function customerMessage(v: CustomerView) {
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
    async *exportEvents(req) {
      const pages = await reports.exportEvents({ siteId: req.siteId, from: req.from, to: req.to });
      // Each yield waits until the transport has taken the message: the
      // next page is read only then. A cancelled call ends this loop, which
      // returns the pages' iterator and so stops the reads.
      for await (const events of pages) yield { events: events.map(toStoredEvent) };
    },
    async *exportPayments(req) {
      const pages = await reports.exportPayments({
        siteId: req.siteId,
        from: req.from,
        to: req.to,
      });
      for await (const payments of pages) yield { payments: payments.map(paymentMessage) };
    },
    async getPayment(req) {
      const p = await reports.getPayment({ siteId: req.siteId, paymentId: req.paymentId });
      return {
        payment: paymentMessage(p),
      };
    },
    async getCustomer(req) {
      const v = await reports.getCustomer({ siteId: req.siteId, customerId: req.customerId });
      return customerMessage(v);
    },
    async revenueByChannel(req) {
      const rows = await reports.revenueByChannel({
        siteId: req.siteId,
        from: req.from,
        to: req.to,
      });
      return {
        rows: rows.map(channelRevenue),
      };
    },
    async customerJourney(req) {
      const v = await reports.customerJourney({ siteId: req.siteId, customerId: req.customerId });
      return { ...customerMessage(v), payments: v.payments.map(paymentMessage) };
    },
    async siteOverview(req) {
      const v = await reports.siteOverview({ siteId: req.siteId, from: req.from, to: req.to });
      const amounts = (list: { currency: string; minor: bigint }[]) =>
        list.map((a) => money(a.minor, a.currency));
      const top = (entries: TopEntryView[]) =>
        entries.map((e) => ({
          value: e.value,
          newVisitors: BigInt(e.newVisitors),
          netRevenue: amounts(e.net),
        }));
      return {
        from: iso(v.from),
        to: iso(v.to),
        newVisitors: BigInt(v.newVisitors),
        channels: v.channels.map((c) => ({
          channel: c.channel,
          newVisitors: BigInt(c.newVisitors),
          revenue: c.revenue.map(channelRevenue),
        })),
        days: v.days.map((d) => ({
          day: d.day,
          visitors: BigInt(d.visitors),
          pageviews: BigInt(d.pageviews),
          netRevenue: amounts(d.net),
        })),
        topSourcesByVisitors: top(v.sources.byVisitors),
        topCampaignsByVisitors: top(v.campaigns.byVisitors),
        topLandingPagesByVisitors: top(v.landingPages.byVisitors),
        topSourcesByRevenue: top(v.sources.byRevenue),
        topCampaignsByRevenue: top(v.campaigns.byRevenue),
        topLandingPagesByRevenue: top(v.landingPages.byRevenue),
        mrr: v.mrr.rows.map(currencyMrr),
        recentPayments: v.recentPayments.map((p) => ({
          paymentId: p.paymentId,
          customerId: p.customerId,
          amount: money(p.amountMinor, p.currency),
          kind: p.kind,
          paidAt: iso(p.paidAt),
          channel: p.channel,
          source: p.source,
          campaign: p.campaign,
          landingPage: p.landingPage,
        })),
      };
    },
    async mrr(req) {
      const v = await reports.mrr({ siteId: req.siteId, at: req.at });
      return {
        at: iso(v.at),
        rows: v.rows.map(currencyMrr),
      };
    },
    async getAccess(_req, ctx) {
      // The interceptor authorized the call, so the principal is there.
      const principal = ctx.values.get(reportsPrincipalKey);
      if (!principal) throw new Error("GetAccess ran without an authorized principal");
      return principal.kind === "reports_key"
        ? { kind: principal.kind, siteId: principal.siteId }
        : { kind: principal.kind, siteId: "" };
    },
  };
}
