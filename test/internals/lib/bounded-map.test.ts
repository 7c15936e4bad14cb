/** The bounded map behind the in-process caches (src/lib/bounded-map.ts). */
import { describe, expect, it } from "vitest";
import { createBoundedMap } from "../../../src/lib/bounded-map.js";
import { memoize } from "../../../src/lib/memo.js";

describe("bounded map", () => {
  it("never holds more than its bound, however many keys go in", () => {
    const m = createBoundedMap<number, number>(100);
    for (let i = 0; i < 10_000; i += 1) m.set(i, i * 2);
    let held = 0;
    for (let i = 0; i < 10_000; i += 1) if (m.has(i)) held += 1;
    expect(held).toBeLessThanOrEqual(100);
    expect(held).toBeGreaterThanOrEqual(50);
    // The newest are the ones kept, with their values.
    expect(m.get(9_999)).toBe(19_998);
    expect(m.get(0)).toBeUndefined();
  });

  it("keeps an entry that is used, however many others pass through", () => {
    const m = createBoundedMap<string, string>(10);
    m.set("hot", "kept");
    for (let i = 0; i < 1_000; i += 1) {
      m.set(`cold${i}`, "x");
      expect(m.get("hot")).toBe("kept");
    }
    expect(m.has("cold0")).toBe(false);
  });

  it("a working set within half the bound is always found", () => {
    const m = createBoundedMap<number, number>(64);
    for (let i = 0; i < 32; i += 1) m.set(i, i);
    for (let round = 0; round < 5; round += 1) {
      for (let i = 0; i < 32; i += 1) expect(m.get(i)).toBe(i);
    }
  });

  it("a new value replaces the old one, in either generation; undefined is a value", () => {
    const m = createBoundedMap<string, number | undefined>(4);
    m.set("a", 1);
    m.set("b", 2);
    m.set("c", 3); // "a" and "b" are now the old generation
    m.set("a", 10);
    expect(m.get("a")).toBe(10);
    m.set("u", undefined);
    expect(m.has("u")).toBe(true);
    expect(m.get("u")).toBeUndefined();
    m.clear();
    expect(m.has("a")).toBe(false);
  });

  it("memoize computes a kept key once, a key over the length limit every time", () => {
    let calls = 0;
    const f = memoize(
      (k: string) => {
        calls += 1;
        return k.length;
      },
      { maxEntries: 8, maxKeyLength: 5 },
    );
    expect([f("abc"), f("abc"), f("abc")]).toEqual([3, 3, 3]);
    expect(calls).toBe(1);
    expect([f("abcdefgh"), f("abcdefgh")]).toEqual([8, 8]);
    expect(calls).toBe(3);
  });
});
