/**
 * Quota on MongoDB: one atomic round trip per (account, month) per batch,
 * whatever the number of requests, with the same answers as one-by-one
 * reservations; what did not land is given back, one update per counter.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createMongoEvents } from "../../../../src/store/mongo/events.js";
import { replayReservations, reserveManyPipeline } from "../../../../src/store/mongo/quota.js";
import type { EventGroup } from "../../../../src/store/port.js";
import { bulkWriteErrors } from "../../../helpers/mongo/driver-errors.js";
import { fakeCollections } from "../../../helpers/mongo/fake-collections.js";
import { applyPipeline } from "../../../helpers/mongo/model.js";

const MONTH = "2025-06";

function request(accountId: string, siteId: string, countable: number, ceiling = 10): EventGroup {
  return {
    accountId,
    month: MONTH,
    ceiling,
    countable,
    events: Array.from({ length: Math.max(1, countable) }, (_, i) => ({
      siteId,
      name: countable === 0 ? "$identify" : `e${i}`,
      url: "https://example.com/",
      ts: 1,
      receivedAt: 1,
      visitorId: "v",
    })),
    links: [],
  };
}

describe("quota reservations on MongoDB", () => {
  it("reserves a whole batch in one round trip per counter, in order, as one by one would", async () => {
    const f = fakeCollections();
    const store = createMongoEvents(f.c);
    const results = await store.commitEvents([
      request("acct_a", "a", 4),
      request("acct_b", "b", 3),
      request("acct_a", "a", 4),
      request("acct_a", "a", 4), // 12 > 10: refused
      request("acct_a", "a", 0), // nothing to count: fits
      request("acct_a", "a", 2), // still fits after the refusal: 10
      request("acct_b", "b", 8), // 11 > 10: refused
    ]);
    expect(
      results.map((r) =>
        r.ok ? r.remaining : `refused:${r.ok === false && "remaining" in r ? r.remaining : "?"}`,
      ),
    ).toEqual([6, 7, 2, "refused:2", 2, 0, "refused:7"]);
    expect(f.calls.filter((x) => x.name === "quota.findOneAndUpdate")).toHaveLength(2);
    expect(f.counters.get(`acct_a:${MONTH}`)).toBe(10);
    expect(f.counters.get(`acct_b:${MONTH}`)).toBe(3);
  });

  it("gives back, in one update per counter, what did not land", async () => {
    const f = fakeCollections();
    const store = createMongoEvents(f.c);
    // Three requests of one account on three sites (three appends); the last two are refused.
    f.script("events.bulkWrite", () => {
      throw bulkWriteErrors([
        { index: 1, code: 121 },
        { index: 2, code: 121 },
      ]);
    });
    const results = await store.commitEvents([
      request("acct_a", "a", 1),
      request("acct_a", "b", 2),
      request("acct_a", "c", 3),
    ]);
    expect(results.map((r) => r.ok)).toEqual([true, false, false]);
    const releases = f.calls.filter((x) => x.name === "quota.updateOne");
    expect(releases).toHaveLength(1);
    expect(releases[0]?.args[1]).toEqual({ $inc: { count: -5 } });
    expect(f.counters.get(`acct_a:${MONTH}`)).toBe(1);
  });

  it("a request with nothing to count fits even over a ceiling a plan change lowered", async () => {
    const f = fakeCollections();
    f.counters.set(`acct_a:${MONTH}`, 15);
    const store = createMongoEvents(f.c);
    const [identify, counted] = await store.commitEvents([
      request("acct_a", "a", 0, 11),
      request("acct_a", "a", 1, 11),
    ]);
    expect(identify).toMatchObject({ ok: true, remaining: 0 });
    expect(counted).toMatchObject({ ok: false, reason: "quota_exceeded", remaining: 0 });
    expect(f.counters.get(`acct_a:${MONTH}`)).toBe(15);
  });

  it("the server's replay ($reduce) and this process's replay agree, and never pass a ceiling", () => {
    const req = fc.record({
      n: fc.integer({ min: 0, max: 50 }),
      ceiling: fc.integer({ min: 0, max: 100 }),
    });
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 0, max: 100 }), { nil: undefined }),
        fc.array(req, { maxLength: 12 }),
        (before, requests) => {
          const filter = { _id: `acct:${MONTH}` };
          const existing = before === undefined ? undefined : { _id: filter._id, count: before };
          const after = applyPipeline(
            existing,
            filter,
            reserveManyPipeline("acct", MONTH, requests),
          );
          const replay = replayReservations(before ?? 0, requests);
          expect(after.count).toBe(replay.at(-1)?.count ?? before ?? 0);
          expect(after).toMatchObject({ account_id: "acct", month: MONTH });
          let count = before ?? 0;
          replay.forEach((r, i) => {
            const q = requests[i] as { n: number; ceiling: number };
            if (r.ok && q.n > 0) {
              expect(r.count).toBeLessThanOrEqual(q.ceiling);
              expect(r.count).toBe(count + q.n);
            } else expect(r.count).toBe(count);
            count = r.count;
          });
        },
      ),
      { numRuns: 300 },
    );
  });
});
