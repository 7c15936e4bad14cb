/**
 * The public collect door's limits count events, not requests (issue 31,
 * defect 1): a batch of 50 from one address spends 50 of its
 * COLLECT_RATE_LIMIT; and a per-site ceiling (the plan's default, or the
 * site's own set with the admin CLI or SetSiteCollectLimit) refuses what
 * browsers send past it with 429 and Retry-After, counted in the metrics,
 * while key-authenticated requests are not limited. The clock is the test's.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { runAdminCli } from "../helpers/cli.js";
import { collect } from "../helpers/collect.js";
import { envelope, listEvents, pageview, sendEvents } from "../helpers/events.js";
import { rpcError } from "../helpers/rpc-clients.js";
import { createTestClock } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const START = Date.UTC(2026, 2, 14, 12, 0, 0);
const from = (ip: string) => ({ "x-forwarded-for": ip });
/** A batch of `n` pageviews: what a flood sends to get the most events per request. */
const batch = (siteId: string, n = 50) => ({
  s: siteId,
  b: Array.from({ length: n }, (_, i) => ({ e: "pageview", u: `https://example.com/${i}` })),
});

describe("collect per-client limit counts events", () => {
  const clock = createTestClock(START);
  const metrics = createMetrics();
  const ctx = useTestServer({
    clock,
    metrics,
    env: { COLLECT_RATE_LIMIT: "120", TRUST_PROXY: "loopback" },
  });

  it("refuses a batch-of-50 flood from one address after 120 events, not 120 requests", async () => {
    const ip = "198.51.100.70";
    expect((await collect(ctx.url, batch(ctx.siteId), from(ip))).status).toBe(200);
    expect((await collect(ctx.url, batch(ctx.siteId), from(ip))).status).toBe(200);
    // 100 spent, 20 left: a batch of 50 is refused whole, a batch of 20 fits.
    const refused = await collect(ctx.url, batch(ctx.siteId), from(ip));
    expect(refused.status).toBe(429);
    // 30 events missing at 120 a minute: 15 seconds.
    expect(refused.headers.get("retry-after")).toBe("15");
    expect(refused.body).toEqual(
      envelope("rate_limited", "too many requests from this address, retry later"),
    );
    expect((await collect(ctx.url, batch(ctx.siteId, 19), from(ip))).status).toBe(200);
    // The request's own token was taken before its body was read: none left now.
    expect((await collect(ctx.url, pageview(ctx.siteId), from(ip))).status).toBe(429);
    expect(await listEvents(ctx.url, ctx.siteId, 500)).toHaveLength(119);

    clock.advance(25_000); // 50 events earned back
    expect((await collect(ctx.url, batch(ctx.siteId), from(ip))).status).toBe(200);
    expect((await collect(ctx.url, pageview(ctx.siteId), from(ip))).status).toBe(429);
    const got = await metrics.registry.getSingleMetric("ingest_collect_refused_total")?.get();
    expect(Object.fromEntries((got?.values ?? []).map((v) => [v.labels.limit, v.value]))).toEqual({
      client: 3,
      site: 0,
    });
  });
});

describe("collect per-site ceiling", () => {
  const clock = createTestClock(START);
  const metrics = createMetrics();
  const ctx = useTestServer({
    clock,
    metrics,
    env: { COLLECT_RATE_LIMIT: "1000000", TRUST_PROXY: "loopback" },
  });
  const admin = () => ctx.client(AdminService);
  const headers = () => ({ headers: ctx.adminHeaders });
  const cli = (args: string[]) =>
    runAdminCli(args, { STORE_URL: `sqlite:${join(ctx.server.dir, "ingest.sqlite")}` });
  /** Each batch from its own address: the site's ceiling is what limits them. */
  let nextIp = 1;
  const fromAnyone = () => from(`203.0.113.${nextIp++}`);
  const refusals = async () => {
    const got = await metrics.registry.getSingleMetric("ingest_collect_refused_total")?.get();
    return Object.fromEntries((got?.values ?? []).map((v) => [v.labels.limit, v.value]));
  };

  it("refuses browsers past the site's ceiling with 429 and Retry-After; keys are not limited", async () => {
    const set = await cli([
      "site",
      "set-collect-limit",
      "--site",
      ctx.siteId,
      "--per-minute",
      "100",
    ]);
    expect(set).toMatchObject({ exitCode: 0, stderr: "" });
    expect(set.json).toEqual({
      site_id: ctx.siteId,
      collect_per_minute: 100,
      effective_per_minute: 100,
    });

    expect((await collect(ctx.url, batch(ctx.siteId), fromAnyone())).status).toBe(200);
    expect((await collect(ctx.url, batch(ctx.siteId), fromAnyone())).status).toBe(200);
    const refused = await collect(ctx.url, batch(ctx.siteId), fromAnyone());
    expect(refused.status).toBe(429);
    // 50 events at 100 a minute: 30 seconds.
    expect(refused.headers.get("retry-after")).toBe("30");
    expect(refused.headers.get("access-control-allow-origin")).toBe("*");
    expect(refused.body).toEqual(
      envelope("rate_limited", "too many events for this site, retry later"),
    );
    expect(await refusals()).toEqual({ client: 0, site: 1 });

    // The key-authenticated door is not limited by the public door's ceiling.
    for (let i = 0; i < 3; i++) {
      const res = await sendEvents(ctx.url, ctx.tenant, batch(ctx.siteId), fromAnyone());
      expect(res.status).toBe(204);
    }
    expect(await listEvents(ctx.url, ctx.siteId, 500)).toHaveLength(250);

    clock.advance(29_000);
    const early = await collect(ctx.url, batch(ctx.siteId), fromAnyone());
    expect([early.status, early.headers.get("retry-after")]).toEqual([429, "1"]);
    clock.advance(1_000);
    expect((await collect(ctx.url, batch(ctx.siteId), fromAnyone())).status).toBe(200);
    expect(await refusals()).toEqual({ client: 0, site: 2 });
  });

  it("goes back to the plan's default (Scale: 10,000,000 / 2,000 = 5,000 a minute)", async () => {
    const back = await admin().setSiteCollectLimit({ siteId: ctx.siteId, perMinute: 0 }, headers());
    expect(back.siteId).toBe(ctx.siteId);
    expect(back.collectPerMinute).toBeUndefined();
    const shown = await cli(["site", "set-collect-limit", "--site", ctx.siteId, "--default"]);
    expect(shown.json).toEqual({
      site_id: ctx.siteId,
      collect_per_minute: null,
      effective_per_minute: 5_000,
    });
    expect(await ctx.server.store.getSite(ctx.siteId)).not.toHaveProperty("collectPerMinute");
    clock.advance(3_600_000);
    // 5,000 events a minute: 100 batches of 50 pass, the 101st is refused.
    for (let i = 0; i < 100; i++) {
      expect((await collect(ctx.url, batch(ctx.siteId), fromAnyone())).status).toBe(200);
    }
    const refused = await collect(ctx.url, batch(ctx.siteId), fromAnyone());
    expect([refused.status, refused.headers.get("retry-after")]).toEqual([429, "1"]);

    const set = await admin().setSiteCollectLimit(
      { siteId: ctx.siteId, perMinute: 20_000 },
      headers(),
    );
    expect(set.collectPerMinute).toBe(20_000);
    expect((await ctx.server.store.getSite(ctx.siteId))?.collectPerMinute).toBe(20_000);
  });

  it("refuses bad settings with exact messages, over RPC and the CLI", async () => {
    const range =
      "per_minute must be a whole number from 1 to 1000000, or 0 for the plan's default";
    expect(
      await rpcError(
        admin().setSiteCollectLimit({ siteId: ctx.siteId, perMinute: 1_000_001 }, headers()),
      ),
    ).toEqual({ code: "invalid_argument", message: range, reason: "invalid_input" });
    expect(
      await rpcError(admin().setSiteCollectLimit({ siteId: "site_nope", perMinute: 9 }, headers())),
    ).toEqual({ code: "not_found", message: "site site_nope not found", reason: "not_found" });
    expect(
      await rpcError(admin().setSiteCollectLimit({ siteId: ctx.siteId, perMinute: 9 })),
    ).toEqual({
      code: "unauthenticated",
      message: "missing or invalid admin token",
      reason: "unauthorized",
    });

    const args = ["site", "set-collect-limit", "--site", ctx.siteId];
    const bad = await cli([...args, "--per-minute", "1.5"]);
    expect(bad).toMatchObject({
      exitCode: 1,
      stdout: "",
      stderr: `error: invalid_input: ${range}\n`,
    });
    const both = await cli([...args, "--per-minute", "3", "--default"]);
    expect(both.exitCode).toBe(2);
    expect(both.stderr.split("\n")[0]).toBe(
      "error: give either --per-minute or --default, not both",
    );
    const none = await cli(args);
    expect(none.exitCode).toBe(2);
    expect(none.stderr.split("\n")[0]).toBe("error: --per-minute or --default is required");
    const unknown = await cli([
      "site",
      "set-collect-limit",
      "--site",
      "site_nope",
      "--per-minute",
      "3",
    ]);
    expect(unknown).toMatchObject({
      exitCode: 1,
      stderr: "error: not_found: site site_nope not found\n",
    });
    expect((await ctx.server.store.getSite(ctx.siteId))?.collectPerMinute).toBe(20_000);
  });
});

describe("collect per-site ceiling of a Free site", () => {
  const clock = createTestClock(START);
  const ctx = useTestServer({
    clock,
    tenant: { plan: "free" },
    env: { COLLECT_RATE_LIMIT: "1000000", TRUST_PROXY: "loopback" },
  });

  it("defaults to the floor of 600 events a minute (10,000 / 2,000 is below it)", async () => {
    for (let i = 0; i < 12; i++) {
      const res = await collect(ctx.url, batch(ctx.siteId), from(`203.0.113.${i + 1}`));
      expect(res.status).toBe(200);
    }
    const refused = await collect(ctx.url, batch(ctx.siteId), from("203.0.113.99"));
    expect([refused.status, refused.headers.get("retry-after")]).toEqual([429, "5"]);
  });
});
