/**
 * Kept tables go at once after any write but a batch of events; one a read
 * still holds goes when the read ends.
 */
import { describe, expect, it, vi } from "vitest";
import { openAnalyticsStore } from "../../../../src/store/duckdb/analytics-store.js";
import { createKeptTables, type KeptTable } from "../../../../src/store/duckdb/kept-tables.js";

describe("kept tables", () => {
  it("keeps a table across batches of events, drops it at once after any other write, and after the last read that held it", async () => {
    const s = await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" });
    const conn = await s.connect();
    try {
      const kept = createKeptTables<KeptTable>(s, "t", 1024);
      const tables = async () =>
        (
          await conn.runAndReadAll(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'read_memo' ORDER BY 1",
          )
        )
          .getRows()
          .map(([name]) => `read_memo.${name}`);
      /** A table kept under `key`, as of the current generation. */
      const keep = async (key: string) => {
        const table = kept.name();
        const generation = s.generation;
        const { seq } = await kept.snapshot(conn, table, () =>
          conn.run(`CREATE TABLE ${table} AS SELECT 1 AS k`),
        );
        const entry = { table, seq, generation, bytes: 1 };
        expect(await kept.keep(conn, key, entry, generation)).toBe(true);
        return entry;
      };
      const a = await keep("a");
      const b = await keep("b");
      expect(await tables()).toEqual([a.table, b.table].sort());
      // A batch of events keeps them.
      await s.scopedWrite({ sites: new Map([["s1", 0]]) }, () => s.writer.run("SELECT 1"));
      expect(kept.get("a")).toBe(a);
      // A read holds a; an erasure lets both go: b is dropped at once, a when the read ends.
      const release = kept.hold(a);
      await s.writer.run("DELETE FROM events WHERE seq = 1");
      expect(kept.get("a")).toBeUndefined();
      await kept.idle();
      expect(await tables()).toEqual([a.table]);
      release();
      await vi.waitFor(async () => expect(await tables()).toEqual([]), { timeout: 20_000 });
      // Past the budget (1024 bytes), the least recently used goes.
      const c = await keep("c");
      const big = kept.name();
      await kept.snapshot(conn, big, () => conn.run(`CREATE TABLE ${big} AS SELECT 1 AS k`));
      expect(
        await kept.keep(
          conn,
          "big",
          { table: big, seq: 0n, generation: s.generation, bytes: 1024 },
          s.generation,
        ),
      ).toBe(true);
      expect(kept.get("c")).toBeUndefined();
      expect(await tables()).toEqual([big]);
      expect(c.table).not.toBe(big);
    } finally {
      conn.closeSync();
      s.close();
    }
  });

  it("lets a table go after its store closed without trying again: the drop fails once and ends", async () => {
    const s = await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" });
    const conn = await s.connect();
    const kept = createKeptTables<KeptTable>(s, "t", 1024);
    const table = kept.name();
    const generation = s.generation;
    const { seq } = await kept.snapshot(conn, table, () =>
      conn.run(`CREATE TABLE ${table} AS SELECT 1 AS k`),
    );
    const entry = { table, seq, generation, bytes: 1 };
    await kept.keep(conn, "a", entry, generation);
    const release = kept.hold(entry);
    kept.forget("a");
    conn.closeSync();
    s.close();
    // The last read ends after the store closed: its drop finds no connection.
    release();
    await kept.idle();
  });
});
