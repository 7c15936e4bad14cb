/**
 * What the analytics file's upgrades share (file-upgrades.ts): a column
 * looked up, one transaction whole or not at all, the rewrite's mark kept
 * at its earliest.
 */
import { describe, expect, it } from "vitest";
import { openAnalyticsStore } from "../../../../src/store/duckdb/analytics-store.js";
import {
  hasColumn,
  inTransaction,
  markDueForRewrite,
} from "../../../../src/store/duckdb/file-upgrades.js";

describe("a file's upgrades", () => {
  it("find a column, commit whole or roll back and rethrow, and keep the earliest rewrite mark", async () => {
    const store = await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" });
    const w = store.writer;
    const rows = async (sql: string) => (await w.runAndReadAll(sql)).getRowsJS();
    try {
      expect(await hasColumn(w, "events", "sn")).toBe(true);
      expect(await hasColumn(w, "events", "nope")).toBe(false);
      expect(await hasColumn(w, "nope", "sn")).toBe(false);
      // A failure half-way: nothing of the transaction stays.
      await expect(
        inTransaction(w, async () => {
          await w.run("ALTER TABLE stitches ADD COLUMN extra INTEGER");
          await markDueForRewrite(w, 5);
          throw new Error("crash stand-in");
        }),
      ).rejects.toThrow("crash stand-in");
      expect(await hasColumn(w, "stitches", "extra")).toBe(false);
      expect(await rows("SELECT seq FROM feed_state WHERE id = 3")).toEqual([]);
      // Committed whole; a later mark leaves the earlier one.
      expect(
        await inTransaction(w, async () => {
          await markDueForRewrite(w, 7);
          return "done";
        }),
      ).toBe("done");
      await markDueForRewrite(w, 9);
      expect(await rows("SELECT seq FROM feed_state WHERE id = 3")).toEqual([[7n]]);
    } finally {
      store.close();
    }
  });
});
