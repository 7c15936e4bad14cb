import { beforeAll, describe, expect, it } from "vitest";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { bufCurl } from "../helpers/rpc-clients.js";
import { ADMIN_TOKEN, createTenant, postJson, type Tenant } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
const reports = () => ctx.client(ReportsService);

const ctx = useTestServer({ tenant: false });

async function pay(tenant: Tenant, body: Record<string, unknown>) {
  const res = await postJson(
    `${ctx.url}/api/v1/payments`,
    { kind: "charge", paid_at: "2026-03-10T12:00:00Z", ...body },
    { key: tenant.key },
  );
  expect(res.status, res.text).toBe(200);
}

describe("RevenueByChannel", () => {
  let tenant: Tenant;

  beforeAll(async () => {
    tenant = await createTenant(ctx.server);
    // An Email visitor who becomes customer A.
    const v = { ip: "192.0.2.10", ua: BROWSER_UA };
    for (const body of [
      { e: "pageview", u: "https://example.com/?utm_source=newsletter&utm_medium=email", ...v },
      { e: "$identify", u: "https://example.com/", uid: "ua", ...v },
    ]) {
      const res = await postJson(
        `${ctx.url}/api/v1/events`,
        { s: tenant.siteId, ...body },
        {
          key: tenant.key,
        },
      );
      expect(res.status).toBe(204);
    }
    const a = { id: "cus_a", user_id: "ua" };
    for (const body of [
      { payment_id: "a1", customer: a, amount: 0.1, currency: "USD" },
      { payment_id: "a2", customer: a, amount: 0.2, currency: "USD" },
      { payment_id: "a3", customer: a, amount: 0.05, currency: "USD", kind: "refund" },
      { payment_id: "a4", customer: a, amount: 0.01, currency: "USD", kind: "chargeback" },
      { payment_id: "a5", customer: a, amount: 1500, currency: "JPY" },
      { payment_id: "a6", customer: a, amount: 99, currency: "USD", status: "failed" },
      { payment_id: "a7", customer: a, amount: 99, currency: "USD", status: "pending" },
      // Customer B has no touch: unattributed.
      { payment_id: "b1", customer: { id: "cus_b" }, amount: 19.99, currency: "USD" },
      { payment_id: "b2", customer: { id: "cus_c" }, amount: 0.01, currency: "USD" },
      { payment_id: "b3", customer: { id: "cus_c" }, amount: 700, currency: "JPY" },
      // Outside the window.
      {
        payment_id: "old",
        customer: { id: "cus_b" },
        amount: 1000,
        currency: "USD",
        paid_at: "2025-12-31T23:59:59Z",
      },
    ]) {
      await pay(tenant, body);
    }
  });

  it("sums succeeded payments exactly per channel and currency, net of refunds and chargebacks", async () => {
    const res = await reports().revenueByChannel(
      { siteId: tenant.siteId, from: "2026-01-01T00:00:00Z", to: "2026-04-01T00:00:00Z" },
      { headers },
    );
    const rows = res.rows.map((r) => ({
      channel: r.channel,
      currency: r.currency,
      gross: r.gross?.decimal,
      refunds: r.refunds?.decimal,
      chargebacks: r.chargebacks?.decimal,
      net: r.net?.decimal,
      netMinor: r.net?.minorUnits,
      payments: r.payments,
      paying: r.payingCustomers,
    }));
    expect(rows).toEqual([
      {
        channel: "Email",
        currency: "JPY",
        gross: "1500",
        refunds: "0",
        chargebacks: "0",
        net: "1500",
        netMinor: 1500n,
        payments: 1n,
        paying: 1n,
      },
      {
        channel: "Email",
        currency: "USD",
        gross: "0.30",
        refunds: "0.05",
        chargebacks: "0.01",
        net: "0.24",
        netMinor: 24n,
        payments: 4n,
        paying: 1n,
      },
      {
        channel: "unattributed",
        currency: "JPY",
        gross: "700",
        refunds: "0",
        chargebacks: "0",
        net: "700",
        netMinor: 700n,
        payments: 1n,
        paying: 1n,
      },
      {
        channel: "unattributed",
        currency: "USD",
        gross: "20.00",
        refunds: "0.00",
        chargebacks: "0.00",
        net: "20.00",
        netMinor: 2000n,
        payments: 2n,
        paying: 2n,
      },
    ]);
  });

  it("takes [from, to) and refuses a time that is not RFC 3339", async () => {
    const res = await reports().revenueByChannel(
      { siteId: tenant.siteId, from: "2025-12-31T23:59:59Z", to: "2026-01-01T00:00:00Z" },
      { headers },
    );
    expect(res.rows.map((r) => [r.channel, r.gross?.decimal])).toEqual([
      ["unattributed", "1000.00"],
    ]);
    await expect(
      reports().revenueByChannel({ siteId: tenant.siteId, from: "2026-01-01" }, { headers }),
    ).rejects.toThrow("from: must be RFC 3339, e.g. 2024-01-15T10:30:00Z");
  });

  it("answers the same over buf curl and Connect JSON", async () => {
    const body = {
      siteId: tenant.siteId,
      from: "2026-01-01T00:00:00Z",
      to: "2026-04-01T00:00:00Z",
    };
    const viaBuf = await bufCurl(`${ctx.url}/ingest.v1.ReportsService/RevenueByChannel`, body, {
      protocol: "grpc",
      authorization: `Bearer ${ADMIN_TOKEN}`,
    });
    const viaJson = await fetch(`${ctx.url}/ingest.v1.ReportsService/RevenueByChannel`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    const json = (await viaJson.json()) as {
      rows: { channel: string; net: { decimal: string } }[];
    };
    expect(viaBuf.output).toEqual(json);
    expect(json.rows.find((r) => r.channel === "Email" && r.net.decimal === "0.24")).toBeDefined();
  });
});

describe("Mrr", () => {
  const subscription = (id: string, interval: string, amount: number, extra = {}) => ({
    id,
    interval,
    amount,
    plan: "pro",
    started_at: "2026-01-01T00:00:00Z",
    ...extra,
  });

  it.each([
    ["day", 1, "30.42"], // 100 × 365 / 12 = 3041.67 → 3042
    ["week", 10, "43.33"], // 1000 × 52 / 12 = 4333.33
    ["month", 29.99, "29.99"],
    ["year", 120, "10.00"],
  ])("normalises a %s plan of %s USD to a month: %s", async (interval, amount, expected) => {
    const tenant = await createTenant(ctx.server);
    await pay(tenant, {
      payment_id: "p",
      customer: { id: "c" },
      amount,
      currency: "USD",
      subscription: subscription("s", interval, amount),
    });
    const res = await reports().mrr(
      { siteId: tenant.siteId, at: "2026-06-01T00:00:00Z" },
      { headers },
    );
    expect(res.rows.map((r) => [r.currency, r.mrr?.decimal, r.subscriptions])).toEqual([
      ["USD", expected, 1n],
    ]);
  });

  it("sums active and past_due subscriptions per currency, exactly, and leaves out the rest", async () => {
    const tenant = await createTenant(ctx.server);
    const subs: [string, Record<string, unknown>][] = [
      ["USD", subscription("s1", "day", 1)],
      ["USD", subscription("s2", "week", 10, { status: "past_due" })],
      ["USD", subscription("s3", "month", 29.99)],
      ["USD", subscription("s4", "year", 120)],
      ["USD", subscription("s5", "month", 500, { status: "canceled" })],
      ["USD", subscription("s6", "month", 500, { status: "trialing" })],
      ["USD", subscription("s7", "month", 500, { ended_at: "2026-05-01T00:00:00Z" })],
      ["USD", subscription("s8", "month", 500, { started_at: "2026-07-01T00:00:00Z" })],
      ["JPY", subscription("s9", "month", 980)],
      ["JPY", subscription("s10", "year", 9800)],
    ];
    for (const [i, [currency, sub]] of subs.entries()) {
      await pay(tenant, {
        payment_id: `p${i}`,
        customer: { id: `c${i}` },
        amount: sub.amount,
        currency,
        subscription: sub,
      });
    }
    const res = await reports().mrr(
      { siteId: tenant.siteId, at: "2026-06-01T00:00:00Z" },
      { headers },
    );
    // USD: (100×365 + 1000×52 + 2999×12 + 12000×1) / 12 = 136488 / 12 = 11374.
    // JPY: (980×12 + 9800) / 12 = 21560 / 12 = 1796.67 → 1797.
    expect(
      res.rows.map((r) => [r.currency, r.mrr?.minorUnits, r.mrr?.decimal, r.subscriptions]),
    ).toEqual([
      ["JPY", 1797n, "1797", 2n],
      ["USD", 11374n, "113.74", 4n],
    ]);
    expect(res.at).toBe("2026-06-01T00:00:00.000Z");
  });
});
