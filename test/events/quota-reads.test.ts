/**
 * The quota without a store read per request: each process keeps a lower
 * bound of the monthly counter (from its own reads and commits) for the early
 * refusal; the store's conditional raise at commit stays the authority, so a
 * counter raised elsewhere is still enforced.
 */
import { describe, expect, it } from "vitest";
import { utcMonth } from "../../src/domain/plans.js";
import type { EventGroup, Store } from "../../src/store/port.js";
import { envelope, pageview, presetUsage, sendEvents } from "../helpers/events.js";
import { createTenant, createTestClock } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

// Mid-month, mid-day: no month boundary during the test.
const clock = createTestClock(Date.UTC(2026, 4, 14, 12));
const calls = { getUsage: 0, commitEvents: 0 };
/** When set, the next commit claims the month is full (as a count later given back would). */
let claimFull = false;
let raw: Store;

const ctx = useTestServer({
  clock,
  wrapStore: (inner: Store) => {
    raw = inner;
    return Object.assign(Object.create(inner) as Store, {
      getUsage(accountId: string, month: string) {
        calls.getUsage += 1;
        return inner.getUsage(accountId, month);
      },
      async commitEvents(groups: EventGroup[]) {
        calls.commitEvents += 1;
        const results = await inner.commitEvents(groups);
        if (!claimFull) return results;
        claimFull = false;
        return results.map((r) => ({ ...r, remaining: 0 }));
      },
    });
  },
  tenant: false,
});

describe("quota without a read per request", () => {
  it("reads the counter once per account and month, then counts from commits", async () => {
    const t = await createTenant(ctx.server, { plan: "free" });
    const before = calls.getUsage;
    const remaining: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const res = await sendEvents(ctx.url, t, pageview(t.siteId));
      expect(res.status).toBe(204);
      remaining.push(Number(res.headers.get("x-quota-remaining")));
    }
    expect(calls.getUsage - before).toBe(1);
    expect(remaining).toEqual([10_999, 10_998, 10_997, 10_996, 10_995]);
  });

  it("a counter raised by another process is still enforced, then refused without a write", async () => {
    const t = await createTenant(ctx.server, { plan: "free" });
    expect((await sendEvents(ctx.url, t, pageview(t.siteId))).status).toBe(204);
    // Another process fills the month: this process's bound (1) says the next request fits.
    await presetUsage(raw, t.accountId, utcMonth(clock.now()), 10_999);
    const usageReads = calls.getUsage;
    const stale = await sendEvents(ctx.url, t, pageview(t.siteId));
    expect(stale.status).toBe(429);
    expect(stale.body).toEqual(envelope("quota_exceeded", "monthly event quota exceeded"));
    // The store's conditional raise refused it, without a read first.
    expect(calls.getUsage).toBe(usageReads);
    // Now the bound is the full count: the next request is refused on one read, before any write.
    const commits = calls.commitEvents;
    const early = await sendEvents(ctx.url, t, pageview(t.siteId));
    expect(early.status).toBe(429);
    expect(early.body).toEqual(envelope("quota_exceeded", "monthly event quota exceeded"));
    expect(calls.commitEvents).toBe(commits);
    expect(calls.getUsage).toBe(usageReads + 1);
    expect(await raw.getUsage(t.accountId, utcMonth(clock.now()))).toBe(11_000);
  });

  it("a bound higher than the store's count refuses nothing: the count is read first", async () => {
    const t = await createTenant(ctx.server, { plan: "free" });
    // The store answers 11,000 used (a MongoDB reservation given back afterwards looks like this).
    claimFull = true;
    expect((await sendEvents(ctx.url, t, pageview(t.siteId))).status).toBe(204);
    const usageReads = calls.getUsage;
    const res = await sendEvents(ctx.url, t, pageview(t.siteId));
    expect(res.status).toBe(204);
    expect(res.headers.get("x-quota-remaining")).toBe("10998");
    expect(calls.getUsage).toBe(usageReads + 1);
  });

  it("the bound never refuses wrongly: a higher plan accepts at once", async () => {
    const t = await createTenant(ctx.server, { plan: "free" });
    await presetUsage(raw, t.accountId, utcMonth(clock.now()), 11_000);
    expect((await sendEvents(ctx.url, t, pageview(t.siteId))).status).toBe(429);
    await ctx.server.admin.setPlan({ accountId: t.accountId, plan: "starter" });
    const res = await sendEvents(ctx.url, t, pageview(t.siteId));
    expect(res.status).toBe(204);
  });
});
