/**
 * The fixed reports' admission rule end to end (docs/reports.md): a site's
 * report plans run in ANALYTICS_QUERIES_PER_SITE lanes of their own, at most
 * 16 more wait, each at most ANALYTICS_REPORT_WAIT_MS; past that a call gets
 * Query's own refusal (REST 429 `rate_limited` with Retry-After, RPC
 * `resource_exhausted`). A flood of one site's reports leaves its Query
 * slots, another site's reports, ingestion and the probes answering, and a
 * dashboard's worth of calls at once waits instead of being refused. The
 * lanes are filled with held reports (test/helpers/held-reports.ts) and
 * their readiness awaited, never slept on.
 */
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import {
  ReportsService,
  type RevenueByChannelResponse,
  RevenueByChannelResponseSchema,
} from "../../gen/ingest/v1/reports_pb.js";
import { validEvent } from "../helpers/fixtures.js";
import { heldReports } from "../helpers/held-reports.js";
import { connectTransport } from "../helpers/payment-clients.js";
import { ADMIN_TOKEN, createTenant, postJson, type Tenant } from "../helpers/test-server.js";
import { useTestServer, withTestServer } from "../helpers/use-test-server.js";

const MESSAGE = "too many analytics queries running for this site, retry later";
/** The period of the seeded payment. */
const PERIOD = { from: "2024-01-01T00:00:00Z", to: "2024-02-01T00:00:00Z" };
/** The seeded payment's row, as RevenueByChannel answers it (proto JSON). */
const ROW = {
  channel: "unattributed",
  currency: "USD",
  gross: { currency: "USD", minorUnits: "2999", decimal: "29.99" },
  refunds: { currency: "USD", decimal: "0.00" },
  chargebacks: { currency: "USD", decimal: "0.00" },
  net: { currency: "USD", minorUnits: "2999", decimal: "29.99" },
  payments: "1",
  payingCustomers: "1",
};

/** A succeeded 29.99 USD charge of January 2024 with no visitor (unattributed). */
async function seedPayment(url: string, key: string): Promise<void> {
  const res = await postJson(
    `${url}/api/v1/payments`,
    {
      payment_id: "pay_admission",
      customer: { id: "cus_admission" },
      amount: 29.99,
      currency: "USD",
      kind: "charge",
      paid_at: "2024-01-15T10:30:00Z",
    },
    { key },
  );
  expect(res.status).toBe(200);
}

const rowsOf = (r: RevenueByChannelResponse) => toJson(RevenueByChannelResponseSchema, r);

/** How a call settled: its value, or the Connect code and message it failed with. */
async function outcome<T>(call: Promise<T>) {
  try {
    return { ok: true as const, value: await call };
  } catch (err) {
    const e = ConnectError.from(err);
    return { ok: false as const, code: e.code, message: e.rawMessage };
  }
}

describe("a site's fixed reports beyond their lanes and queue", () => {
  const reportsHeld = heldReports();
  const ctx = useTestServer({ wrapAnalytics: reportsHeld.wrap });
  const reports = () => ctx.client(ReportsService);
  let other: Tenant;

  beforeAll(async () => {
    await seedPayment(ctx.url, ctx.key);
    other = await createTenant(ctx.server);
    await seedPayment(ctx.url, other.key);
  });

  it("are refused with Query's error while other sites, Query, ingestion and the probes answer; the admitted ones answer in full", async () => {
    const headers = ctx.adminHeaders;
    const byChannel = () =>
      reports().revenueByChannel({ siteId: ctx.siteId, ...PERIOD }, { headers });
    reportsHeld.hold(ctx.siteId);
    try {
      // Both lanes (ANALYTICS_QUERIES_PER_SITE=2) held, then 17 more: 16 wait, one is refused.
      const running = [byChannel(), byChannel()];
      await reportsHeld.whenHeld(2);
      const flood = Array.from({ length: 17 }, () => outcome(byChannel()));
      const first = await Promise.race(flood);
      expect(first).toEqual({ ok: false, code: Code.ResourceExhausted, message: MESSAGE });

      // The queue is full: the site's overview is refused over REST with the same message.
      const overview = await fetch(
        `${ctx.url}/api/v1/sites/${ctx.siteId}/overview?from=${PERIOD.from}&to=${PERIOD.to}`,
        { headers },
      );
      expect(overview.status).toBe(429);
      expect(overview.headers.get("retry-after")).toBe("1");
      expect(await overview.json()).toEqual({
        ok: false,
        error: { code: "rate_limited", message: MESSAGE },
      });

      // Another site's reports have lanes of their own.
      const theirs = await reports().revenueByChannel(
        { siteId: other.siteId, ...PERIOD },
        { headers },
      );
      expect(rowsOf(theirs)).toEqual({ rows: [ROW] });
      // The flooded site's Query slots are its dashboard's, untouched.
      const query = await postJson(
        `${ctx.url}/api/v1/sites/${ctx.siteId}/query`,
        {
          metrics: ["net_revenue"],
          currency: "USD",
          period: { from_day: "2024-01-01", to_day: "2024-01-31" },
        },
        { headers },
      );
      expect(query.status, query.text).toBe(200);
      expect(query.body).toMatchObject({
        metrics: ["net_revenue"],
        totals: [{ money: { currency: "USD", minorUnits: "2999", decimal: "29.99" } }],
      });
      // Ingestion and the probes.
      const event = await postJson(`${ctx.url}/api/v1/events`, validEvent(ctx.siteId), {
        key: ctx.key,
      });
      expect(event.status).toBe(204);
      expect((await fetch(`${ctx.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${ctx.url}/readyz`)).status).toBe(200);

      reportsHeld.release();
      const settled = await Promise.all(flood);
      expect(settled.filter((s) => !s.ok)).toHaveLength(1);
      for (const s of [
        ...settled.filter((s) => s.ok),
        ...(await Promise.all(running.map(outcome))),
      ]) {
        expect(s.ok && rowsOf(s.value as RevenueByChannelResponse)).toEqual({ rows: [ROW] });
      }
    } finally {
      reportsHeld.release();
    }
  });

  it("lets a dashboard's worth of reports and queries at once wait for a lane instead of refusing any", async () => {
    const headers = ctx.adminHeaders;
    reportsHeld.hold(ctx.siteId);
    try {
      // Two overviews (four plans each) and two RevenueByChannel: ten plans for two lanes.
      const overviews = [1, 2].map(() =>
        fetch(
          `${ctx.url}/api/v1/sites/${ctx.siteId}/overview?from=${PERIOD.from}&to=${PERIOD.to}`,
          {
            headers,
          },
        ),
      );
      const byChannel = [1, 2].map(() =>
        reports().revenueByChannel({ siteId: ctx.siteId, ...PERIOD }, { headers }),
      );
      await reportsHeld.whenHeld(2);
      const queries = await Promise.all(
        ["visitors", "net_revenue"].map((metric) =>
          postJson(
            `${ctx.url}/api/v1/sites/${ctx.siteId}/query`,
            {
              metrics: [metric],
              currency: "USD",
              period: { from_day: "2024-01-01", to_day: "2024-01-31" },
            },
            { headers },
          ),
        ),
      );
      expect(queries.map((q) => q.status)).toEqual([200, 200]);
      reportsHeld.release();
      for (const res of await Promise.all(overviews)) {
        expect(res.status).toBe(200);
        const body = (await res.json()) as { channels: { revenue: unknown[] }[] };
        expect(body.channels.flatMap((c) => c.revenue)).toEqual([ROW]);
      }
      for (const r of await Promise.all(byChannel)) expect(rowsOf(r)).toEqual({ rows: [ROW] });
    } finally {
      reportsHeld.release();
    }
  });
});

describe("a fixed report waiting for a lane", () => {
  it("is refused once ANALYTICS_REPORT_WAIT_MS ran out; the lane still serves the next", async () => {
    const reportsHeld = heldReports();
    await withTestServer(
      {
        env: { ANALYTICS_QUERIES_PER_SITE: "1", ANALYTICS_REPORT_WAIT_MS: "100" },
        wrapAnalytics: reportsHeld.wrap,
      },
      async (server, tenant) => {
        await seedPayment(server.url, tenant.key);
        const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
        const url = `${server.url}/api/v1/sites/${tenant.siteId}/overview?from=${PERIOD.from}&to=${PERIOD.to}`;
        reportsHeld.hold(tenant.siteId);
        const byChannel = () =>
          createClient(ReportsService, connectTransport(server)).revenueByChannel(
            { siteId: tenant.siteId, ...PERIOD },
            { headers: admin },
          );
        try {
          const first = byChannel();
          await reportsHeld.whenHeld(1);
          // The lane stays held: the overview's plans wait 100 ms, then it is refused.
          const second = await fetch(url, { headers: admin });
          expect(second.status).toBe(429);
          expect(second.headers.get("retry-after")).toBe("1");
          expect(await second.json()).toEqual({
            ok: false,
            error: { code: "rate_limited", message: MESSAGE },
          });
          reportsHeld.release();
          expect(rowsOf(await first)).toEqual({ rows: [ROW] });
          // The refused plans left the queue: the lane serves the next call.
          expect(rowsOf(await byChannel())).toEqual({ rows: [ROW] });
        } finally {
          reportsHeld.release();
        }
      },
    );
  });
});
