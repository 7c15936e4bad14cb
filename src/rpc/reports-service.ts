/** ReportsService: internal reads, behind ADMIN_TOKEN. */
import type { JsonObject } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { formatMinorUnits } from "../domain/payments/money.js";
import type { Reports } from "../domain/reports.js";
import { guard } from "./admin-service.js";

const iso = (ms: number) => new Date(ms).toISOString();
const money = (minor: number, currency: string) => ({
  currency,
  minorUnits: BigInt(minor),
  decimal: formatMinorUnits(minor, currency),
});

export function createReportsService(deps: {
  reports: Reports;
  adminToken: string | undefined;
}): ServiceImpl<typeof ReportsService> {
  const { reports, adminToken } = deps;
  return {
    async listEvents(req, ctx) {
      guard(adminToken, ctx);
      const events = await reports.listEvents({ siteId: req.siteId, limit: req.limit });
      return {
        events: events.map((e) => ({
          siteId: e.siteId,
          name: e.name,
          url: e.url,
          referrer: e.referrer,
          title: e.title,
          width: e.width,
          language: e.language,
          props: e.props as JsonObject | undefined,
          ts: BigInt(e.ts),
          receivedAt: BigInt(e.receivedAt),
          visitorId: e.visitorId,
          userId: e.userId,
          country: e.country,
          browser: e.browser,
          os: e.os,
          device: e.device,
          referrerHost: e.referrerHost,
          utmSource: e.utmSource,
          utmMedium: e.utmMedium,
          utmCampaign: e.utmCampaign,
          utmTerm: e.utmTerm,
          utmContent: e.utmContent,
          clickIds: e.clickIds ?? {},
        })),
      };
    },
    async getPayment(req, ctx) {
      guard(adminToken, ctx);
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
        },
      };
    },
  };
}
