/**
 * Erasing a visitor reaches what SiteOverview counts (issue 31, defect 4): a
 * URL and UTM values carrying an email, counted among the new visitors and
 * revenue, leave SiteOverview and every file of the data directory. No
 * daily rollup keeps a count of them (migration 20 dropped the rollups): the
 * overview counts the rows that are left, so the erased visitor no longer
 * counts at all (docs/privacy.md).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { toJson } from "@bufbuild/protobuf";
import { beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { ReportsService, SiteOverviewResponseSchema } from "../../gen/ingest/v1/reports_pb.js";
import { recordPayment, sendFrom } from "../helpers/events.js";
import { createTestClock, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const DAY = 86_400_000;
const EMAIL = "ada.lovelace@example.com";
const clock = createTestClock(TEST_NOW - 2 * DAY);
const ctx = useTestServer({ clock });
// Whole UTC days (what the dashboard asks for).
const PERIOD = { from: "2026-03-09T00:00:00Z", to: "2026-03-11T00:00:00Z" };

describe("EraseVisitor and the daily rollups", () => {
  const headers = () => ({ headers: ctx.adminHeaders });
  const overview = async () =>
    toJson(
      SiteOverviewResponseSchema,
      await ctx.client(ReportsService).siteOverview({ siteId: ctx.siteId, ...PERIOD }, headers()),
    ) as {
      newVisitors: string;
      topSourcesByVisitors?: { value: string; newVisitors: string }[];
      topCampaignsByVisitors?: { value: string; newVisitors: string }[];
      topLandingPagesByVisitors?: { value: string; newVisitors: string }[];
      topLandingPagesByRevenue?: { value: string }[];
    };
  let ada = "";

  beforeAll(async () => {
    await sendFrom(
      ctx,
      {
        e: "pageview",
        u: `https://example.com/welcome/${EMAIL}?utm_source=${EMAIL}&utm_campaign=c-${EMAIL}`,
      },
      "203.0.113.9",
    );
    await sendFrom(
      ctx,
      { e: "pageview", u: "https://example.com/pricing?utm_source=google" },
      "203.0.113.10",
    );
    const events = (
      await ctx.client(ReportsService).listEvents({ siteId: ctx.siteId, limit: 10 }, headers())
    ).events;
    ada = events.find((e) => e.url.includes("/welcome/"))?.visitorId ?? "";
    expect(ada).toMatch(/^[0-9a-f]{32}$/);
    // A payment credited to Ada's first touch: the revenue rollup's dimensions carry it too.
    await recordPayment(ctx, {
      payment_id: "pay_ada",
      customer: { id: "cus_ada", visitor_id: ada },
      amount: 49,
      currency: "USD",
      kind: "charge",
      paid_at: new Date(TEST_NOW - 2 * DAY + 60_000).toISOString(),
    });
    clock.set(TEST_NOW);
  });

  it("SiteOverview stops listing the erased visitor's source, campaign and landing page; the visitor no longer counts", async () => {
    const before = await overview();
    expect(before.newVisitors).toBe("2");
    expect(before.topSourcesByVisitors?.map((t) => t.value)).toContain(EMAIL);
    expect(before.topCampaignsByVisitors?.map((t) => t.value)).toEqual([`c-${EMAIL}`]);
    expect(before.topLandingPagesByVisitors?.map((t) => t.value)).toContain(
      `https://example.com/welcome/${EMAIL}`,
    );
    expect(before.topLandingPagesByRevenue?.map((t) => t.value)).toEqual([
      `https://example.com/welcome/${EMAIL}`,
    ]);

    await ctx
      .client(AdminService)
      .eraseVisitor(
        { siteId: ctx.siteId, visitorId: ada, actorUserId: ctx.tenant.ownerUserId },
        headers(),
      );

    const after = await overview();
    expect(JSON.stringify(after)).not.toContain(EMAIL);
    expect(after.newVisitors).toBe("1");
    expect(after.topSourcesByVisitors).toEqual([{ value: "google", newVisitors: "1" }]);
    expect(after.topCampaignsByVisitors ?? []).toEqual([]);
    expect(after.topLandingPagesByVisitors?.map((t) => [t.value, t.newVisitors]).sort()).toEqual([
      ["https://example.com/pricing", "1"],
    ]);
    expect(after.topLandingPagesByRevenue ?? []).toEqual([]);
  });

  it("after a clean stop no file of the data directory holds the email", async () => {
    await ctx.server.app.close();
    const files = readdirSync(ctx.server.dir);
    expect(files).toContain("ingest.sqlite");
    for (const file of files) {
      const bytes = readFileSync(join(ctx.server.dir, file));
      expect(bytes.includes(EMAIL), file).toBe(false);
      expect(bytes.includes(encodeURIComponent(EMAIL)), file).toBe(false);
    }
  });
});
