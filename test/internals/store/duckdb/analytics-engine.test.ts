/**
 * The engine's guards, with a connection the test holds: a query past its
 * time limit is interrupted and answers 503 `unavailable` with a clear
 * message; a site's queries beyond the configured number answer 429 with
 * Retry-After while another site's run; a slot is given back when a query ends.
 */
import type { DuckDBConnection } from "@duckdb/node-api";
import { describe, expect, it } from "vitest";
import type { QueryPlan } from "../../../../src/domain/analytics/query-plan.js";
import { createDuckDbAnalytics } from "../../../../src/store/duckdb/analytics-engine.js";
import type { AnalyticsStore } from "../../../../src/store/duckdb/analytics-store.js";

/** A store whose connections answer only when the test says, and reject when interrupted. */
function heldStore() {
  const pending: { release(): void }[] = [];
  let interrupts = 0;
  const connect = async () => {
    let reject: (err: Error) => void = () => {};
    const conn = {
      runAndReadAll: () =>
        new Promise((resolve, rej) => {
          reject = rej;
          pending.push({
            release: () => resolve({ getRows: () => [[0n]] }),
          });
        }),
      interrupt: () => {
        interrupts += 1;
        reject(new Error("INTERRUPT Error: Interrupted!"));
      },
      closeSync: () => {},
    };
    return conn as unknown as DuckDBConnection;
  };
  const store = { connect } as unknown as AnalyticsStore;
  return { store, pending, interrupts: () => interrupts };
}

const plan = (siteId: string): QueryPlan => ({
  siteId,
  timeZone: "UTC",
  metrics: ["visitors"],
  dimensions: [],
  filters: [],
  period: { from: 0, to: 86_400_000 },
  model: "first_touch",
  orderBy: [{ field: "visitors", desc: true }],
  limit: 10,
  offset: 0,
});

/** Resolves once `n` statements are waiting on the held store. */
async function waiting(pending: unknown[], n: number) {
  while (pending.length < n) await new Promise((r) => setImmediate(r));
}

/** Answers every statement the held store gets until `done` settles (a query runs one or more). */
async function answerUntil(pending: { release(): void }[], done: Promise<unknown>) {
  let settled = false;
  const mark = () => {
    settled = true;
  };
  done.then(mark, mark);
  while (!settled) {
    for (const p of pending.splice(0)) p.release();
    await new Promise((r) => setImmediate(r));
  }
}

describe("the analytics engine's guards", () => {
  it("interrupts a query past its time limit and answers unavailable", async () => {
    const held = heldStore();
    const engine = createDuckDbAnalytics({ analytics: held.store, timeoutMs: 30, perSite: 2 });
    const err = await engine.query(plan("s1")).catch((e: unknown) => e);
    expect(held.interrupts()).toBe(1);
    expect(err).toMatchObject({
      kind: "unavailable",
      message:
        "the query ran past its time limit of 0.03 s and was cancelled; narrow the period or the dimensions",
      retryAfterSeconds: 2,
    });
  });

  it("runs at most perSite queries of one site at once: the next answers 429, other sites run", async () => {
    const held = heldStore();
    const engine = createDuckDbAnalytics({ analytics: held.store, timeoutMs: 60_000, perSite: 2 });
    const first = engine.query(plan("s1"));
    const second = engine.query(plan("s1"));
    await expect(engine.query(plan("s1"))).rejects.toMatchObject({
      kind: "too_many_requests",
      message: "too many analytics queries running for this site, retry later",
      retryAfterSeconds: 1,
    });
    const other = engine.query(plan("s2"));
    // The two of s1 and the one of s2 run at once.
    await waiting(held.pending, 3);
    await answerUntil(held.pending, Promise.all([first, second, other]));
    // The slots are free again.
    const again = engine.query(plan("s1"));
    await waiting(held.pending, 1);
    await answerUntil(held.pending, again);
    await expect(again).resolves.toMatchObject({ more: false });
  });
});
