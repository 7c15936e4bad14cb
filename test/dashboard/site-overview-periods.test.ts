/**
 * SiteOverview's traffic and new visitors through a listening server, for
 * whole-day periods (read from the daily rollups) and periods with partial
 * days (whole days from the rollups, the edges from the events): both equal
 * what was sent, including an event sent after midnight with a `ts` of the
 * day before.
 */
import { toJson } from "@bufbuild/protobuf";
import { beforeAll, describe, expect, it } from "vitest";
import { ReportsService, SiteOverviewResponseSchema } from "../../gen/ingest/v1/reports_pb.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { createTestClock, postJson, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const clock = createTestClock(TEST_NOW);
const ctx = useTestServer({ clock });
const at = (iso: string) => Date.parse(iso);

/** Sends one event at the clock's `received` time; it must be stored. */
async function send(ip: string, received: string, body: Record<string, unknown>): Promise<void> {
  clock.set(at(received));
  const res = await postJson(
    `${ctx.url}/api/v1/events`,
    { s: ctx.siteId, ip, ua: BROWSER_UA, ...body },
    { key: ctx.key },
  );
  expect(res.status).toBe(204);
}

async function overview(from: string, to: string) {
  const res = await ctx
    .client(ReportsService)
    .siteOverview({ siteId: ctx.siteId, from, to }, { headers: ctx.adminHeaders });
  const json = toJson(SiteOverviewResponseSchema, res) as {
    newVisitors?: string;
    days: { day: string; visitors?: string; pageviews?: string }[];
    channels: { channel: string; newVisitors?: string }[];
  };
  return {
    newVisitors: Number(json.newVisitors ?? 0),
    days: json.days.map((d) => [d.day, Number(d.visitors ?? 0), Number(d.pageviews ?? 0)]),
    channels: json.channels.map((c) => [c.channel, Number(c.newVisitors ?? 0)]),
  };
}

describe("SiteOverview over whole and partial days", () => {
  beforeAll(async () => {
    // A: from Google, its first pageview sent 30 minutes late, after midnight.
    await send("198.51.100.21", "2026-03-10T00:20:00Z", {
      e: "pageview",
      u: "https://example.com/",
      r: "https://www.google.com/",
      ts: at("2026-03-09T23:50:00Z"),
    });
    await send("198.51.100.21", "2026-03-10T00:21:00Z", {
      e: "pageview",
      u: "https://example.com/pricing",
    });
    // B: direct, just after midnight; a custom event (not a pageview) later.
    await send("198.51.100.22", "2026-03-10T00:30:00Z", {
      e: "pageview",
      u: "https://example.com/",
    });
    await send("198.51.100.22", "2026-03-10T09:00:00Z", { e: "signup", u: "https://example.com/" });
    // C: from a newsletter, in the afternoon.
    await send("198.51.100.23", "2026-03-10T15:00:00Z", {
      e: "pageview",
      u: "https://example.com/?utm_source=newsletter&utm_medium=email",
    });
    clock.set(TEST_NOW);
  });

  it("a day-aligned period: every event on the day of its ts, new visitors by first touch", async () => {
    // Daily visitor ids: A's late pageview (ts on the 9th) and A's next one (the 10th)
    // are two visitor ids, the second a direct new visitor of the 10th.
    expect(await overview("2026-03-09T00:00:00Z", "2026-03-11T00:00:00Z")).toEqual({
      newVisitors: 4,
      days: [
        ["2026-03-09", 1, 1],
        ["2026-03-10", 3, 3],
      ],
      channels: [
        ["Direct", 2],
        ["Email", 1],
        ["Organic Search", 1],
      ],
    });
  });

  it("a period with partial days at both ends counts only what falls inside it", async () => {
    // [23:00 on the 9th, 09:00 on the 10th): A's late pageview, A's and B's pageviews
    // after midnight; not B's signup at 09:00.
    expect(await overview("2026-03-09T23:00:00Z", "2026-03-10T09:00:00Z")).toEqual({
      newVisitors: 3,
      days: [
        ["2026-03-09", 1, 1],
        ["2026-03-10", 2, 2],
      ],
      channels: [
        ["Direct", 2],
        ["Organic Search", 1],
      ],
    });
    // [00:25 on the 10th, 12:00 on the 11th), no whole day inside: B's two events
    // and C's pageview.
    expect(await overview("2026-03-10T00:25:00Z", "2026-03-11T12:00:00Z")).toEqual({
      newVisitors: 2,
      days: [
        ["2026-03-10", 2, 2],
        ["2026-03-11", 0, 0],
      ],
      channels: [
        ["Direct", 1],
        ["Email", 1],
      ],
    });
    // A whole day between partial ends: the 10th from the rollups, the edges (after
    // A's late pageview, before any event of the 11th) from the events.
    expect(await overview("2026-03-09T23:55:00Z", "2026-03-11T00:00:01Z")).toEqual({
      newVisitors: 3,
      days: [
        ["2026-03-09", 0, 0],
        ["2026-03-10", 3, 3],
        ["2026-03-11", 0, 0],
      ],
      channels: [
        ["Direct", 2],
        ["Email", 1],
      ],
    });
  });
});
