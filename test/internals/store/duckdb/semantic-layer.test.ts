/**
 * The semantic layer's two ways of counting distinct visitors give the same
 * count: by the visitors' keys (a hash) and by bitmaps of their dense
 * numbers, with and without a condition; a number past the bitmaps' top
 * fails the statement with the error the engine recognizes (it then counts
 * by key).
 */
import { DuckDBInstance } from "@duckdb/node-api";
import { describe, expect, it } from "vitest";
import {
  bitmapVisitors,
  HASHED_VISITORS,
  isBitmapRangeError,
} from "../../../../src/store/duckdb/semantic-layer.js";

describe("counting distinct visitors", () => {
  it("counts the same by bitmap as by key, with a condition too; a number past the top fails recognizably", async () => {
    const instance = await DuckDBInstance.create(":memory:");
    const conn = await instance.connect();
    const rows = (top: number) => `
      SELECT x.g, ${bitmapVisitors(top)("x")}, ${bitmapVisitors(top)("x", "x.ok")}, ${HASHED_VISITORS("x")}, ${HASHED_VISITORS("x", "x.ok")}
      FROM (SELECT *, dv AS vk FROM (VALUES (0, 1, true), (2, 1, false), (2, 1, true), (5, 2, false),
        (9, 2, true), (9, 3, true), (3, 4, false)) t(dv, g, ok)) x
      GROUP BY x.g ORDER BY x.g`;
    // Group 1: numbers 0 and 2 (2 twice); 2: 5 and 9; 3: 9; 4: 3, which fails the condition.
    expect((await conn.runAndReadAll(rows(9))).getRowsJS()).toEqual([
      [1, 2n, 2n, 2n, 2n],
      [2, 2n, 1n, 2n, 1n],
      [3, 1n, 1n, 1n, 1n],
      [4, 1n, 0n, 1n, 0n],
    ]);
    const failed = await conn.runAndReadAll(rows(8)).catch((err: unknown) => err);
    expect(String(failed)).toContain(
      "Out of Range Error: Value 9 is outside of provided min and max range (0 <-> 8)",
    );
    expect(isBitmapRangeError(failed)).toBe(true);
    expect(isBitmapRangeError(new Error("Out of Memory Error"))).toBe(false);
    conn.closeSync();
    instance.closeSync();
  });
});
