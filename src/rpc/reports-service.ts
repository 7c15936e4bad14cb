/** ReportsService: reads, behind ADMIN_TOKEN or a site's reports key (src/rpc/reports-auth.ts). */
import type { ServiceImpl } from "@connectrpc/connect";
import type { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import type { AnalyticsApp } from "../domain/analytics/analytics-app.js";
import type { Reports } from "../domain/reports.js";
import {
  funnelFields,
  funnelResponseMessage,
  queryFields,
  queryResponseMessage,
} from "../edge/analytics-messages.js";
import {
  accessMessage,
  channelRevenue,
  currencyMrr,
  customerJourneyMessage,
  customerMessage,
  siteOverviewMessage,
} from "../edge/report-messages.js";
import { toStoredEvent } from "../edge/stored-event.js";
import { iso, paymentMessage } from "../edge/stored-payment.js";
import { reportsPrincipalKey } from "./reports-auth.js";

/** The handlers; src/rpc/admin-auth.ts has authenticated every call before they run. */
export function createReportsService(deps: {
  reports: Reports;
  queries: AnalyticsApp;
}): ServiceImpl<typeof ReportsService> {
  const { reports, queries } = deps;
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
    // Answered by the analytics engine; a cancelled call interrupts its query.
    async query(req, ctx) {
      const { plan, result } = await queries.query(queryFields(req), ctx.signal);
      return queryResponseMessage(plan, result);
    },
    async funnel(req, ctx) {
      const { plan, result } = await queries.funnel(funnelFields(req), ctx.signal);
      return funnelResponseMessage(plan, result);
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
      return customerJourneyMessage(v);
    },
    async siteOverview(req) {
      const v = await reports.siteOverview({ siteId: req.siteId, from: req.from, to: req.to });
      return siteOverviewMessage(v);
    },
    async mrr(req) {
      const v = await reports.mrr({ siteId: req.siteId, at: req.at });
      return {
        at: iso(v.at),
        rows: v.rows.map(currencyMrr),
      };
    },
    async getAccess(req, ctx) {
      // The interceptor authorized the call, so the principal is there.
      const principal = ctx.values.get(reportsPrincipalKey);
      if (!principal) throw new Error("GetAccess ran without an authorized principal");
      return accessMessage(await reports.access(principal, req.siteId));
    },
  };
}
