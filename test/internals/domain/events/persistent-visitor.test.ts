import { describe, expect, it } from "vitest";
import {
  createPersistentVisitors,
  publicVisitorId,
  VID_PATTERN,
  visitorIdCandidates,
} from "../../../../src/domain/events/persistent-visitor.js";
import type { EventRecord } from "../../../../src/store/port.js";

const DAILY = "0123456789abcdef0123456789abcdef";

function record(visitorId: string, ts: number, siteId = "site_1"): EventRecord {
  return { siteId, name: "pageview", url: "https://shop.test/", ts, receivedAt: ts, visitorId };
}

describe("persistent visitor ids", () => {
  it("accepts 16 to 64 characters of A-Z a-z 0-9 _ - and nothing else", () => {
    expect(VID_PATTERN.test("a".repeat(16))).toBe(true);
    expect(VID_PATTERN.test(`${"Z9_-".repeat(16)}`)).toBe(true);
    for (const bad of [
      "a".repeat(15),
      "a".repeat(65),
      `${"a".repeat(16)}.`,
      `p:${"a".repeat(16)}`,
    ]) {
      expect(VID_PATTERN.test(bad)).toBe(false);
    }
  });

  it("reads customer.visitor_id as a daily id, a vid or a stored p:<vid>", () => {
    expect(visitorIdCandidates("")).toEqual([]);
    expect(visitorIdCandidates("v-unknown")).toEqual(["v-unknown"]);
    expect(visitorIdCandidates("Kq3_x-Y7aB9cD0eFgH1iJ2")).toEqual(["p:Kq3_x-Y7aB9cD0eFgH1iJ2"]);
    expect(visitorIdCandidates("p:Kq3_x-Y7aB9cD0eFgH1iJ2")).toEqual(["p:Kq3_x-Y7aB9cD0eFgH1iJ2"]);
    // 32 lowercase hex: a daily id's shape and a vid's; both stored forms are candidates.
    expect(visitorIdCandidates(DAILY)).toEqual([DAILY, `p:${DAILY}`]);
    expect(publicVisitorId("p:Kq3_x-Y7aB9cD0eFgH1iJ2")).toBe("Kq3_x-Y7aB9cD0eFgH1iJ2");
    expect(publicVisitorId(DAILY)).toBe(DAILY);
  });

  it("moves events with a vid to p:<vid> and stitches each daily id once, to the first vid", () => {
    const pv = createPersistentVisitors();
    const records = [
      record(DAILY, 3),
      record(DAILY, 1),
      record("f".repeat(32), 2),
      record(DAILY, 4),
    ];
    const vid = "A".repeat(16);
    const stitches = pv.apply(records, [vid, "B".repeat(16), undefined, vid]);
    expect(records.map((r) => r.visitorId)).toEqual([
      `p:${vid}`,
      `p:${"B".repeat(16)}`,
      "f".repeat(32),
      `p:${vid}`,
    ]);
    expect(stitches).toEqual([
      { siteId: "site_1", visitorId: DAILY, persistentId: `p:${vid}`, ts: 1 },
    ]);
    // Known once committed: not sent again, for any vid.
    pv.remember(stitches);
    expect(pv.apply([record(DAILY, 5)], ["C".repeat(16)])).toEqual([]);
    // Another site's same daily id is another visitor.
    expect(pv.apply([record(DAILY, 5, "site_2")], [vid])).toHaveLength(1);
  });
});
