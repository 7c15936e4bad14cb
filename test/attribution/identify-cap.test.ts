/**
 * One user id linked from more visitors than the cap (identify-cap.ts): the
 * payment is still credited to the user's real first touch, which arrived
 * as the last of 130 links, and the user keeps at most the cap of visitors.
 * Its cost under load is measured by bench/identify-flood.mjs, not here.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { MAX_VISITORS_PER_USER } from "../../src/domain/attribution/identity-cap.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import {
  ADMIN_TOKEN,
  createTenant,
  createTestClock,
  postJson,
  startTestServer,
  type Tenant,
  type TestServer,
} from "../helpers/test-server.js";

const NOW = Date.UTC(2025, 2, 10, 12, 0, 0);
const clock = createTestClock(NOW);
let server: TestServer;
let tenant: Tenant;
const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };

beforeAll(async () => {
  server = await startTestServer({ clock });
  tenant = await createTenant(server);
});
afterAll(() => server.close());

async function events(b: Record<string, unknown>[]) {
  const res = await postJson(
    `${server.url}/api/v1/events`,
    { s: tenant.siteId, b },
    { key: tenant.key },
  );
  expect(res.status).toBe(204);
}

const ip = (n: number) => `198.51.${Math.floor(n / 250)}.${(n % 250) + 1}`;

describe("identify past the cap on visitors per user id", () => {
  it("credits the first touch that arrives as the 131st link, and keeps the cap", async () => {
    // 130 visitors identify as the same user; 100 of them saw a newsletter 10 minutes ago.
    for (let start = 0; start < 130; start += 50) {
      const batch: Record<string, unknown>[] = [];
      for (let n = start; n < Math.min(start + 50, 130); n++) {
        if (n < 100) {
          batch.push({
            e: "pageview",
            u: "https://example.com/?utm_source=newsletter&utm_medium=email",
            ts: NOW - 10 * 60_000,
            ip: ip(n),
            ua: BROWSER_UA,
          });
        }
        batch.push({
          e: "$identify",
          u: "https://example.com/app",
          uid: "u_flood",
          ip: ip(n),
          ua: BROWSER_UA,
        });
      }
      // Small requests: the body limit is 8 KB.
      for (let i = 0; i < batch.length; i += 16) await events(batch.slice(i, i + 16));
    }
    // The user's real first visit: a Google search 50 minutes ago, linked last.
    await events([
      {
        e: "pageview",
        u: "https://example.com/",
        r: "https://www.google.com/",
        ts: NOW - 50 * 60_000,
        ip: "203.0.113.77",
        ua: BROWSER_UA,
      },
      {
        e: "$identify",
        u: "https://example.com/app",
        uid: "u_flood",
        ip: "203.0.113.77",
        ua: BROWSER_UA,
      },
    ]);
    expect(await server.store.findVisitorsByUser(tenant.siteId, "u_flood")).toHaveLength(
      MAX_VISITORS_PER_USER,
    );

    const pay = await postJson(
      `${server.url}/api/v1/payments`,
      {
        payment_id: "pay_flood",
        customer: { id: "cus_flood", user_id: "u_flood" },
        amount: 10,
        currency: "USD",
        kind: "charge",
        paid_at: "2025-03-10T12:00:00Z",
      },
      { key: tenant.key },
    );
    expect(pay.status).toBe(200);
    const reports = createClient(
      ReportsService,
      createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }),
    );
    const { payment } = await reports.getPayment(
      { siteId: tenant.siteId, paymentId: "pay_flood" },
      { headers },
    );
    expect(payment?.channel).toBe("Organic Search");
    expect(payment?.attribution).toMatchObject({
      channel: "Organic Search",
      landingPage: "https://example.com/",
      link: "user_id",
    });
  });
});
