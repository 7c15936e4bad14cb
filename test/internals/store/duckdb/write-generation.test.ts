/**
 * The write generation (src/store/duckdb/write-generation.ts): each call on
 * a watched object moves it at its start and at its end, a promise's call
 * counts as writing until it settles (failed too), and what a call returns
 * (an appender) is watched as well, but for the `append…` calls that only
 * fill its buffer (a row reaches the table in `endRow`).
 */
import { describe, expect, it } from "vitest";
import { createWriteGeneration } from "../../../../src/store/duckdb/write-generation.js";

class Appender {
  values = 0;
  rows = 0;
  appendVarchar() {
    this.values += 1;
  }
  endRow() {
    this.rows += 1;
  }
}

class Writer {
  async run(fail = false) {
    await new Promise((r) => setImmediate(r));
    if (fail) throw new Error("Constraint Error: duplicate key");
  }
  async createAppender() {
    return new Appender();
  }
  name = "writer";
}

describe("the write generation", () => {
  it("moves at a call's start and end, counts it as writing until it settles, and watches what it returns", async () => {
    const g = createWriteGeneration();
    const w = g.watch(new Writer());
    expect([g.value, g.writing]).toEqual([0, false]);
    const running = w.run();
    expect([g.value, g.writing]).toEqual([1, true]);
    await running;
    expect([g.value, g.writing]).toEqual([2, false]);
    await expect(w.run(true)).rejects.toThrow("Constraint Error: duplicate key");
    expect([g.value, g.writing]).toEqual([4, false]);
    const ap = await w.createAppender();
    expect(g.value).toBe(6);
    ap.appendVarchar();
    expect([g.value, ap.values]).toEqual([6, 1]);
    ap.endRow();
    expect([g.value, g.writing, ap.rows]).toEqual([8, false, 1]);
    // A property that is not a method moves nothing.
    expect(w.name).toBe("writer");
    const seen: number[] = [];
    g.onChange(() => seen.push(g.value));
    g.bump();
    expect(g.value).toBe(9);
    expect(seen).toEqual([9]);
  });

  it("tells what the writes since a generation changed: per site the earliest time a scoped write names, anything once one did not say", async () => {
    const g = createWriteGeneration();
    const w = g.watch(new Writer());
    const scopes: unknown[] = [];
    g.onChange((scope) => scopes.push(scope));
    await w.run();
    const a = g.value;
    expect(g.changedSince(a)).toEqual(new Map());
    // The scope is filled in while the write runs: read once it ended.
    const first = { sites: new Map<string, number>() };
    await g.scoped(first, async () => {
      await w.run();
      first.sites.set("s1", 5_000);
      await w.run();
    });
    expect(g.changedSince(a)).toEqual(new Map([["s1", 5_000]]));
    expect(scopes.slice(-4)).toEqual([first, first, first, first]);
    const b = g.value;
    await g.scoped(
      {
        sites: new Map([
          ["s1", 3_000],
          ["s2", 9_000],
        ]),
      },
      () => w.run(),
    );
    expect(g.changedSince(b)).toEqual(
      new Map([
        ["s1", 3_000],
        ["s2", 9_000],
      ]),
    );
    expect(g.changedSince(a)).toEqual(
      new Map([
        ["s1", 3_000],
        ["s2", 9_000],
      ]),
    );
    // A write that says nothing, or an explicit move (a rewrite's swap): anything.
    const c = g.value;
    await w.run();
    expect(g.changedSince(a)).toBeUndefined();
    expect(g.changedSince(c)).toBeUndefined();
    const d = g.value;
    g.bump();
    expect(g.changedSince(d)).toBeUndefined();
    expect(scopes.at(-1)).toBeUndefined();
    // Two writes at once cannot be told apart: the second's moves count as anything.
    const e = g.value;
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const outer = g.scoped({ sites: new Map([["s1", 1]]) }, async () => {
      await w.run();
      await held;
    });
    const inner = g.scoped({ sites: new Map([["s2", 1]]) }, () => w.run());
    await inner;
    release();
    await outer;
    expect(g.changedSince(e)).toBeUndefined();
    // A write's moves are remembered as one run (an appender's rows move it
    // twice each), the last 1,024 runs; moves older than those: anything.
    const f = g.value;
    const ap = await g.scoped({ sites: new Map([["s3", 7]]) }, async () => {
      const a = await w.createAppender();
      for (let i = 0; i < 10_000; i++) a.endRow();
      return a;
    });
    expect(ap.rows).toBe(10_000);
    expect(g.changedSince(f)).toEqual(new Map([["s3", 7]]));
    for (let i = 0; i < 1_100; i++) await g.scoped({ sites: new Map() }, () => w.run());
    expect(g.changedSince(g.value - 2_000)).toEqual(new Map());
    expect(g.changedSince(f)).toBeUndefined();
  });
});
