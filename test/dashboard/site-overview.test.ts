/** ReportsService.SiteOverview through a Connect client: the dashboard's numbers, beside RevenueByChannel and Mrr. */
import { toJson } from "@bufbuild/protobuf";
import { beforeAll, describe, expect, it } from "vitest";
import { ReportsService, SiteOverviewResponseSchema } from "../../gen/ingest/v1/reports_pb.js";
import { DEMO, seedDashboardDemo } from "../helpers/dashboard-data.js";
import { describeRpcError } from "../helpers/rpc-clients.js";
import { createTestClock, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const clock = createTestClock(TEST_NOW);
const ctx = useTestServer({ clock });
const reports = () => ctx.client(ReportsService);
const FROM = "2026-03-09T00:00:00Z";
const TO = "2026-03-12T00:00:00Z";

describe("ReportsService.SiteOverview and CustomerJourney", () => {
  beforeAll(async () => {
    await seedDashboardDemo({ url: ctx.url, siteId: ctx.siteId, key: ctx.key, clock });
  });

  it("answers the demo site's period with the numbers RevenueByChannel and Mrr give", async () => {
    const headers = ctx.adminHeaders;
    const overview = await reports().siteOverview(
      { siteId: ctx.siteId, from: FROM, to: TO },
      { headers },
    );
    const byChannel = await reports().revenueByChannel(
      { siteId: ctx.siteId, from: FROM, to: TO },
      { headers },
    );

    // The channel rows are RevenueByChannel's, row for row.
    const rows = overview.channels.flatMap((c) => c.revenue);
    const order = (r: { channel: string; currency: string }) => `${r.channel}/${r.currency}`;
    const sorted = <T extends { channel: string; currency: string }>(list: T[]) =>
      [...list].sort((a, b) => (order(a) < order(b) ? -1 : 1));
    expect(sorted(rows)).toEqual(sorted(byChannel.rows));

    const json = toJson(SiteOverviewResponseSchema, overview) as Record<string, unknown>;
    expect(json.from).toBe("2026-03-09T00:00:00.000Z");
    expect(json.to).toBe("2026-03-12T00:00:00.000Z");
    expect(json.newVisitors).toBe("5");
    const channels = json.channels as {
      channel: string;
      newVisitors: string;
      revenue?: {
        currency: string;
        gross: { decimal: string };
        refunds: { decimal: string };
        net: { decimal: string };
        payingCustomers: string;
      }[];
    }[];
    expect(
      channels.map((c) => [
        c.channel,
        c.newVisitors,
        (c.revenue ?? []).map(
          (r) =>
            `${r.currency} ${r.gross.decimal}-${r.refunds.decimal}=${r.net.decimal} (${r.payingCustomers})`,
        ),
      ]),
    ).toEqual([
      ["Paid Social", "2", []],
      ["Direct", "1", ["JPY 1500-0=1500 (1)"]],
      ["Email", "1", ["USD 99.00-0.00=99.00 (1)"]],
      ["Organic Search", "1", ["EUR 20.00-0.00=20.00 (1)", "USD 49.00-10.00=39.00 (1)"]],
      ["unattributed", undefined, ["USD 5.00-0.00=5.00 (1)"]],
    ]);

    expect(json.days).toEqual([
      {
        day: "2026-03-09",
        visitors: "1",
        pageviews: "2",
        netRevenue: [{ currency: "USD", minorUnits: "4900", decimal: "49.00" }],
      },
      {
        day: "2026-03-10",
        visitors: "1",
        pageviews: "1",
        netRevenue: [
          { currency: "EUR", minorUnits: "2000", decimal: "20.00" },
          { currency: "USD", minorUnits: "8900", decimal: "89.00" },
        ],
      },
      {
        day: "2026-03-11",
        visitors: "3",
        pageviews: "3",
        netRevenue: [
          { currency: "JPY", minorUnits: "1500", decimal: "1500" },
          { currency: "USD", minorUnits: "500", decimal: "5.00" },
        ],
      },
    ]);
    expect(json.topSourcesByVisitors).toEqual([
      { value: "facebook", newVisitors: "2" },
      {
        value: "Google",
        newVisitors: "1",
        netRevenue: [
          { currency: "EUR", minorUnits: "2000", decimal: "20.00" },
          { currency: "USD", minorUnits: "3900", decimal: "39.00" },
        ],
      },
      {
        value: "newsletter",
        newVisitors: "1",
        netRevenue: [{ currency: "USD", minorUnits: "9900", decimal: "99.00" }],
      },
    ]);
    expect(json.topCampaignsByRevenue).toEqual([
      {
        value: "spring",
        newVisitors: "1",
        netRevenue: [{ currency: "USD", minorUnits: "9900", decimal: "99.00" }],
      },
    ]);
    expect(
      (
        json.topLandingPagesByRevenue as {
          value: string;
          netRevenue: { decimal: string; currency: string }[];
        }[]
      ).map((e) => `${e.value} ${e.netRevenue[0]?.decimal} ${e.netRevenue[0]?.currency}`),
    ).toEqual([
      "https://example.com/ 20.00 EUR",
      "https://example.com/ 1500 JPY",
      "https://example.com/pricing 99.00 USD",
      "https://example.com/ 39.00 USD",
    ]);
    const recent = json.recentPayments as {
      paymentId: string;
      channel: string;
      source?: string;
      landingPage?: string;
    }[];
    expect(
      recent.map((p) => [p.paymentId, p.channel, p.source ?? "", p.landingPage ?? ""]),
    ).toEqual([
      ["pay_demo_direct_1", "Direct", "", "https://example.com/"],
      ["pay_demo_unknown_1", "unattributed", "", ""],
      [DEMO.newsletterPayment, "Email", "newsletter", "https://example.com/pricing"],
      ["pay_demo_google_3", "Organic Search", "Google", "https://example.com/"],
      ["pay_demo_google_2", "Organic Search", "Google", "https://example.com/"],
      [DEMO.googlePayment, "Organic Search", "Google", "https://example.com/"],
    ]);
    const mrr = await reports().mrr({ siteId: ctx.siteId, at: "" }, { headers });
    expect(overview.mrr).toEqual(mrr.rows);
    expect(json.mrr).toEqual([
      {
        currency: "USD",
        mrr: { currency: "USD", minorUnits: "825", decimal: "8.25" },
        subscriptions: "1",
      },
    ]);
  });

  it("refuses a missing, reversed or too long period, an unknown site and a missing token", async () => {
    const headers = ctx.adminHeaders;
    const call = (from: string, to: string, siteId = ctx.siteId) =>
      reports()
        .siteOverview({ siteId, from, to }, { headers })
        .then(() => undefined, describeRpcError);
    expect(await call("", TO)).toMatchObject({
      code: "invalid_argument",
      message: "from: required",
    });
    expect(await call(FROM, "")).toMatchObject({
      code: "invalid_argument",
      message: "to: required",
    });
    expect(await call(TO, FROM)).toMatchObject({
      code: "invalid_argument",
      message: "to: must be after from",
    });
    expect(await call("2025-01-01T00:00:00Z", "2026-01-03T00:00:00Z")).toMatchObject({
      code: "invalid_argument",
      message: "to: must be at most 366 days after from",
    });
    expect(await call("yesterday", TO)).toMatchObject({
      code: "invalid_argument",
      message: "from: must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
    });
    expect(await call(FROM, TO, "site_nope")).toMatchObject({
      code: "not_found",
      message: "site site_nope not found",
    });
    const noToken = await reports()
      .siteOverview({ siteId: ctx.siteId, from: FROM, to: TO })
      .then(() => undefined, describeRpcError);
    expect(noToken?.code).toBe("unauthenticated");
  });

  it("CustomerJourney is GetCustomer with the customer's payments, newest first", async () => {
    const headers = ctx.adminHeaders;
    const siteId = ctx.siteId;
    const customerId = DEMO.googleCustomer;
    const journey = await reports().customerJourney({ siteId, customerId }, { headers });
    const customer = await reports().getCustomer({ siteId, customerId }, { headers });
    expect(journey.customer).toEqual(customer.customer);
    expect(journey.visitors).toEqual(customer.visitors);
    expect(journey.firstTouch).toEqual(customer.firstTouch);
    expect(
      journey.payments.map(
        (p) => `${p.paymentId} ${p.kind} ${p.amount?.decimal} ${p.amount?.currency} ${p.channel}`,
      ),
    ).toEqual([
      "pay_demo_google_3 charge 20.00 EUR Organic Search",
      "pay_demo_google_2 refund 10.00 USD Organic Search",
      `${DEMO.googlePayment} charge 49.00 USD Organic Search`,
    ]);
    const one = await reports().getPayment({ siteId, paymentId: DEMO.googlePayment }, { headers });
    expect(journey.payments[2]).toEqual(one.payment);
    const missing = await reports()
      .customerJourney({ siteId, customerId: "cus_nope" }, { headers })
      .then(() => undefined, describeRpcError);
    expect(missing).toMatchObject({ code: "not_found", message: "customer cus_nope not found" });
  });
});
