/**
 * Retention end to end (issue 24): set with the admin CLI and SetSiteRetention
 * against a listening server, the clock moved days ahead, the pruner run;
 * old events are gone from ListEvents and ExportEvents, while first touches,
 * links and payments stay: a new payment of an old customer is still
 * credited to its first touch, and revenue by channel is unchanged.
 */
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { runAdminCli } from "../helpers/cli.js";
import { recordPayment, sendFrom } from "../helpers/events.js";
import { rpcError } from "../helpers/rpc-clients.js";
import { TEST_NOW, type TestClock } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const DAY = 86_400_000;
const logs: string[] = [];
const ctx = useTestServer({
  env: { LOG_LEVEL: "info" },
  logStream: { write: (line) => void logs.push(line) },
});
const iso = (ms: number) => new Date(ms).toISOString();

/** One event as a server would send it, for a browser at `ip`; one payment. */
const send = (event: Record<string, unknown>, ip: string) => sendFrom(ctx, event, ip);
const pay = (body: Record<string, unknown>) => recordPayment(ctx, body);

describe("events retention", () => {
  const reports = () => ctx.client(ReportsService);
  const admin = () => ctx.client(AdminService);
  const headers = () => ({ headers: ctx.adminHeaders });
  const cli = (args: string[]) =>
    runAdminCli(args, { STORE_URL: `sqlite:${join(ctx.server.dir, "ingest.sqlite")}` });
  const clock = () => ctx.clock as TestClock;
  let ada = "";

  beforeAll(async () => {
    // Day 0: Ada comes from the newsletter, signs in, pays; Bob browses.
    await send(
      { e: "pageview", u: "https://example.com/ada?utm_source=newsletter&utm_medium=email" },
      "203.0.113.9",
    );
    await send({ e: "$identify", u: "https://example.com/ada", uid: "u_ada" }, "203.0.113.9");
    await send({ e: "pageview", u: "https://example.com/bob?utm_source=google" }, "203.0.113.10");
    const events = (await reports().listEvents({ siteId: ctx.siteId, limit: 10 }, headers()))
      .events;
    ada = events.find((e) => e.url.includes("/ada?"))?.visitorId ?? "";
    expect(ada).toMatch(/^[0-9a-f]{32}$/);
    await pay({
      payment_id: "pay_ada_1",
      customer: { id: "cus_ada", user_id: "u_ada", visitor_id: ada },
      amount: 49,
      currency: "USD",
      kind: "charge",
      paid_at: iso(TEST_NOW + 60_000),
    });
  });

  it("refuses bad retentions with exact messages, over RPC and the CLI", async () => {
    expect(
      await rpcError(admin().setSiteRetention({ siteId: ctx.siteId, days: 3651 }, headers())),
    ).toEqual({
      code: "invalid_argument",
      message: "days must be a whole number from 1 to 3650, or 0 to keep every event",
      reason: "invalid_input",
    });
    expect(
      await rpcError(admin().setSiteRetention({ siteId: "site_nope", days: 3 }, headers())),
    ).toEqual({ code: "not_found", message: "site site_nope not found", reason: "not_found" });
    expect(await rpcError(admin().setSiteRetention({ siteId: ctx.siteId, days: 3 }))).toEqual({
      code: "unauthenticated",
      message: "missing or invalid admin token",
      reason: "unauthorized",
    });

    const bad = await cli(["site", "set-retention", "--site", ctx.siteId, "--days", "1.5"]);
    expect(bad).toMatchObject({ exitCode: 1, stdout: "" });
    expect(bad.stderr).toBe(
      "error: invalid_input: days must be a whole number from 1 to 3650, or 0 to keep every event\n",
    );
    const both = await cli([
      "site",
      "set-retention",
      "--site",
      ctx.siteId,
      "--days",
      "3",
      "--keep",
    ]);
    expect(both.exitCode).toBe(2);
    expect(both.stderr.split("\n")[0]).toBe("error: give either --days or --keep, not both");
    const unknown = await cli(["site", "set-retention", "--site", "site_nope", "--days", "3"]);
    expect(unknown).toMatchObject({
      exitCode: 1,
      stderr: "error: not_found: site site_nope not found\n",
    });
    expect(await ctx.server.store.getEventsRetention(ctx.siteId)).toBeUndefined();
  });

  it("prunes the events before the horizon and keeps what attribution needs", async () => {
    const set = await cli(["site", "set-retention", "--site", ctx.siteId, "--days", "2"]);
    expect(set).toMatchObject({ exitCode: 0, stderr: "" });
    expect(set.stdout).toBe(`{"site_id":"${ctx.siteId}","events_retention_days":2}\n`);

    // Three days later: the horizon is the start of two days ago (2026-03-12T00:00Z).
    clock().set(TEST_NOW + 3 * DAY);
    await send({ e: "pageview", u: "https://example.com/today" }, "203.0.113.11");
    const revenue = await reports().revenueByChannel({ siteId: ctx.siteId }, headers());
    expect(revenue.rows.map((r) => [r.channel, r.payments])).toEqual([["Email", 1n]]);

    const [pass] = await ctx.server.app.pruner.runOnce();
    expect(pass).toEqual({
      siteId: ctx.siteId,
      days: 2,
      horizon: Date.UTC(2026, 2, 12),
      pruned: 3,
      steps: 1,
      complete: true,
    });

    const listed = (await reports().listEvents({ siteId: ctx.siteId, limit: 10 }, headers()))
      .events;
    expect(listed.map((e) => e.url)).toEqual(["https://example.com/today"]);
    const exported: string[] = [];
    for await (const m of reports().exportEvents(
      { siteId: ctx.siteId, from: iso(TEST_NOW - DAY), to: iso(TEST_NOW + 4 * DAY) },
      headers(),
    )) {
      exported.push(...m.events.map((e) => e.url));
    }
    expect(exported).toEqual(["https://example.com/today"]);

    // Revenue is unchanged, and a new payment of the old customer is credited to its first touch.
    expect(await reports().revenueByChannel({ siteId: ctx.siteId }, headers())).toEqual(revenue);
    await pay({
      payment_id: "pay_ada_2",
      customer: { id: "cus_ada", user_id: "u_ada" },
      amount: 49,
      currency: "USD",
      kind: "charge",
      paid_at: iso(TEST_NOW + 3 * DAY - 60_000),
    });
    const after = await reports().revenueByChannel({ siteId: ctx.siteId }, headers());
    expect(after.rows.map((r) => [r.channel, r.payments, r.net?.decimal])).toEqual([
      ["Email", 2n, "98.00"],
    ]);

    // One line for the pass: the site and the counts, nothing personal.
    const lines = logs.filter((l) => l.includes('"events pruned"')).map((l) => JSON.parse(l));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 30,
      site_id: ctx.siteId,
      events_retention_days: 2,
      horizon: "2026-03-12T00:00:00.000Z",
      events_pruned: 3,
      steps: 1,
      complete: true,
    });
    for (const line of logs) {
      expect(line).not.toContain(ada);
      expect(line).not.toContain("203.0.113.9");
    }

    // Back to keeping every event, over RPC: nothing more is pruned.
    const kept = await admin().setSiteRetention({ siteId: ctx.siteId, days: 0 }, headers());
    expect(kept.siteId).toBe(ctx.siteId);
    expect(kept.eventsRetentionDays).toBeUndefined();
    expect(await ctx.server.store.getEventsRetention(ctx.siteId)).toBeUndefined();
    clock().set(TEST_NOW + 30 * DAY);
    expect(await ctx.server.app.pruner.runOnce()).toEqual([]);
    expect(
      (await reports().listEvents({ siteId: ctx.siteId, limit: 10 }, headers())).events,
    ).toHaveLength(1);
  });
});
