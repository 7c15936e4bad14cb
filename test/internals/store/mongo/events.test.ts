/**
 * A group commit on MongoDB answers per request: a request whose events
 * landed is acknowledged even when others of its batch failed, a request that
 * did not land fails alone (its quota given back, no links or touches left
 * behind), and an append whose outcome is unknown is sent again with the
 * same receipts, so it lands once whatever happened the first time. The
 * driver's answers are its own error classes, thrown by fake collections.
 */
import { describe, expect, it } from "vitest";
import { StoreFailureError, StoreUnavailableError } from "../../../../src/domain/store-errors.js";
import { createMongoEvents, EVENT_Q } from "../../../../src/store/mongo/events.js";
import type { EventGroup, EventRecord, VisitorTouch } from "../../../../src/store/port.js";
import {
  bulkDriverError,
  bulkWriteConcernError,
  bulkWriteErrors,
  networkError,
} from "../../../helpers/mongo/driver-errors.js";
import { fakeCollections } from "../../../helpers/mongo/fake-collections.js";

const T0 = Date.UTC(2025, 5, 1, 12);
const MONTH = "2025-06";

function event(siteId: string, name: string): EventRecord {
  return {
    siteId,
    name,
    url: `https://example.com/${name}`,
    ts: T0,
    receivedAt: T0,
    visitorId: "v1",
  };
}

/** A request of one site: one event, an identify link and a candidate touch. */
function request(accountId: string, siteId: string): EventGroup {
  const touch: VisitorTouch = {
    siteId,
    visitorId: `v_${siteId}`,
    ts: T0,
    internal: false,
    channel: "Direct",
    landingPage: "/",
  };
  return {
    accountId,
    month: MONTH,
    ceiling: 100,
    countable: 1,
    events: [event(siteId, "pageview")],
    links: [{ siteId, visitorId: `v_${siteId}`, userId: `u_${siteId}`, ts: T0 }],
    touches: [touch],
  };
}

/** The sites whose links were written (identities bulk writes). */
function linkedSites(calls: { name: string; args: unknown[] }[]): string[] {
  return calls
    .filter((x) => x.name === "identities.bulkWrite")
    .flatMap((x) => x.args[0] as { updateOne: { filter: { site_id: string } } }[])
    .map((op) => op.updateOne.filter.site_id)
    .sort();
}

function touchedSites(calls: { name: string; args: unknown[] }[]): string[] {
  return calls
    .filter((x) => x.name === "touches.findOneAndUpdate")
    .map((x) => (x.args[0] as { site_id: string }).site_id)
    .sort();
}

describe("commitEvents on MongoDB: one outcome per request", () => {
  it("acknowledges the requests that landed when another's append is refused", async () => {
    const f = fakeCollections();
    const store = createMongoEvents(f.c);
    // Two requests of two sites: two appends; the server refuses the second (validator).
    f.script("events.bulkWrite", () => {
      throw bulkWriteErrors([{ index: 1, code: 121, errmsg: "Document failed validation" }]);
    });
    const results = await store.commitEvents([request("acct_a", "a"), request("acct_b", "b")]);

    expect(results[0]).toEqual({ ok: true, remaining: 99, firstTouches: ["v_a"] });
    expect(results[1]).toMatchObject({ ok: false, reason: "failed" });
    const error = (results[1] as { error: Error }).error;
    expect(error).toBeInstanceOf(StoreFailureError);
    // The refused request's quota went back; the landed one keeps its count.
    expect(f.counters.get(`acct_a:${MONTH}`)).toBe(1);
    expect(f.counters.get(`acct_b:${MONTH}`)).toBe(0);
    // Links and touches only for the request whose events landed, written after them.
    expect(linkedSites(f.calls)).toEqual(["a"]);
    expect(touchedSites(f.calls)).toEqual(["a"]);
    const order = f.calls.map((x) => x.name);
    expect(order.indexOf("identities.bulkWrite")).toBeGreaterThan(
      order.indexOf("events.bulkWrite"),
    );
    // Refused appends are not sent again: the server said no.
    expect(f.eventWrites()).toHaveLength(1);
  });

  it("sends again, with the same receipts, what a network error left unknown; E11000 on a receipt means it had landed", async () => {
    const f = fakeCollections();
    const store = createMongoEvents(f.c, { timeoutMs: 5_000 });
    f.script(
      "events.bulkWrite",
      () => {
        throw bulkDriverError(networkError());
      },
      // The re-send: the first append had landed before the connection broke
      // (its receipt is taken), the second had not and lands now.
      () => {
        throw bulkWriteErrors([{ index: 0, code: 11000, errmsg: "E11000 dup key { g: … }" }]);
      },
    );
    const results = await store.commitEvents([request("acct_a", "a"), request("acct_a", "b")]);

    expect(results).toEqual([
      { ok: true, remaining: 99, firstTouches: ["v_a"] },
      { ok: true, remaining: 98, firstTouches: ["v_b"] },
    ]);
    expect(f.counters.get(`acct_a:${MONTH}`)).toBe(2);
    const [first, second] = f.eventWrites();
    // The same operations, receipts included: the re-send is idempotent.
    expect(second).toEqual(first);
    const receipts = (first as { updateOne: { update: { $push: { g: unknown } } } }[]).map(
      (op) => op.updateOne.update.$push.g,
    );
    expect(receipts[0]).not.toEqual(receipts[1]);
    expect(linkedSites(f.calls)).toEqual(["a", "b"]);
  });

  it("a write-concern error leaves the appends unknown: sent again, then acknowledged", async () => {
    const f = fakeCollections();
    const store = createMongoEvents(f.c, { timeoutMs: 5_000 });
    f.script(
      "events.bulkWrite",
      () => {
        throw bulkWriteConcernError();
      },
      () => {
        throw bulkWriteErrors([{ index: 0, code: 11000 }]);
      },
    );
    const [r] = await store.commitEvents([request("acct_a", "a")]);
    expect(r).toMatchObject({ ok: true, remaining: 99 });
    expect(f.eventWrites()).toHaveLength(2);
  });

  it("what stays unknown fails as unavailable: quota back, no links or touches, nothing acknowledged", async () => {
    const f = fakeCollections();
    const store = createMongoEvents(f.c, { timeoutMs: 5_000 });
    const down = () => {
      throw bulkDriverError(networkError());
    };
    f.script("events.bulkWrite", down, down);
    const results = await store.commitEvents([request("acct_a", "a"), request("acct_a", "b")]);
    for (const r of results) {
      expect(r).toMatchObject({ ok: false, reason: "failed" });
      expect((r as { error: Error }).error).toBeInstanceOf(StoreUnavailableError);
    }
    expect(f.counters.get(`acct_a:${MONTH}`)).toBe(0);
    expect(linkedSites(f.calls)).toEqual([]);
    expect(touchedSites(f.calls)).toEqual([]);
  });

  it("events that landed stay acknowledged when their links fail; the links are written at the next commit", async () => {
    const f = fakeCollections();
    const store = createMongoEvents(f.c);
    f.script("identities.bulkWrite", () => {
      throw networkError();
    });
    const [r] = await store.commitEvents([request("acct_a", "a")]);
    expect(r).toMatchObject({ ok: true, remaining: 99 });
    expect(f.counters.get(`acct_a:${MONTH}`)).toBe(1);

    await store.commitEvents([request("acct_a", "b")]);
    // a's links again (pending), then b's.
    const linked = f.calls
      .filter((x) => x.name === "identities.bulkWrite")
      .map(
        (x) =>
          (x.args[0] as { updateOne: { filter: { site_id: string } } }[])[0]?.updateOne.filter
            .site_id,
      );
    expect(linked).toEqual(["a", "a", "b"]);
  });

  it("numbers events from the server's counter: consecutive blocks whatever the host clocks", async () => {
    const f = fakeCollections();
    const store = createMongoEvents(f.c);
    const realNow = Date.now;
    const firstQs: number[] = [];
    try {
      // Two hosts share the counter; one clock runs an hour ahead, then the other host commits.
      for (const skew of [3_600_000, 0, 3_600_000, 0]) {
        Date.now = () => realNow() + skew;
        await store.commitEvents([request("acct_a", "a")]);
        const ops = f.eventWrites().at(-1) as {
          updateOne: { update: { $push: { events: { $each: { q: number }[] } } } };
        }[];
        firstQs.push(ops[0]?.updateOne.update.$push.events.$each[0]?.q as number);
      }
    } finally {
      Date.now = realNow;
    }
    expect(f.sequences.get(EVENT_Q)?.n).toBe(firstQs.at(-1));
    // Strictly increasing across hosts; the host whose clock is behind takes
    // the very next number, not one from its own clock.
    for (let i = 1; i < firstQs.length; i++) {
      expect(firstQs[i]).toBeGreaterThan(firstQs[i - 1] as number);
    }
    expect(firstQs[1]).toBe((firstQs[0] as number) + 1);
    expect(firstQs[3]).toBe((firstQs[2] as number) + 1);
    // Above the clock-based numbers of earlier versions.
    expect(firstQs[0]).toBeGreaterThan(realNow() * 1000);
    expect(Number.isSafeInteger(firstQs.at(-1))).toBe(true);
  });

  it("a failed reservation fails its own requests only", async () => {
    const f = fakeCollections();
    const store = createMongoEvents(f.c);
    f.script("quota.findOneAndUpdate", () => {
      throw networkError();
    });
    const results = await store.commitEvents([request("acct_a", "a"), request("acct_b", "b")]);
    expect(results[0]).toMatchObject({ ok: false, reason: "failed" });
    expect((results[0] as { error: Error }).error).toBeInstanceOf(StoreUnavailableError);
    expect(results[1]).toMatchObject({ ok: true, remaining: 99 });
    expect(linkedSites(f.calls)).toEqual(["b"]);
    // Only b's events were sent.
    expect(f.eventWrites()[0]).toHaveLength(1);
  });
});
