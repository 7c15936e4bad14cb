import { DuckDBInstance } from "@duckdb/node-api";
import { describe, expect, it } from "vitest";
import { withPerfectHash } from "../../../../src/store/duckdb/perfect-hash.js";

describe("withPerfectHash", () => {
  it("groups keys of up to 20 bits in a perfect table while its work runs, past 20 by hashing, and resets the connection after, even when the work fails", async () => {
    const instance = await DuckDBInstance.create(":memory:", { threads: "1" });
    const conn = await instance.connect();
    try {
      // Numbers up to 999,000 (a site of about 1M visitors: 20 bits), and past 2^20.
      await conn.run(
        "CREATE TABLE n AS SELECT range::INTEGER AS dv, (range * 2)::INTEGER AS wide FROM range(0, 1000000, 1000)",
      );
      const plan = async (column: string) =>
        (await conn.runAndReadAll(`EXPLAIN SELECT ${column} FROM n GROUP BY ${column}`))
          .getRows()
          .map((r) => String(r[1]))
          .join("\n");
      const setting = async () =>
        (await conn.runAndReadAll("SELECT current_setting('perfect_ht_threshold')")).getRows();
      expect(await plan("dv")).not.toContain("PERFECT_HASH_GROUP_BY");
      const inside = await withPerfectHash(conn, async () => [
        await plan("dv"),
        await plan("wide"),
      ]);
      expect(inside[0]).toContain("PERFECT_HASH_GROUP_BY");
      expect(inside[1]).not.toContain("PERFECT_HASH_GROUP_BY");
      expect(await setting()).toEqual([[12n]]);
      await expect(
        withPerfectHash(conn, () => Promise.reject(new Error("cancelled"))),
      ).rejects.toThrow("cancelled");
      expect(await setting()).toEqual([[12n]]);
      expect(await plan("dv")).not.toContain("PERFECT_HASH_GROUP_BY");
    } finally {
      conn.closeSync();
      instance.closeSync();
    }
  });
});
