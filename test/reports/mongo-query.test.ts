/**
 * Query on a MongoDB deployment, end to end over HTTP: the process holding
 * the deployment's lease (`analytics_lease`) opens the analytics store with
 * the MongoDB feed and the same engine, and answers from what the feed read
 * out of the collections (the store's own bucket appends and payment
 * upserts, in in-memory collections answering the driver's calls); a
 * process given ANALYTICS_OWNER=false answers 503 with the exact message. The directory (tenant, site, keys)
 * stays in the fixture's store; only the feed's side is MongoDB's.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ObjectId } from "mongodb";
import { afterAll, describe, expect, it } from "vitest";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { planAppends } from "../../src/store/mongo/event-buckets.js";
import { paymentUpsert } from "../../src/store/mongo/payments.js";
import type { EventRecord, Store } from "../../src/store/port.js";
import { memoryDeployment } from "../helpers/mongo/memory-deployment.js";
import { describeRpcError } from "../helpers/rpc-clients.js";
import { postJson, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const MIN = 60_000;
const T0 = TEST_NOW - 50 * MIN;

/** The fixture's store presented as a MongoDB deployment's: it names a feed database, no file. */
const asMongo = (store: Store): Store =>
  new Proxy(store, {
    get(target, p, receiver) {
      if (p === "feedFile") return undefined;
      if (p === "feedDatabase") return { url: "mongodb://in-memory", dbName: "ingest" };
      return Reflect.get(target, p, receiver);
    },
  });

const event = (siteId: string, vid: string, url: string, ts: number) =>
  ({ siteId, name: "pageview", url, ts, receivedAt: ts, visitorId: vid }) as EventRecord;

const QUERY = {
  metrics: ["visitors", "pageviews", "net_revenue"],
  dimensions: ["channel"],
  period: { from_day: "2026-03-11", to_day: "2026-03-11" },
  currency: "USD",
  order_by: [{ field: "pageviews", desc: true }],
};

/** ANALYTICS_PATH of the owner (a MongoDB deployment's file is not beside any store file). */
const dir = mkdtempSync(join(tmpdir(), "mongo-query-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("Query on a MongoDB deployment", () => {
  describe("the owner (the holder of the deployment's lease)", () => {
    const mongo = memoryDeployment(T0);
    const ctx = useTestServer({
      env: { ANALYTICS_PATH: join(dir, "analytics.duckdb") },
      wrapStore: asMongo,
      mongoFeedSource: async () => mongo.source,
      mongoLease: async (ttlMs) => mongo.lease({ ttlMs }),
    });

    it("answers Query, RevenueByChannel and SiteOverview from the MongoDB feed with the same engine", async () => {
      const site = ctx.siteId;
      mongo.m.sites.docs.push({ _id: site, hostnames: ["example.com"] });
      const appends = planAppends(
        [
          {
            group: 0,
            receipt: new ObjectId(),
            siteId: site,
            events: [
              // As the events door stores it: the URL's tags in their own fields.
              {
                ...event(
                  site,
                  "va",
                  "https://example.com/?utm_source=newsletter&utm_medium=email",
                  T0,
                ),
                utmSource: "newsletter",
                utmMedium: "email",
              },
              event(site, "va", "https://example.com/pricing", T0 + MIN),
              event(site, "vb", "https://example.com/", T0 + 2 * MIN),
            ],
          },
        ],
        mongo.clock.now,
        5_000,
      );
      await mongo.m.events.bulkWrite(appends.map((a) => a.operation) as never);
      await mongo.m.payments.bulkWrite([
        paymentUpsert([
          {
            siteId: site,
            paymentId: "pay_1",
            customerId: "cus_a",
            currency: "USD",
            amountMinor: 2_999,
            kind: "charge",
            status: "succeeded",
            paidAt: T0 + 3 * MIN,
            metadata: {},
            createdAt: T0,
            updatedAt: T0,
          },
        ]),
      ] as never);
      await mongo.m.payments.updateMany(
        { site_id: site, customer_id: "cus_a" },
        {
          $set: {
            channel: "Email",
            attribution: {
              channel: "Email",
              source: "newsletter",
              medium: "email",
              landing_page: "https://example.com/",
              visitor_id: "va",
              via: "visitor_id",
              touched_at: new Date(T0),
            },
          },
          $currentDate: { u: true },
        },
      );
      const analytics = ctx.server.app.analytics;
      expect(analytics).toBeDefined();
      // The explicit freshness signal: resolves once the feed applied what the collections hold.
      await analytics?.feed.runOnce();
      const res = await postJson(`${ctx.url}/api/v1/sites/${site}/query`, QUERY, {
        key: await ctx.keyWith(["reports"]),
      });
      expect(res.status).toBe(200);
      const body = res.body as { rows: unknown; totals: unknown };
      expect({ rows: body.rows, totals: body.totals }).toEqual({
        rows: [
          {
            dimensions: ["Email"],
            metrics: [
              { count: "1" },
              { count: "2" },
              { money: { currency: "USD", minorUnits: "2999", decimal: "29.99" } },
            ],
          },
          {
            dimensions: ["Direct"],
            metrics: [
              { count: "1" },
              { count: "1" },
              { money: { currency: "USD", decimal: "0.00" } },
            ],
          },
        ],
        totals: [
          { count: "2" },
          { count: "3" },
          { money: { currency: "USD", minorUnits: "2999", decimal: "29.99" } },
        ],
      });
      // The fixed reports are plans on the same engine: MongoDB keeps no rollup or pipeline of them.
      const reports = ctx.client(ReportsService);
      const period = {
        siteId: site,
        from: new Date(T0 - MIN).toISOString(),
        to: new Date(T0 + 10 * MIN).toISOString(),
      };
      const byChannel = await reports.revenueByChannel(period, { headers: ctx.adminHeaders });
      expect(
        byChannel.rows.map((r) => [
          r.channel,
          r.currency,
          r.gross?.minorUnits,
          r.net?.minorUnits,
          r.payments,
          r.payingCustomers,
        ]),
      ).toEqual([["Email", "USD", 2999n, 2999n, 1n, 1n]]);
      const overview = await reports.siteOverview(period, { headers: ctx.adminHeaders });
      expect(overview.newVisitors).toBe(2n);
      expect(overview.channels.map((c) => [c.channel, c.newVisitors, c.revenue.length])).toEqual([
        ["Direct", 1n, 0],
        ["Email", 1n, 1],
      ]);
    });
  });

  describe("a server while another holds the deployment's lease", () => {
    const mongo = memoryDeployment(T0);
    // Another host's live lease (the server's clock stands still until the test moves it).
    mongo.leases.docs.push({
      _id: "analytics",
      holder: "elsewhere.example:1:other",
      acquired_at: new Date(T0),
      expires_at: new Date(T0 + 60_000),
    });
    const ctx = useTestServer({
      env: { ANALYTICS_PATH: join(dir, "standby.duckdb"), ANALYTICS_LEASE_MS: "300" },
      wrapStore: asMongo,
      mongoFeedSource: async () => mongo.source,
      mongoLease: async (ttlMs) => mongo.lease({ ttlMs }),
    });

    it("stands by (Query 503, no file opened), and owns once that lease lapsed by the server's clock", async () => {
      const query = async () =>
        postJson(`${ctx.url}/api/v1/sites/${ctx.siteId}/query`, QUERY, {
          key: await ctx.keyWith(["reports"]),
        });
      expect(ctx.server.app.analytics).toBeUndefined();
      const refused = await query();
      expect(refused.status).toBe(503);
      expect(refused.body).toEqual({
        ok: false,
        error: { code: "unavailable", message: "the analytics store is unavailable, retry later" },
      });
      expect(existsSync(join(dir, "standby.duckdb"))).toBe(false);
      mongo.m.sites.docs.push({ _id: ctx.siteId, hostnames: ["example.com"] });
      mongo.clock.now = T0 + 60_000;
      // Its next turn (every third of ANALYTICS_LEASE_MS) takes the lapsed lease.
      await expect.poll(() => ctx.server.app.analytics !== undefined).toBe(true);
      expect(mongo.leases.docs[0]?.holder).not.toBe("elsewhere.example:1:other");
      expect((await query()).status).toBe(200);
    });
  });

  describe("a process given ANALYTICS_OWNER=false", () => {
    const ctx = useTestServer({ env: { ANALYTICS_OWNER: "false" }, wrapStore: asMongo });

    it("opens no analytics store and answers Query 503 with the exact message", async () => {
      expect(ctx.server.app.analytics).toBeUndefined();
      const res = await postJson(`${ctx.url}/api/v1/sites/${ctx.siteId}/query`, QUERY, {
        key: await ctx.keyWith(["reports"]),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("2");
      expect(res.body).toEqual({
        ok: false,
        error: {
          code: "unavailable",
          message:
            "analytics queries are not served by this process (they are served by the process that owns the analytics store)",
        },
      });
    });

    it("answers RevenueByChannel and SiteOverview 503 too: MongoDB keeps no copy of their rules", async () => {
      const headers = ctx.adminHeaders;
      const period = { siteId: ctx.siteId, from: new Date(T0).toISOString() };
      const reports = ctx.client(ReportsService);
      const refused = (call: Promise<unknown>) => call.then(() => undefined, describeRpcError);
      const message =
        "analytics queries are not served by this process (they are served by the process that owns the analytics store)";
      expect(
        await refused(reports.revenueByChannel({ ...period, to: "" }, { headers })),
      ).toMatchObject({ code: "unavailable", message });
      expect(
        await refused(
          reports.siteOverview({ ...period, to: new Date(T0 + MIN).toISOString() }, { headers }),
        ),
      ).toMatchObject({ code: "unavailable", message });
    });
  });
});
