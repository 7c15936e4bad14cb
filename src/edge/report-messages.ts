/**
 * ReportsService's answers as their proto messages (the init objects of the
 * generated schemas), from the reports' views: shared by the RPC door and
 * the REST routes of the same methods (src/http/reports/), which send the
 * proto JSON of the same message, so both answer identical JSON.
 */
import type { AccessView, CustomerView, MrrView, RevenueView } from "../domain/reports.js";
import type { SiteOverviewView, TopEntryView } from "../domain/site-overview.js";
import type { PaymentRecord } from "../domain/store/store.js";
import { attributionMessage, iso, money, paymentMessage } from "./stored-payment.js";

/** A revenue row (RevenueByChannel, SiteOverview) as the proto ChannelRevenue. */
export function channelRevenue(r: RevenueView) {
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
export function currencyMrr(r: MrrView["rows"][number]) {
  return {
    currency: r.currency,
    mrr: money(r.mrrMinor, r.currency),
    subscriptions: BigInt(r.subscriptions),
  };
}

/** A customer view (GetCustomer, CustomerJourney) as the proto's customer, visitors and first touch. */
export function customerMessage(v: CustomerView) {
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
      persistentId: l.persistentId,
    })),
    firstTouch: v.firstTouch && attributionMessage(v.firstTouch),
  };
}

/** A SiteOverview view (with its MRR) as the proto SiteOverviewResponse. */
export function siteOverviewMessage(v: SiteOverviewView & { mrr: MrrView }) {
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
}

/** A customer's journey as the proto CustomerJourneyResponse. */
export function customerJourneyMessage(v: CustomerView & { payments: PaymentRecord[] }) {
  return { ...customerMessage(v), payments: v.payments.map(paymentMessage) };
}

/** What a caller reads, as the proto GetAccessResponse: one site, or every site (""). */
export function accessMessage(v: AccessView) {
  return { kind: v.kind, siteId: v.siteId ?? "", hostnames: v.hostnames };
}
