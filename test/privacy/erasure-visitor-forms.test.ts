/**
 * EraseVisitor by each form of a visitor id over Connect (issue 31): a daily
 * id, and `p:<vid>` (the stored form of a persistent id); every stored form
 * of that visitor goes and `customer.visitor_id` is cleared whichever form a
 * payment named it by.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { recordPayment, sendFrom } from "../helpers/events.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();
const VID = "Vid_forms-0123456789ab";

describe("EraseVisitor by a daily id and by p:<vid>", () => {
  const headers = () => ({ headers: ctx.adminHeaders });
  const reports = () => ctx.client(ReportsService);
  const erase = (visitorId: string) =>
    ctx
      .client(AdminService)
      .eraseVisitor(
        { siteId: ctx.siteId, visitorId, actorUserId: ctx.tenant.ownerUserId },
        headers(),
      );
  const visitorOf = async (customerId: string) =>
    (await reports().getCustomer({ siteId: ctx.siteId, customerId }, headers())).customer
      ?.visitorId ?? "";
  const storedVisitors = async () =>
    (await reports().listEvents({ siteId: ctx.siteId, limit: 50 }, headers())).events.map(
      (e) => e.visitorId,
    );
  const pay = (customerId: string, visitorId: string) =>
    recordPayment(ctx, {
      payment_id: `pay_${customerId}`,
      customer: { id: customerId, visitor_id: visitorId },
      amount: 10,
      currency: "USD",
      kind: "charge",
      paid_at: "2026-03-11T11:00:00Z",
    });
  let daily = "";

  beforeAll(async () => {
    await sendFrom(ctx, { e: "pageview", u: "https://example.com/p", vid: VID }, "203.0.113.20");
    await sendFrom(ctx, { e: "pageview", u: "https://example.com/d" }, "203.0.113.21");
    await sendFrom(ctx, { e: "pageview", u: "https://example.com/o" }, "203.0.113.22");
    const events = (await reports().listEvents({ siteId: ctx.siteId, limit: 50 }, headers()))
      .events;
    daily = events.find((e) => e.url.endsWith("/d"))?.visitorId ?? "";
    expect(daily).toMatch(/^[0-9a-f]{32}$/);
    expect(events.find((e) => e.url.endsWith("/p"))?.visitorId).toBe(`p:${VID}`);
    await pay("cus_bare", VID);
    await pay("cus_prefixed", `p:${VID}`);
    await pay("cus_daily", daily);
  });

  it("by p:<vid>: the persistent visitor's events and first touch go, and both customers naming it lose it", async () => {
    expect(await visitorOf("cus_bare")).toBe(VID);
    expect(await visitorOf("cus_prefixed")).toBe(`p:${VID}`);
    const counts = await erase(`p:${VID}`);
    expect(counts.events).toBe(1);
    expect(counts.touches).toBe(1);
    expect(await visitorOf("cus_bare")).toBe("");
    expect(await visitorOf("cus_prefixed")).toBe("");
    expect(await storedVisitors()).not.toContain(`p:${VID}`);
    expect(await visitorOf("cus_daily")).toBe(daily);
  });

  it("by a daily id: its events and first touch go and the customer naming it loses it", async () => {
    const counts = await erase(daily);
    expect(counts.events).toBe(1);
    expect(counts.touches).toBe(1);
    expect(await visitorOf("cus_daily")).toBe("");
    const left = await storedVisitors();
    expect(left).not.toContain(daily);
    expect(left).toHaveLength(1);
  });
});
