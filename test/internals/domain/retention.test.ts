/** The retention pruner and setting, without a store: steps, pauses, errors, stop (issue 24). */
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  createRetention,
  createRetentionPruner,
  PAUSE_FACTOR,
  type PrunerOptions,
  retentionHorizon,
} from "../../../src/domain/retention.js";
import type { PruneStep } from "../../../src/store/port.js";
import { createTestClock } from "../../helpers/test-server.js";

const DAY = 86_400_000;
/** 2026-03-10T15:30:00Z */
const NOW = Date.UTC(2026, 2, 10, 15, 30);

/** A store whose site `s1` has `total` events to prune, removed `stepEvents` at a time. */
function fakeStore(total: number, sites = [{ siteId: "s1", days: 30 }]) {
  let left = total;
  const calls: { siteId: string; before: number; limit: number; cursor?: string }[] = [];
  const failures: Error[] = [];
  return {
    calls,
    failures,
    get left() {
      return left;
    },
    async listEventsRetention() {
      return sites;
    },
    async pruneEventsStep(
      siteId: string,
      before: number,
      limit: number,
      cursor?: string,
    ): Promise<PruneStep> {
      calls.push({ siteId, before, limit, ...(cursor === undefined ? {} : { cursor }) });
      const failure = failures.shift();
      if (failure) throw failure;
      const removed = Math.min(limit, left);
      left -= removed;
      return left > 0 ? { removed, cursor: `c${calls.length}` } : { removed };
    },
  };
}

function setup(total: number, over: Partial<PrunerOptions> = {}) {
  const store = fakeStore(total);
  const clock = createTestClock(NOW);
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const sleeps: number[] = [];
  const pruned: number[] = [];
  const pruner = createRetentionPruner({
    store,
    clock,
    log: {
      info: (fields, message) => lines.push({ level: "info", fields: { ...fields }, message }),
      warn: (fields, message) => lines.push({ level: "warn", fields: { ...fields }, message }),
    },
    intervalMs: 60_000,
    stepEvents: 100,
    stepPauseMs: 5,
    onPruned: (n) => pruned.push(n),
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    elapsed: () => 0,
    ...over,
  });
  return { store, clock, lines, sleeps, pruned, pruner };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("retention horizon", () => {
  it("is the start of today's UTC day, n days back", () => {
    expect(retentionHorizon(NOW, 30)).toBe(Date.UTC(2026, 2, 10) - 30 * DAY);
    expect(retentionHorizon(Date.UTC(2026, 2, 10), 1)).toBe(Date.UTC(2026, 2, 9));
    expect(retentionHorizon(Date.UTC(2026, 2, 10) - 1, 1)).toBe(Date.UTC(2026, 2, 8));
  });
});

describe("retention pruner", () => {
  it("prunes in steps of at most stepEvents, with a pause between steps, and logs one line per site pass", async () => {
    const { store, lines, sleeps, pruned, pruner } = setup(250);
    const result = await pruner.runOnce();
    const horizon = Date.UTC(2026, 2, 10) - 30 * DAY;
    expect(result).toEqual([
      { siteId: "s1", days: 30, horizon, pruned: 250, steps: 3, complete: true },
    ]);
    expect(store.calls).toEqual([
      { siteId: "s1", before: horizon, limit: 100 },
      { siteId: "s1", before: horizon, limit: 100, cursor: "c1" },
      { siteId: "s1", before: horizon, limit: 100, cursor: "c2" },
    ]);
    expect(pruned).toEqual([100, 100, 50]);
    expect(sleeps).toEqual([5, 5, 5]);
    expect(lines).toEqual([
      {
        level: "info",
        message: "events pruned",
        fields: {
          site_id: "s1",
          events_retention_days: 30,
          horizon: new Date(horizon).toISOString(),
          events_pruned: 250,
          steps: 3,
          complete: true,
        },
      },
    ]);
  });

  it("pauses at least PAUSE_FACTOR times a slow step's duration", async () => {
    let t = 0;
    const { sleeps, pruner } = setup(150, {
      // Each reading is 20 ms after the last: each step takes 20 ms.
      elapsed: () => {
        t += 20;
        return t;
      },
    });
    await pruner.runOnce();
    // Two event steps.
    expect(sleeps).toEqual([20 * PAUSE_FACTOR, 20 * PAUSE_FACTOR]);
  });

  it("does not run a completed site again until the horizon moves to the next UTC day", async () => {
    const { store, clock, pruner } = setup(50);
    await pruner.runOnce();
    expect(store.calls).toHaveLength(1);
    clock.set(Date.UTC(2026, 2, 10, 23, 59));
    expect(await pruner.runOnce()).toEqual([]);
    expect(store.calls).toHaveLength(1);
    clock.set(Date.UTC(2026, 2, 11, 0, 1));
    const [next] = await pruner.runOnce();
    expect(next?.horizon).toBe(Date.UTC(2026, 2, 11) - 30 * DAY);
    expect(store.calls).toHaveLength(2);
  });

  it("logs a failed step without details, never throws, and goes on at the next pass", async () => {
    const { store, lines, pruner } = setup(250);
    store.failures.push(new Error("SQLITE_BUSY: database is locked by /secret/path"));
    const first = await pruner.runOnce();
    expect(first).toEqual([expect.objectContaining({ pruned: 0, steps: 0, complete: false })]);
    expect(lines[0]).toEqual({
      level: "warn",
      message: "pruning events failed; retried at the next pass",
      fields: { site_id: "s1", events_pruned: 0, err: "Error" },
    });
    expect(JSON.stringify(lines)).not.toContain("secret");
    // The next pass is not skipped: the site's pass did not complete.
    const second = await pruner.runOnce();
    expect(second).toEqual([expect.objectContaining({ pruned: 250, steps: 3, complete: true })]);
    expect(store.left).toBe(0);
  });

  it("survives a failure to list the sites", async () => {
    const { store, lines, pruner } = setup(10);
    store.listEventsRetention = async () => {
      throw new Error("down");
    };
    expect(await pruner.runOnce()).toEqual([]);
    expect(lines.map((l) => l.level)).toEqual(["warn"]);
  });

  it("stop() ends the pass between two steps and waits for it; later passes do nothing", async () => {
    let release: () => void = () => {};
    const { store, pruner } = setup(1_000, {
      // The first pause never ends by itself: only stop's abort ends it.
      sleep: (_ms, signal) =>
        new Promise<void>((resolve) => {
          release = resolve;
          signal.addEventListener("abort", () => resolve(), { once: true });
        }),
    });
    const pass = pruner.runOnce();
    await vi.waitFor(() => expect(store.calls).toHaveLength(1));
    await pruner.stop();
    const [result] = await pass;
    expect(result).toEqual(expect.objectContaining({ pruned: 100, steps: 1, complete: false }));
    release();
    expect(store.calls).toHaveLength(1);
    expect(await pruner.runOnce()).toEqual([]);
    expect(store.calls).toHaveLength(1);
  });

  it("start() runs a pass every interval on a timer that does not hold the process, until stop()", async () => {
    vi.useFakeTimers();
    const { store, pruner } = setup(50);
    pruner.start();
    await vi.advanceTimersByTimeAsync(59_999);
    expect(store.calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(store.calls).toHaveLength(1);
    await pruner.stop();
    await vi.advanceTimersByTimeAsync(600_000);
    expect(store.calls).toHaveLength(1);
  });
});

describe("retention setting", () => {
  const store = {
    sites: new Map<string, number | undefined>([["s1", undefined]]),
    async setEventsRetention(siteId: string, days: number | undefined) {
      if (!this.sites.has(siteId)) return false;
      this.sites.set(siteId, days);
      return true;
    },
  };
  const retention = createRetention({ store });

  it("sets 1 to 3650 days, and 0 goes back to keeping every event", async () => {
    expect(await retention.setSiteRetention({ siteId: "s1", days: 1 })).toEqual({
      siteId: "s1",
      eventsRetentionDays: 1,
    });
    expect(await retention.setSiteRetention({ siteId: "s1", days: 3650 })).toEqual({
      siteId: "s1",
      eventsRetentionDays: 3650,
    });
    expect(store.sites.get("s1")).toBe(3650);
    expect(await retention.setSiteRetention({ siteId: "s1", days: 0 })).toEqual({
      siteId: "s1",
      eventsRetentionDays: undefined,
    });
    expect(store.sites.get("s1")).toBeUndefined();
  });

  it.each([-1, 3651, 1.5, Number.NaN])("refuses %s days with the exact message", async (days) => {
    await expect(retention.setSiteRetention({ siteId: "s1", days })).rejects.toMatchObject({
      kind: "invalid_input",
      message: "days must be a whole number from 1 to 3650, or 0 to keep every event",
    });
  });

  it("refuses an unknown site and a missing site id", async () => {
    await expect(retention.setSiteRetention({ siteId: "nope", days: 3 })).rejects.toMatchObject({
      message: "site nope not found",
    });
    await expect(retention.setSiteRetention({ siteId: "", days: 3 })).rejects.toMatchObject({
      message: "site_id is required",
    });
  });
});
