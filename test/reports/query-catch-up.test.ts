/**
 * A read waits for the analytics feed to apply what was committed before it
 * (read-your-writes), but no longer than the query's time limit: past it, a
 * clear 503 (and the feed goes on, so a retry finds the writes in).
 */
import { describe, expect, it } from "vitest";
import { commitStraight, pageviewsUntil } from "../helpers/events.js";
import { postJson, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

/** A backlog the feed cannot move in the 100 ms limit, on any machine (about a second here). */
const EVENTS = 100_000;

/** Whether an answer is the query's own time limit (not the catch-up's). */
const isQueryTimeout = (body: unknown) =>
  JSON.stringify(body).includes("the query ran past its time limit");

describe("a Query behind a backlog of the feed", () => {
  // The feed polls once at start, then not for a minute: only the reads' catch-ups move events.
  const ctx = useTestServer({
    env: { ANALYTICS_FEED_INTERVAL_MS: "60000", ANALYTICS_QUERY_TIMEOUT_MS: "100" },
  });

  const query = () =>
    postJson(
      `${ctx.url}/api/v1/sites/${ctx.siteId}/query`,
      {
        metrics: ["events"],
        period: {
          from: new Date(TEST_NOW - EVENTS - 1).toISOString(),
          to: new Date(TEST_NOW + 1).toISOString(),
        },
      },
      { headers: ctx.adminHeaders },
    );

  it("answers 503 with the exact message once its time limit passes, and the retry after the feed caught up counts every event", async () => {
    // Straight through the store's commit path: HTTP would take minutes to send them.
    await commitStraight(ctx.store, ctx.siteId, EVENTS, pageviewsUntil(TEST_NOW, EVENTS, 10_000));
    const late = await query();
    expect(late.status).toBe(503);
    expect(late.headers.get("retry-after")).toBe("2");
    expect(late.body).toEqual({
      ok: false,
      error: {
        code: "unavailable",
        message:
          "the analytics store did not catch up with the writes before this read within its time limit of 0.1 s; retry shortly",
      },
    });
    // The catch-up the read started goes on without it.
    await ctx.server.app.analytics?.feed.catchUp();
    // Nothing left to catch up; on a loaded machine the count itself may still pass the
    // 100 ms limit, which answers its own 503: retried as Retry-After tells a client to.
    let retried = await query();
    for (let n = 0; n < 10 && isQueryTimeout(retried.body); n++) retried = await query();
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ totals: [{ count: String(EVENTS) }] });
  }, 120_000);
});
