/**
 * The demo's month (src/cli/demo-data.ts) sent to a real server through its
 * doors, with the server's test clock moved by the loader: the numbers land
 * (ListEvents counts every event sent, RevenueByChannel has USD and EUR rows,
 * a refund and a chargeback are stored, Stripe's deliveries became payments
 * and subscriptions), and the same seed and end give the same data.
 */
import { describe, expect, it } from "vitest";
import { ReportsService } from "../../../gen/ingest/v1/reports_pb.js";
import { type DemoSummary, loadDemoMonth } from "../../../src/cli/demo-data.js";
import { createTestClock, TEST_NOW } from "../../helpers/test-server.js";
import { scaled } from "../../helpers/timeouts.js";
import { type TestServerContext, useTestServer } from "../../helpers/use-test-server.js";

const DAY = 86_400_000;
const SECRET = "whsec_demo_test_secret_0123456789";
const iso = (ms: number) => new Date(ms).toISOString();

/** Loads the month into ctx's site; returns the summary. */
async function load(ctx: TestServerContext, clock: ReturnType<typeof createTestClock>) {
  const connector = await ctx.server.admin.createConnector({
    siteId: ctx.siteId,
    provider: "stripe",
    secret: SECRET,
    actorUserId: ctx.tenant.ownerUserId,
  });
  return loadDemoMonth(
    {
      url: ctx.url,
      key: ctx.key,
      siteId: ctx.siteId,
      connector: { id: connector.connectorId, secret: SECRET },
      setNow: (ms) => clock.set(ms),
    },
    { end: TEST_NOW },
  );
}

/** Every stored event of the site, counted page by page. */
async function countEvents(ctx: TestServerContext): Promise<number> {
  const reports = ctx.client(ReportsService);
  let count = 0;
  let pageToken = "";
  do {
    const page = await reports.listEvents(
      { siteId: ctx.siteId, limit: 1000, pageToken },
      { headers: ctx.adminHeaders },
    );
    count += page.events.length;
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return count;
}

/** What a payment is, without the ids the server makes (visitor ids are salted per server). */
const paymentLine = (p: Awaited<ReturnType<typeof paymentsOf>>[number]) =>
  [
    p.paymentId,
    p.kind,
    p.status,
    p.amount?.currency,
    p.amount?.minorUnits,
    p.paidAt,
    p.channel,
  ].join(" ");

/** The first server's data, compared with the second's. */
const first: { summary?: DemoSummary; payments?: string[] } = {};

async function paymentsOf(ctx: TestServerContext) {
  const stream = ctx
    .client(ReportsService)
    .exportPayments(
      { siteId: ctx.siteId, from: iso(TEST_NOW - 40 * DAY), to: iso(TEST_NOW + DAY) },
      { headers: ctx.adminHeaders },
    );
  const all = [];
  for await (const page of stream) all.push(...page.payments);
  return all;
}

// A month through the doors: seconds alone, more on a loaded machine.
describe("the demo's month", { timeout: scaled(120_000) }, () => {
  const clock = createTestClock();
  const ctx = useTestServer({ clock });
  let summary: DemoSummary;

  it("sends a few thousand visitors, their events and payments through the doors", async () => {
    summary = await load(ctx, clock);
    expect(summary.visitors).toBeGreaterThan(2000);
    expect(summary.visitors).toBeLessThan(5000);
    expect(summary.identifies).toBeGreaterThan(100);
    expect(summary.payments).toBeGreaterThan(50);
    expect(summary.stripeDeliveries).toBeGreaterThan(summary.payments / 2);
    expect([summary.refunds, summary.chargebacks]).toEqual([2, 1]);
  });

  it("stores every event it sent (ListEvents, page by page)", async () => {
    expect(await countEvents(ctx)).toBe(summary.events);
  });

  it("fills RevenueByChannel in USD and EUR over several channels", async () => {
    const { rows } = await ctx
      .client(ReportsService)
      .revenueByChannel(
        { siteId: ctx.siteId, from: iso(TEST_NOW - 30 * DAY), to: iso(TEST_NOW + 1) },
        { headers: ctx.adminHeaders },
      );
    expect(new Set(rows.map((r) => r.currency))).toEqual(new Set(["EUR", "USD"]));
    const channels = new Set(rows.map((r) => r.channel));
    for (const c of ["Organic Search", "Paid Search", "Email", "Direct"]) {
      expect(channels).toContain(c);
    }
    expect(rows.some((r) => (r.refunds?.minorUnits ?? 0n) > 0n)).toBe(true);
    expect(rows.some((r) => (r.chargebacks?.minorUnits ?? 0n) > 0n)).toBe(true);
  });

  it("stores a refund and a chargeback, and Stripe's charges and subscriptions", async () => {
    const payments = await paymentsOf(ctx);
    first.summary = summary;
    first.payments = payments.map(paymentLine);
    expect(payments).toHaveLength(summary.payments + summary.refunds + summary.chargebacks);
    const kinds = payments.map((p) => `${p.kind}:${p.status}`);
    expect(kinds.filter((k) => k === "refund:succeeded")).toHaveLength(2);
    expect(kinds.filter((k) => k === "chargeback:succeeded")).toHaveLength(1);
    expect(payments.filter((p) => p.paymentId.startsWith("ch_demo_")).length).toBeGreaterThan(10);
    const mrr = await ctx
      .client(ReportsService)
      .mrr({ siteId: ctx.siteId, at: iso(TEST_NOW) }, { headers: ctx.adminHeaders });
    expect(new Set(mrr.rows.map((c) => c.currency))).toEqual(new Set(["EUR", "USD"]));
  });
});

describe("the demo's month, again", { timeout: scaled(120_000) }, () => {
  const clock = createTestClock();
  const ctx = useTestServer({ clock });

  it("is the same for the same seed and end: the same counts and the same payments", async () => {
    expect(await load(ctx, clock)).toEqual(first.summary);
    expect((await paymentsOf(ctx)).map(paymentLine)).toEqual(first.payments);
  });
});
