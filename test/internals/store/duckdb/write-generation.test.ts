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
});
