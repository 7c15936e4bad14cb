/**
 * The MongoDB stitches without a server: the adapter's queries and updates
 * run against in-memory collections whose filters are evaluated by the model
 * of the server (test/store/mongo-model.ts). The contract suite
 * (test/store/persistent-visitor-contract.ts) is the real check when
 * MONGODB_URI is set.
 */
import { describe, expect, it } from "vitest";
import { MAX_STITCHES_PER_VISITOR } from "../../../../src/domain/events/persistent-visitor.js";
import {
  createMongoPersistentVisitors,
  writeStitches,
} from "../../../../src/store/mongo/persistent-visitors.js";
import type { Collections } from "../../../../src/store/mongo/schema.js";
import type { VisitorStitch } from "../../../../src/store/port.js";
import { type Doc, matches } from "../../../helpers/mongo/model.js";
import { fakeAnalyticsLog } from "../../../helpers/mongo/notices.js";

const T0 = Date.UTC(2026, 4, 4);

/** The few collection methods the stitches use, over an array of documents. */
class Docs {
  docs: Doc[] = [];
  async findOne(filter: Doc) {
    return this.docs.find((d) => matches(d, filter)) ?? null;
  }
  find(filter: Doc) {
    let found = this.docs.filter((d) => matches(d, filter));
    const cursor = {
      limit: (n: number) => {
        found = found.slice(0, n);
        return cursor;
      },
      toArray: async () => found.map((d) => ({ ...d })),
    };
    return cursor;
  }
  async updateOne(filter: Doc, update: { $setOnInsert: Doc }, options: { upsert: boolean }) {
    expect(options).toEqual({ upsert: true });
    if (this.docs.some((d) => matches(d, filter))) return;
    this.docs.push({ ...filter, ...update.$setOnInsert });
  }
  async deleteOne(filter: Doc) {
    const i = this.docs.findIndex((d) => matches(d, filter));
    if (i >= 0) this.docs.splice(i, 1);
  }
}

function collections() {
  const stitches = new Docs();
  const touches = new Docs();
  const analyticsLog = fakeAnalyticsLog();
  return {
    stitches,
    touches,
    analyticsLog,
    c: { stitches, touches, analyticsLog } as unknown as Collections,
  };
}

const stitch = (visitorId: string, persistentId: string, ts = T0): VisitorStitch => ({
  siteId: "site_1",
  visitorId,
  persistentId,
  ts,
});

describe("MongoDB stitches", () => {
  it("keeps a daily id's first persistent id and finds stitches from either side, once each", async () => {
    const { stitches, analyticsLog, c } = collections();
    await writeStitches(c, [stitch("d1", "p:a", T0 + 1), stitch("d2", "p:a", T0)]);
    await writeStitches(c, [stitch("d1", "p:b", T0 + 2)]);
    // The analytics feed is told of the daily ids first (it re-reads their stitches).
    expect(analyticsLog.docs.map((d) => [d.kind, d.site_id, d.keys])).toEqual([
      ["stitches", "site_1", ["d1", "d2"]],
      ["stitches", "site_1", ["d1"]],
    ]);
    expect(stitches.docs).toEqual([
      { site_id: "site_1", visitor_id: "d1", persistent_id: "p:a", ts: new Date(T0 + 1) },
      { site_id: "site_1", visitor_id: "d2", persistent_id: "p:a", ts: new Date(T0) },
    ]);
    const store = createMongoPersistentVisitors(c);
    expect(await store.findStitches("site_1", ["d1", "p:a"])).toEqual([
      stitch("d2", "p:a", T0),
      stitch("d1", "p:a", T0 + 1),
    ]);
    expect(await store.findStitches("site_1", ["p:b"])).toEqual([]);
    expect(await store.findStitches("site_2", ["d1"])).toEqual([]);
  });

  it("past the cap, stitches a daily id only when its touch beats the weakest stitched one's", async () => {
    const { stitches, touches, c } = collections();
    for (let i = 0; i < MAX_STITCHES_PER_VISITOR; i++) {
      stitches.docs.push({
        site_id: "site_1",
        visitor_id: `d${i}`,
        persistent_id: "p:a",
        ts: new Date(T0),
      });
      touches.docs.push({
        site_id: "site_1",
        visitor_id: `d${i}`,
        internal: false,
        ts: new Date(T0 + i),
      });
    }
    await writeStitches(c, [stitch("none", "p:a")]);
    touches.docs.push({
      site_id: "site_1",
      visitor_id: "late",
      internal: false,
      ts: new Date(T0 + 10_000),
    });
    await writeStitches(c, [stitch("late", "p:a")]);
    expect(stitches.docs).toHaveLength(MAX_STITCHES_PER_VISITOR);
    expect(stitches.docs.some((d) => d.visitor_id === "none" || d.visitor_id === "late")).toBe(
      false,
    );
    touches.docs.push({
      site_id: "site_1",
      visitor_id: "early",
      internal: false,
      ts: new Date(T0 - 1),
    });
    await writeStitches(c, [stitch("early", "p:a")]);
    const ids = stitches.docs.map((d) => d.visitor_id);
    expect(ids).toHaveLength(MAX_STITCHES_PER_VISITOR);
    expect(ids).toContain("early");
    expect(ids).not.toContain(`d${MAX_STITCHES_PER_VISITOR - 1}`);
  });
});
