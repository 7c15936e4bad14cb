import { describe, expect, it } from "vitest";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { MAX_VISITORS_PER_USER } from "../../src/domain/attribution/identity-cap.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { ADMIN_TOKEN, createTestClock, postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const NOW = Date.UTC(2025, 2, 10, 12, 0, 0);
const clock = createTestClock(NOW);
const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };

const ctx = useTestServer({ clock });

async function events(b: Record<string, unknown>[]) {
  const res = await postJson(`${ctx.url}/api/v1/events`, { s: ctx.siteId, b }, { key: ctx.key });
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
    expect(await ctx.store.findVisitorsByUser(ctx.siteId, "u_flood")).toHaveLength(
      MAX_VISITORS_PER_USER,
    );

    const pay = await postJson(
      `${ctx.url}/api/v1/payments`,
      {
        payment_id: "pay_flood",
        customer: { id: "cus_flood", user_id: "u_flood" },
        amount: 10,
        currency: "USD",
        kind: "charge",
        paid_at: "2025-03-10T12:00:00Z",
      },
      { key: ctx.key },
    );
    expect(pay.status).toBe(200);
    const reports = ctx.client(ReportsService);
    const { payment } = await reports.getPayment(
      { siteId: ctx.siteId, paymentId: "pay_flood" },
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
