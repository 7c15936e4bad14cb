/**
 * The fixed reports' admission rule on an engine whose reports answer when
 * the test says: per site `perSite` lanes, a bounded queue in arrival
 * order, a bounded wait, Query's own refusal past them, other sites and
 * Query untouched, a lane given back exactly once whatever the outcome.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type {
  AnalyticsEngine,
  QueryPlan,
  QueryResult,
} from "../../../../src/domain/analytics/query-plan.js";
import { admitReports } from "../../../../src/domain/analytics/report-admission.js";

const REFUSED = {
  kind: "too_many_requests",
  message: "too many analytics queries running for this site, retry later",
  retryAfterSeconds: 1,
};

const plan = (siteId: string, tag: number): QueryPlan => ({
  siteId,
  timeZone: "UTC",
  metrics: ["visitors"],
  dimensions: [],
  filters: [],
  period: { from: tag, to: tag + 1 },
  model: "first_touch",
  orderBy: [],
  limit: 10,
  offset: 0,
});

/** An engine whose reports run until the test settles them; `started` lists their tags. */
function heldEngine() {
  const runs: { tag: number; settle(fail?: Error): void }[] = [];
  const started: number[] = [];
  const result = (tag: number): QueryResult => ({ rows: [], totals: [], more: tag < 0 });
  const engine = {
    query: async () => result(-1),
    report: (p: QueryPlan) =>
      new Promise<QueryResult>((resolve, reject) => {
        started.push(p.period.from);
        runs.push({
          tag: p.period.from,
          settle: (fail) => (fail ? reject(fail) : resolve(result(p.period.from))),
        });
      }),
  } as unknown as AnalyticsEngine;
  /** Settles the running report of `tag`. */
  const finish = (tag: number, fail?: Error) => {
    const i = runs.findIndex((r) => r.tag === tag);
    const [run] = runs.splice(i, 1);
    if (!run) throw new Error(`report ${tag} is not running`);
    run.settle(fail);
  };
  return { engine, started, finish };
}

/** Lets every settled promise's reactions run. */
const turn = () => new Promise((r) => setImmediate(r));

afterEach(() => {
  vi.useRealTimers();
});

describe("the fixed reports' admission", () => {
  it("runs perSite plans of a site at once; the next wait and run in arrival order", async () => {
    const held = heldEngine();
    const engine = admitReports(held.engine, { perSite: 2, queuedPerSite: 4, waitMs: 60_000 });
    const answers = [1, 2, 3, 4].map((tag) => engine.report(plan("s1", tag)));
    await turn();
    expect(held.started).toEqual([1, 2]);
    held.finish(2);
    await turn();
    expect(held.started).toEqual([1, 2, 3]);
    held.finish(1);
    await turn();
    expect(held.started).toEqual([1, 2, 3, 4]);
    held.finish(3);
    held.finish(4);
    expect((await Promise.all(answers)).length).toBe(4);
  });

  it("refuses a plan that finds the queue full with Query's error; other sites and Query still run", async () => {
    const held = heldEngine();
    const engine = admitReports(held.engine, { perSite: 1, queuedPerSite: 2, waitMs: 60_000 });
    const admitted = [1, 2, 3].map((tag) => engine.report(plan("s1", tag)));
    await expect(engine.report(plan("s1", 4))).rejects.toMatchObject(REFUSED);
    const other = engine.report(plan("s2", 5));
    await turn();
    expect(held.started).toEqual([1, 5]);
    await expect(engine.query(plan("s1", 6))).resolves.toEqual({
      rows: [],
      totals: [],
      more: true,
    });
    held.finish(5);
    await other;
    // A freed place in the queue takes a plan again.
    held.finish(1);
    await turn();
    const later = engine.report(plan("s1", 7));
    held.finish(2);
    await turn();
    held.finish(3);
    await turn();
    held.finish(7);
    await Promise.all([...admitted, later]);
    expect(held.started).toEqual([1, 5, 2, 3, 7]);
  });

  it("refuses a plan whose wait runs out, and never runs it", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const held = heldEngine();
    const engine = admitReports(held.engine, { perSite: 1, queuedPerSite: 4, waitMs: 2_000 });
    const first = engine.report(plan("s1", 1));
    const waiting = engine.report(plan("s1", 2));
    const outcome = waiting.catch((err: unknown) => err);
    vi.advanceTimersByTime(1_999);
    const third = engine.report(plan("s1", 3));
    vi.advanceTimersByTime(1);
    expect(await outcome).toMatchObject(REFUSED);
    held.finish(1);
    await first;
    await turn();
    // The lane went to the plan still waiting, not to the refused one.
    expect(held.started).toEqual([1, 3]);
    held.finish(3);
    await third;
  });

  it("lets a waiting caller that went away leave the queue", async () => {
    const held = heldEngine();
    const engine = admitReports(held.engine, { perSite: 1, queuedPerSite: 1, waitMs: 60_000 });
    const first = engine.report(plan("s1", 1));
    const gone = new AbortController();
    const left = engine.report(plan("s1", 2), gone.signal).catch((err: unknown) => err);
    gone.abort();
    expect(await left).toMatchObject({ kind: "unavailable" });
    // Its place is free again: the queue of one takes the next plan.
    const next = engine.report(plan("s1", 3));
    held.finish(1);
    await first;
    await turn();
    expect(held.started).toEqual([1, 3]);
    held.finish(3);
    await next;
  });

  it("gives the lane back when a report fails", async () => {
    const held = heldEngine();
    const engine = admitReports(held.engine, { perSite: 1, queuedPerSite: 0, waitMs: 60_000 });
    const failing = engine.report(plan("s1", 1));
    await expect(engine.report(plan("s1", 2))).rejects.toMatchObject(REFUSED);
    held.finish(1, new Error("engine down"));
    await expect(failing).rejects.toThrow("engine down");
    const next = engine.report(plan("s1", 3));
    await turn();
    held.finish(3);
    await expect(next).resolves.toEqual({ rows: [], totals: [], more: false });
  });
});
