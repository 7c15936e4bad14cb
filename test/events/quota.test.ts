/**
 * Monthly quota: the ceiling per plan, the 429 with Retry-After, and the
 * atomic counter under concurrent clients.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { utcMonth } from "../../src/domain/plans.js";
import {
  batchOf,
  envelope,
  listEvents,
  pageview,
  presetUsage,
  sendEvents,
} from "../helpers/events.js";
import { createTenant, createTestClock } from "../helpers/test-server.js";
import { useTestServer, withTestServer } from "../helpers/use-test-server.js";

/** Runs `tasks` with at most `limit` at a time. */
async function pool<T>(tasks: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < tasks.length) {
        const i = next++;
        out[i] = await (tasks[i] as () => Promise<T>)();
      }
    }),
  );
  return out;
}

describe("Free plan: 11,000 counted events a month", () => {
  const ctx = useTestServer({ tenant: { plan: "free" } });

  it("accepts exactly 11,000 and answers 429 from then on", async () => {
    const month = utcMonth(ctx.clock.now());
    // 219 batches of 50 and one of 49: 10,999 events.
    const tasks = Array.from(
      { length: 220 },
      (_, i) => () => sendEvents(ctx.url, ctx.tenant, batchOf(ctx.siteId, i === 219 ? 49 : 50)),
    );
    const results = await pool(tasks, 8);
    expect(results.map((r) => r.status)).toEqual(new Array(220).fill(204));
    const remaining = results.map((r) => Number(r.headers.get("x-quota-remaining")));
    expect(Math.min(...remaining)).toBe(1);
    expect(await ctx.store.getUsage(ctx.tenant.accountId, month)).toBe(10_999);

    // Two more do not fit: the whole request is refused, nothing of it stored.
    const two = await sendEvents(ctx.url, ctx.tenant, batchOf(ctx.siteId, 2, { t: "refused" }));
    expect(two.status).toBe(429);
    expect(two.body).toEqual(envelope("quota_exceeded", "monthly event quota exceeded"));
    expect(Number(two.headers.get("retry-after"))).toBeGreaterThan(0);

    // The 11,000th fits exactly.
    const last = await sendEvents(ctx.url, ctx.tenant, pageview(ctx.siteId, { t: "last" }));
    expect(last.status).toBe(204);
    expect(last.headers.get("x-quota-remaining")).toBe("0");

    const over = await sendEvents(ctx.url, ctx.tenant, pageview(ctx.siteId, { t: "over" }));
    expect(over.status).toBe(429);
    expect(over.body).toEqual(envelope("quota_exceeded", "monthly event quota exceeded"));

    // $identify does not count: still accepted at the ceiling.
    const identify = await sendEvents(
      ctx.url,
      ctx.tenant,
      pageview(ctx.siteId, { e: "$identify", uid: "user-1", ip: "203.0.113.1" }),
    );
    expect(identify.status).toBe(204);
    expect(identify.headers.get("x-quota-remaining")).toBe("0");

    // Bots are not counted either, and do not hit the quota.
    const bot = await sendEvents(ctx.url, ctx.tenant, pageview(ctx.siteId), {
      "user-agent": "curl/8",
    });
    expect(bot.status).toBe(204);
    expect(bot.headers.get("x-ingest-dropped")).toBe("1 bot");

    expect(await ctx.store.getUsage(ctx.tenant.accountId, month)).toBe(11_000);
    const newest = await listEvents(ctx.url, ctx.siteId, 3);
    expect(newest.map((e) => [e.name, e.title])).toEqual([
      ["$identify", undefined],
      ["pageview", "last"],
      ["pageview", undefined],
    ]);
    expect(newest.some((e) => e.title === "refused" || e.title === "over")).toBe(false);
  });
});

describe("plans", () => {
  it.each([
    ["free", 11_000],
    ["starter", 200_000],
    ["growth", 2_000_000],
    ["scale", 20_000_000],
  ])("%s accepts up to %i", async (plan, ceiling) => {
    await withTestServer({ tenant: { plan } }, async (server, t) => {
      await presetUsage(server.store, t.accountId, utcMonth(server.clock.now()), ceiling - 1);
      const ok = await sendEvents(server.url, t, pageview(t.siteId));
      expect(ok.status).toBe(204);
      expect(ok.headers.get("x-quota-remaining")).toBe("0");
      expect((await sendEvents(server.url, t, pageview(t.siteId))).status).toBe(429);
    });
  });
});

describe("Retry-After at a fixed clock", () => {
  const clock = createTestClock(Date.UTC(2025, 0, 31, 23, 0, 0));
  const ctx = useTestServer({ clock, tenant: { plan: "free" } });
  beforeAll(async () => {
    await presetUsage(ctx.store, ctx.tenant.accountId, "2025-01", 11_000);
  });

  it("holds the whole seconds until the next UTC month", async () => {
    const res = await sendEvents(ctx.url, ctx.tenant, pageview(ctx.siteId));
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("3600");
    expect(res.body).toEqual(envelope("quota_exceeded", "monthly event quota exceeded"));

    clock.set(Date.UTC(2025, 0, 31, 23, 59, 59, 500));
    expect(
      (await sendEvents(ctx.url, ctx.tenant, pageview(ctx.siteId))).headers.get("retry-after"),
    ).toBe("1");
  });

  it("the count starts again when the next UTC month starts", async () => {
    clock.set(Date.UTC(2025, 1, 1, 0, 0, 0));
    const res = await sendEvents(ctx.url, ctx.tenant, pageview(ctx.siteId));
    expect(res.status).toBe(204);
    expect(res.headers.get("x-quota-remaining")).toBe("10999");
    expect(await ctx.store.getUsage(ctx.tenant.accountId, "2025-02")).toBe(1);
    expect(await ctx.store.getUsage(ctx.tenant.accountId, "2025-01")).toBe(11_000);
  });
});

describe("the ceiling under concurrent clients", () => {
  const ctx = useTestServer({ tenant: false });

  it("20 clients with one event each, 10 left: exactly 10 accepted", async () => {
    const t = await createTenant(ctx.server, { plan: "free" });
    const month = utcMonth(ctx.clock.now());
    await presetUsage(ctx.store, t.accountId, month, 10_990);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        sendEvents(ctx.url, t, pageview(t.siteId, { p: { client: i } })),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([...new Array(10).fill(204), ...new Array(10).fill(429)]);
    expect(await ctx.store.getUsage(t.accountId, month)).toBe(11_000);
    const stored = await listEvents(ctx.url, t.siteId);
    expect(stored).toHaveLength(10);
    const accepted = results.flatMap((r, i) => (r.status === 204 ? [i] : []));
    expect(stored.map((e) => e.props?.client).sort()).toEqual(accepted.sort());
  });

  it("20 clients with batches of 3, 10 left: exactly 3 batches accepted, 1 left", async () => {
    const t = await createTenant(ctx.server, { plan: "free" });
    const month = utcMonth(ctx.clock.now());
    await presetUsage(ctx.store, t.accountId, month, 10_990);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => sendEvents(ctx.url, t, batchOf(t.siteId, 3))),
    );
    expect(results.filter((r) => r.status === 204)).toHaveLength(3);
    expect(results.filter((r) => r.status === 429)).toHaveLength(17);
    expect(await ctx.store.getUsage(t.accountId, month)).toBe(10_999);
    expect(await listEvents(ctx.url, t.siteId)).toHaveLength(9);
  });

  it("two sites of one account share the account's quota", async () => {
    // Keys need the Scale plan: make both, then move the account to Free.
    const t = await createTenant(ctx.server);
    const month = utcMonth(ctx.clock.now());
    const { siteId: site2 } = await ctx.server.admin.createSite({
      accountId: t.accountId,
      hostnames: ["shop.example.org"],
    });
    const { key: key2 } = await ctx.server.admin.createKey({
      siteId: site2,
      name: "second",
      scopes: ["events"],
      actorUserId: t.ownerUserId,
    });
    await ctx.server.admin.setPlan({ accountId: t.accountId, plan: "free" });
    await presetUsage(ctx.store, t.accountId, month, 10_999);
    const a = await sendEvents(
      ctx.url,
      { key: key2 },
      {
        s: site2,
        e: "pageview",
        u: "https://shop.example.org/",
      },
    );
    expect(a.status).toBe(204);
    expect((await sendEvents(ctx.url, t, pageview(t.siteId))).status).toBe(429);
  });
});
