/** The ranking rules: the order of first touches and the touch a customer is credited to. */
import { describe, expect, it } from "vitest";
import {
  byTimeThenVisitor,
  creditedTouch,
  linkRank,
} from "../../../../src/domain/attribution/ranking.js";
import type { LinkKind, VisitorTouch } from "../../../../src/domain/store/store.js";

const touch = (visitorId: string, ts: number, internal = false): VisitorTouch => ({
  siteId: "s",
  visitorId,
  ts,
  internal,
  channel: "Direct",
  landingPage: "https://example.com/",
});

describe("ranking", () => {
  it("sorts first touches by time, then visitor id", () => {
    const sorted = [touch("b", 2), touch("c", 1), touch("a", 2)].sort(byTimeThenVisitor);
    expect(sorted.map((t) => t.visitorId)).toEqual(["c", "a", "b"]);
  });

  it("links rank strongest first", () => {
    expect((["customer", "user_id", "visitor_id"] as LinkKind[]).map(linkRank)).toEqual([2, 0, 1]);
  });

  it("credits a non-internal touch, then the earlier, then the stronger link, then the lower visitor id, whatever the stores' order", () => {
    const via = (id: string): LinkKind => (id === "z" ? "user_id" : "customer");
    const touches = [touch("b", 5), touch("a", 5), touch("i", 1, true), touch("z", 5)];
    for (const order of [touches, [...touches].reverse()]) {
      expect(creditedTouch(order, via)).toEqual({ touch: touch("z", 5), via: "user_id" });
      expect(
        creditedTouch(
          order.filter((t) => t.visitorId !== "z"),
          via,
        )?.touch.visitorId,
      ).toBe("a");
    }
    expect(creditedTouch([touch("i", 1, true)], via)?.touch.visitorId).toBe("i");
    expect(creditedTouch([], via)).toBeUndefined();
  });
});
