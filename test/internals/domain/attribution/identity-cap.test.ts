/** The cap on visitors per user id, as the pure plan both stores write. */
import { describe, expect, it } from "vitest";
import {
  linksByUser,
  MAX_VISITORS_PER_USER,
  planLinks,
  visitorToReplace,
} from "../../../../src/domain/attribution/identity-cap.js";

const full = Array.from({ length: MAX_VISITORS_PER_USER }, (_v, i) => `v${i}`);
/** Every linked visitor touched at 1000 + its index (v0 the earliest), non-internal. */
const touchOf = (id: string) =>
  id.startsWith("v") ? { internal: false, ts: 1000 + Number(id.slice(1)) } : undefined;

describe("planLinks", () => {
  it("links new and known visitors below the cap without reading touches", () => {
    expect(planLinks(["a"], ["b", "a", "b"])).toEqual({ link: ["b", "a"], unlink: [] });
  });

  it("asks for touches only when a new visitor is past the cap", () => {
    expect(planLinks(full, ["v3"])).toEqual({ link: ["v3"], unlink: [] });
    expect(planLinks(full, ["new"])).toBeUndefined();
  });

  it("past the cap, a better touch replaces the weakest linked visitor; a worse or missing one is dropped", () => {
    const touches = (id: string) =>
      id === "early"
        ? { internal: false, ts: 1 }
        : id === "late"
          ? { internal: false, ts: 9e9 }
          : touchOf(id);
    expect(planLinks(full, ["early", "late", "none"], touches)).toEqual({
      link: ["early"],
      unlink: [`v${MAX_VISITORS_PER_USER - 1}`],
    });
  });

  it("a candidate linked then replaced within one plan is neither linked nor unlinked", () => {
    const linked = full.slice(0, MAX_VISITORS_PER_USER - 1);
    const touches = (id: string) =>
      id === "weak"
        ? { internal: true, ts: 5 }
        : id === "strong"
          ? { internal: false, ts: 1 }
          : touchOf(id);
    expect(planLinks(linked, ["weak", "strong"], touches)).toEqual({
      link: ["strong"],
      unlink: [],
    });
  });
});

describe("visitorToReplace", () => {
  it("replaces a visitor without a touch first; ties keep what is linked", () => {
    expect(
      visitorToReplace(
        [{ visitorId: "a", touch: { internal: false, ts: 5 } }, { visitorId: "b" }],
        { internal: true, ts: 0 },
      ),
    ).toBe("b");
    expect(
      visitorToReplace([{ visitorId: "a", touch: { internal: false, ts: 5 } }], {
        internal: false,
        ts: 5,
      }),
    ).toBeUndefined();
  });
});

describe("linksByUser", () => {
  it("groups by site and user id in first-seen order", () => {
    const l = (siteId: string, userId: string, visitorId: string) => ({
      siteId,
      userId,
      visitorId,
    });
    expect(
      linksByUser([l("s", "u", "1"), l("s", "w", "2"), l("s", "u", "3"), l("t", "u", "4")]),
    ).toEqual([[l("s", "u", "1"), l("s", "u", "3")], [l("s", "w", "2")], [l("t", "u", "4")]]);
  });
});
