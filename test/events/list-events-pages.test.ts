/**
 * ReportsService.ListEvents pages (issue 24): a time range and a stable
 * cursor, newest first, over Connect and gRPC against a listening server.
 */
import { describe, expect, it } from "vitest";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { sendTagged, tagOf } from "../helpers/events.js";
import { type Protocol, rpcError } from "../helpers/rpc-clients.js";
import { TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();
const iso = (ms: number) => new Date(ms).toISOString();

/** Sends pageviews tagged `tags` to the test site, event times given. */
const send = (tags: number[], ts?: (tag: number) => number) =>
  sendTagged(ctx.url, ctx.tenant, tags, ts);

describe("ListEvents pages", () => {
  const reports = (protocol: Protocol = "connect") => ctx.client(ReportsService, protocol);
  const headers = () => ({ headers: ctx.adminHeaders });

  it.each(["connect", "grpc"] as Protocol[])(
    "pages through every event exactly once while new ones arrive (%s)",
    async (protocol) => {
      const base = protocol === "connect" ? 0 : 10_000;
      for (let i = 0; i < 6; i++)
        await send(Array.from({ length: 20 }, (_, j) => base + i * 20 + j));
      const from = iso(TEST_NOW - 60_000);
      const seen: number[] = [];
      let pageToken = "";
      let pages = 0;
      let arriving = base + 1000;
      do {
        const page = await reports(protocol).listEvents(
          { siteId: ctx.siteId, limit: 25, from, pageToken },
          headers(),
        );
        seen.push(
          ...page.events.map((e) => tagOf(e.url)).filter((t) => t >= base && t < base + 1000),
        );
        pageToken = page.nextPageToken;
        pages++;
        // Arrivals between pages are newer than every page: never in this paging.
        await send([arriving++, arriving++]);
      } while (pageToken !== "");
      expect(seen).toEqual(Array.from({ length: 120 }, (_, i) => base + 119 - i));
      expect(pages).toBeGreaterThanOrEqual(5);
    },
  );

  it("keeps events with ts in [from, to) only", async () => {
    const t = TEST_NOW - 600_000;
    await send([50_000, 50_001, 50_002, 50_003], (tag) => t + (tag - 50_000) * 1000);
    const page = await reports().listEvents(
      { siteId: ctx.siteId, limit: 10, from: iso(t + 1000), to: iso(t + 3000) },
      headers(),
    );
    expect(page.events.map((e) => tagOf(e.url))).toEqual([50_002, 50_001]);
    expect(page.nextPageToken).toBe("");
  });

  it("refuses a bad page token, a bad time and a reversed range with exact messages", async () => {
    const call = (req: { from?: string; to?: string; pageToken?: string }) =>
      rpcError(reports().listEvents({ siteId: ctx.siteId, limit: 10, ...req }, headers()));
    const invalid = (message: string) => ({
      code: "invalid_argument",
      message,
      reason: "invalid_input",
    });
    expect(await call({ pageToken: "not a token" })).toEqual(
      invalid("page_token: not a token from a ListEvents response"),
    );
    expect(await call({ pageToken: Buffer.from("e1.-4").toString("base64url") })).toEqual(
      invalid("page_token: not a token from a ListEvents response"),
    );
    expect(await call({ from: "yesterday" })).toEqual(
      invalid("from: must be RFC 3339, e.g. 2024-01-15T10:30:00Z"),
    );
    expect(await call({ from: iso(TEST_NOW), to: iso(TEST_NOW - 1) })).toEqual(
      invalid("to: must not be before from"),
    );
  });
});
