/**
 * MongoDB's retention without a server: the queries a pruning step sends
 * (filter, order, limit, projection computed on the server), which buckets it
 * deletes, where the pass goes on and where it ends, and the site setting's
 * updates. The contract suite (test/store/mongodb.test.ts, with MONGODB_URI)
 * runs the same against a real server.
 */
import { ObjectId } from "mongodb";
import { describe, expect, it } from "vitest";
import { STOP_AFTER_MS } from "../../../../src/domain/store/retention-port.js";
import { BUCKET_CAP } from "../../../../src/store/mongo/event-buckets.js";
import { createMongoRetention } from "../../../../src/store/mongo/retention.js";
import { COLLECTIONS, type Collections } from "../../../../src/store/mongo/schema.js";
import { fakeAnalyticsLog } from "../../../helpers/mongo/notices.js";

const HOUR = 3_600_000;
const H = Date.UTC(2026, 2, 1);

interface Bucket {
  _id: ObjectId;
  site_id: string;
  n: number;
  max_q: number;
  events: { ts: Date }[];
}

/** Buckets of `site`, each `[q, ts…]`: its max_q and its events' times. */
function buckets(site: string, specs: [number, ...number[]][]): Bucket[] {
  return specs.map(([q, ...ts]) => ({
    _id: new ObjectId(),
    site_id: site,
    n: ts.length,
    max_q: q,
    events: ts.map((t) => ({ ts: new Date(t) })),
  }));
}

/** An events collection over `docs` answering find(…).sort().limit().project().toArray() and deleteMany by _id. */
function fakeEvents(docs: Bucket[]) {
  const finds: { filter: unknown; sort: unknown; limit: number; projection: unknown }[] = [];
  const deletes: unknown[] = [];
  const events = {
    find(filter: { site_id: string; max_q?: { $gt: number } }) {
      const q: { sort?: unknown; limit?: number; projection?: unknown } = {};
      const chain = {
        sort(s: unknown) {
          q.sort = s;
          return chain;
        },
        limit(n: number) {
          q.limit = n;
          return chain;
        },
        project(p: unknown) {
          q.projection = p;
          return chain;
        },
        async toArray() {
          finds.push({ filter, sort: q.sort, limit: q.limit ?? 0, projection: q.projection });
          return docs
            .filter((d) => d.site_id === filter.site_id && d.max_q > (filter.max_q?.$gt ?? -1))
            .sort((a, b) => a.max_q - b.max_q)
            .slice(0, q.limit)
            .map((d) => ({
              _id: d._id,
              n: d.n,
              max_q: d.max_q,
              oldest: new Date(Math.min(...d.events.map((e) => e.ts.getTime()))),
              newest: new Date(Math.max(...d.events.map((e) => e.ts.getTime()))),
            }));
        },
      };
      return chain;
    },
    async deleteOne(filter: { site_id: string; _id: ObjectId; n: number }) {
      deletes.push(filter);
      const i = docs.findIndex(
        (d) =>
          d.site_id === filter.site_id && String(d._id) === String(filter._id) && d.n === filter.n,
      );
      if (i >= 0) docs.splice(i, 1);
      return { deletedCount: i >= 0 ? 1 : 0 };
    },
  };
  return { events, finds, deletes };
}

const PROJECTION = {
  n: 1,
  max_q: 1,
  oldest: { $min: "$events.ts" },
  newest: { $max: "$events.ts" },
};

describe("MongoDB retention (no server)", () => {
  it("reads a site's buckets in insertion order, deletes by _id those wholly before the horizon, and goes on from the last max_q", async () => {
    const docs = [
      ...buckets("s1", [
        [200, H - 3 * HOUR, H - 2 * HOUR],
        [400, H - 2 * HOUR, H - 1],
        // Straddles the horizon: kept whole.
        [600, H - 1, H + 1],
        [800, H + STOP_AFTER_MS, H + STOP_AFTER_MS + 5],
      ]),
      ...buckets("s2", [[100, H - 9 * HOUR]]),
    ];
    const past = [docs[0]?._id, docs[1]?._id];
    const fake = fakeEvents(docs);
    const analyticsLog = fakeAnalyticsLog(() => H);
    // Each deleted bucket was named to the analytics feed before it went (a deletion leaves no marker).
    const deleteOne = fake.events.deleteOne;
    fake.events.deleteOne = async (filter) => {
      expect(analyticsLog.docs.flatMap((d) => d.keys as string[])).toContain(
        filter._id.toHexString(),
      );
      return deleteOne(filter);
    };
    const retention = createMongoRetention({
      events: fake.events,
      analyticsLog,
    } as unknown as Collections);
    const limit = 2 * BUCKET_CAP;

    const first = await retention.pruneEventsStep("s1", H, limit);
    expect(first).toEqual({ removed: 4, cursor: "400" });
    expect(fake.finds[0]).toEqual({
      filter: { site_id: "s1" },
      sort: { max_q: 1 },
      limit: 2,
      projection: PROJECTION,
    });
    expect(fake.deletes).toEqual([
      { site_id: "s1", _id: past[0], n: 2 },
      { site_id: "s1", _id: past[1], n: 2 },
    ]);
    expect(analyticsLog.docs).toEqual([
      {
        _id: expect.any(ObjectId),
        kind: "bucket",
        site_id: "s1",
        keys: past.map((id) => id?.toHexString()),
        at: new Date(H),
      },
    ]);

    // The straddling bucket stays; the next one was received past STOP_AFTER_MS: the pass ends.
    const second = await retention.pruneEventsStep("s1", H, limit, first.cursor);
    expect(second).toEqual({ removed: 0 });
    expect(fake.finds[1]?.filter).toEqual({ site_id: "s1", max_q: { $gt: 400 } });
    expect(fake.deletes).toHaveLength(2);
    expect(docs.map((d) => d.max_q)).toEqual([600, 800, 100]);
  });

  it("keeps a bucket whose event count changed between the read and the delete (an append it has not judged)", async () => {
    const docs = buckets("s1", [[10, H - 5 * HOUR]]);
    const fake = fakeEvents(docs);
    const bucket = docs[0] as Bucket;
    const find = fake.events.find.bind(fake.events);
    // The append lands right after the step read the bucket.
    fake.events.find = (filter) => {
      const chain = find(filter);
      const toArray = chain.toArray.bind(chain);
      chain.toArray = async () => {
        const read = await toArray();
        bucket.n += 1;
        bucket.events.push({ ts: new Date(H + HOUR) });
        return read;
      };
      return chain;
    };
    const retention = createMongoRetention({
      events: fake.events,
      analyticsLog: fakeAnalyticsLog(),
    } as unknown as Collections);
    expect(await retention.pruneEventsStep("s1", H, 50)).toEqual({ removed: 0, cursor: "10" });
    expect(fake.deletes).toEqual([{ site_id: "s1", _id: bucket._id, n: 1 }]);
    expect(docs).toHaveLength(1);
  });

  it("takes one bucket per step when the limit is below a bucket, and ends when no bucket is left", async () => {
    const docs = buckets("s1", [[10, H - 5 * HOUR]]);
    const fake = fakeEvents(docs);
    const retention = createMongoRetention({
      events: fake.events,
      analyticsLog: fakeAnalyticsLog(),
    } as unknown as Collections);
    expect(await retention.pruneEventsStep("s1", H, 50)).toEqual({ removed: 1, cursor: "10" });
    expect(fake.finds[0]?.limit).toBe(1);
    expect(await retention.pruneEventsStep("s1", H, 50, "10")).toEqual({ removed: 0 });
  });

  it("sets the site field with $set, clears it with $unset, and reports an unknown site", async () => {
    const updates: unknown[] = [];
    const sites = {
      async updateOne(filter: { _id: string }, update: unknown) {
        updates.push({ filter, update });
        return { matchedCount: filter._id === "s1" ? 1 : 0 };
      },
    };
    const retention = createMongoRetention({ sites } as unknown as Collections);
    expect(await retention.setEventsRetention("s1", 30)).toBe(true);
    expect(await retention.setEventsRetention("s1", undefined)).toBe(true);
    expect(await retention.setEventsRetention("nope", 3)).toBe(false);
    expect(updates).toEqual([
      { filter: { _id: "s1" }, update: { $set: { events_retention_days: 30 } } },
      { filter: { _id: "s1" }, update: { $unset: { events_retention_days: "" } } },
      { filter: { _id: "nope" }, update: { $set: { events_retention_days: 3 } } },
    ]);
  });

  it("validates the site field: an integer from 1 to 3650", () => {
    const sites = COLLECTIONS.find((c) => c.name === "sites");
    expect(sites?.schema.properties.events_retention_days).toEqual({
      bsonType: ["int", "long"],
      minimum: 1,
      maximum: 3650,
    });
    expect(sites?.schema.required).not.toContain("events_retention_days");
  });
});
