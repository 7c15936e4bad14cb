import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AnalyticsStore,
  closeCompacted,
  isHeldByAnotherProcess,
  openAnalyticsStore,
} from "../../../../src/store/duckdb/analytics-store.js";
import {
  expectDueForRewriteSince,
  rewindAnalyticsFile,
} from "../../../helpers/older-analytics-file.js";

const EMAIL = "jane.doe@example.org";
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A store whose file holds 20,000 events and one erased one, stored uncompressed so bytes can be grepped. */
async function storeWithErasedRow(): Promise<{ store: AnalyticsStore; path: string }> {
  const dir = mkdtempSync(join(tmpdir(), "analytics-store-"));
  dirs.push(dir);
  const path = join(dir, "analytics.duckdb");
  const store = await openAnalyticsStore({ path, threads: 1, memoryLimit: "256MB" });
  // Compression would hide the string from a byte search whether or not its row is gone.
  await store.writer.run("PRAGMA force_compression='uncompressed'");
  const row = (seq: string, page: string) =>
    `${seq}, 'site_1', 1, 1, 'pageview', ${page}, NULL, 'Direct', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     ${page}, NULL, NULL, NULL, NULL, 1, 'v1', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 1`;
  await store.writer.run(
    `INSERT INTO events SELECT ${row("i", "'https://example.com/p/' || md5(i::varchar)")} FROM range(20000) t(i)`,
  );
  await store.writer.run(
    `INSERT INTO events VALUES (${row("99999", `'https://example.com/u/${EMAIL}'`)})`,
  );
  await store.writer.run("CHECKPOINT");
  await store.writer.run("DELETE FROM events WHERE seq = 99999");
  return { store, path };
}

describe("the analytics file", () => {
  it("keeps a deleted row's bytes when only closed", async () => {
    const { store, path } = await storeWithErasedRow();
    store.close();
    expect(readFileSync(path).includes(EMAIL)).toBe(true);
  });

  it("holds no byte of a deleted row once rewritten at close, and every live row", async () => {
    const { store, path } = await storeWithErasedRow();
    await closeCompacted(store);
    expect(readFileSync(path).includes(EMAIL)).toBe(false);
    expect(existsSync(`${path}.compact`)).toBe(false);
    const again = await openAnalyticsStore({ path, threads: 1, memoryLimit: "256MB" });
    try {
      const rows = (await again.writer.runAndReadAll("SELECT count(*) FROM events")).getRows();
      expect(rows).toEqual([[20000n]]);
    } finally {
      again.close();
    }
  });

  it("numbers the visitors of a file written before the numbers when it opens, derives its visits again with them, and marks it due for a rewrite", async () => {
    const dir = mkdtempSync(join(tmpdir(), "analytics-store-"));
    dirs.push(dir);
    const path = join(dir, "analytics.duckdb");
    const store = await openAnalyticsStore({ path, threads: 1, memoryLimit: "256MB" });
    // Visitors 30, 10, 20 first seen in that order on s1 (seq), 10 again; 20 on s2.
    await store.writer.run(`INSERT INTO events BY NAME
      SELECT seq, site AS site_id, ts, vid, 'pageview' AS name, '/' AS page, 'https://example.com/' AS url,
        ts AS received_at, 'v' || vid AS visitor_id, 0 AS dv, CASE site WHEN 's1' THEN 1 ELSE 2 END AS sn
      FROM (VALUES (1, 's1', 1000, 30), (2, 's1', 2000, 10), (3, 's1', 900, 20), (4, 's1', 3000, 10),
                   (5, 's2', 1000, 20)) t(seq, site, ts, vid)`);
    store.close();
    // The schema before the numbers.
    await rewindAnalyticsFile(
      path,
      `ALTER TABLE events DROP COLUMN dv; ALTER TABLE visits DROP COLUMN dv;
       DROP TABLE visitor_numbers; DELETE FROM feed_state`,
    );
    const before = Date.now();
    const reopened = await openAnalyticsStore({ path, threads: 1, memoryLimit: "256MB" });
    const rows = async (sql: string) => (await reopened.writer.runAndReadAll(sql)).getRowsJS();
    expect(await rows("SELECT seq, dv FROM events ORDER BY seq")).toEqual([
      [1n, 0],
      [2n, 1],
      [3n, 2],
      [4n, 1],
      [5n, 0],
    ]);
    expect(await rows("SELECT site_id, vid, dv FROM visitor_numbers ORDER BY site_id, dv")).toEqual(
      [
        ["s1", 30n, 0],
        ["s1", 10n, 1],
        ["s1", 20n, 2],
        ["s2", 20n, 0],
      ],
    );
    expect(
      await rows("SELECT site_id, vid, v_start, dv FROM visits ORDER BY site_id, dv, v_start"),
    ).toEqual([
      ["s1", 30n, 1000n, 0],
      ["s1", 10n, 2000n, 1],
      ["s1", 20n, 900n, 2],
      ["s2", 20n, 1000n, 0],
    ]);
    await expectDueForRewriteSince(reopened, before);
    reopened.close();
  });

  it("tells a lock held by another process from other failures", () => {
    expect(
      isHeldByAnotherProcess(
        new Error('IO Error: Could not set lock on file "/x/analytics.duckdb": Conflicting lock'),
      ),
    ).toBe(true);
    expect(isHeldByAnotherProcess(new Error("IO Error: disk full"))).toBe(false);
  });

  it("holds no byte of a deleted row once rewritten while open, and every live row; the swap waits for open queries and new ones wait for it", async () => {
    const { store, path } = await storeWithErasedRow();
    try {
      const count = async (conn: Awaited<ReturnType<AnalyticsStore["connect"]>>) =>
        (await conn.runAndReadAll("SELECT count(*) FROM events")).getRows();
      // A query that began before the rewrite: the swap waits for it to end.
      const early = await store.connect();
      const inode = statSync(path).ino;
      let done = false;
      let copied = () => {};
      const copiedNow = new Promise<void>((r) => {
        copied = r;
      });
      const rewriting = store.rewrite({ onCopied: () => copied() }).then((r) => {
        done = true;
        return r;
      });
      // The copy runs beside it; the swap cannot start while it is open.
      expect(await count(early)).toEqual([[20000n]]);
      await copiedNow;
      await new Promise((r) => setTimeout(r, 200));
      expect(done).toBe(false);
      expect(statSync(path).ino).toBe(inode);
      expect(existsSync(`${path}.compact`)).toBe(true);
      // Asked during the swap: waits, then reads the new file.
      const later = store.connect();
      early.closeSync();
      const report = await rewriting;
      const conn = await later;
      try {
        expect(await count(conn)).toEqual([[20000n]]);
      } finally {
        conn.closeSync();
      }
      expect(report.bytesAfter).toBeGreaterThan(0);
      expect(report.seconds).toBeGreaterThanOrEqual(report.swapSeconds);
      // The feed's writer is the new file's: writes go on there.
      await store.writer.run("INSERT INTO events SELECT * FROM events WHERE seq = 1");
      expect((await store.writer.runAndReadAll("SELECT count(*) FROM events")).getRows()).toEqual([
        [20001n],
      ]);
      // No file of the directory holds the deleted row's bytes, and no copy is left.
      const dir = join(path, "..");
      expect(readdirSync(dir).filter((f) => f.includes("compact"))).toEqual([]);
      for (const f of readdirSync(dir)) {
        expect(readFileSync(join(dir, f)).includes(EMAIL), f).toBe(false);
      }
    } finally {
      store.close();
    }
    // The rewritten file reopens whole.
    const again = await openAnalyticsStore({ path, threads: 1, memoryLimit: "256MB" });
    try {
      const rows = (await again.writer.runAndReadAll("SELECT count(*) FROM events")).getRows();
      expect(rows).toEqual([[20001n]]);
    } finally {
      again.close();
    }
  });

  it("copies one snapshot while the writer goes on committing; swaps inside `exclusive`, and new queries connect only after `onSwapped`", async () => {
    const { store } = await storeWithErasedRow();
    try {
      const rows = async (conn: Awaited<ReturnType<AnalyticsStore["connect"]>>) =>
        Number((await conn.runAndReadAll("SELECT count(*) FROM events")).getRows()[0]?.[0]);
      const steps: string[] = [];
      let reached = () => {};
      const copied = new Promise<void>((r) => {
        reached = r;
      });
      let release = () => {};
      const held = new Promise<void>((r) => {
        release = r;
      });
      let asked: Promise<number> | undefined;
      const rewriting = store.rewrite({
        onCopied: () => {
          reached();
          return held;
        },
        exclusive: async (swap) => {
          steps.push("exclusive");
          return swap();
        },
        onSwapped: async () => {
          steps.push("swapped");
          // A query asked now waits for what the replay writes.
          asked = store.connect().then(async (conn) => {
            try {
              return await rows(conn);
            } finally {
              conn.closeSync();
            }
          });
          await store.writer.run("INSERT INTO events SELECT * FROM events WHERE seq < 5");
          steps.push("replayed");
        },
      });
      await copied;
      // The copy is written: the writer commits, and a query sees it at once (no gate yet).
      await store.writer.run("INSERT INTO events SELECT * FROM events WHERE seq < 10");
      const during = await store.connect();
      expect(await rows(during)).toBe(20_010);
      during.closeSync();
      expect(steps).toEqual([]);
      release();
      await rewriting;
      expect(steps).toEqual(["exclusive", "swapped", "replayed"]);
      // The new file is the copy's snapshot (without the 10 rows committed after it) plus the replay.
      expect(await asked).toBe(20_005);
      expect((await store.writer.runAndReadAll("SELECT count(*) FROM events")).getRows()).toEqual([
        [20_005n],
      ]);
    } finally {
      store.close();
    }
  });

  it("after a crash during a rewrite's copy, opens the old file whole and drops the half-written copy", async () => {
    const { store, path } = await storeWithErasedRow();
    store.close();
    // What a kill -9 during the copy leaves: a copy of a part of the file.
    writeFileSync(`${path}.compact`, readFileSync(path).subarray(0, 100_000));
    writeFileSync(`${path}.compact.wal`, "partial");
    const again = await openAnalyticsStore({ path, threads: 1, memoryLimit: "256MB" });
    try {
      expect(existsSync(`${path}.compact`)).toBe(false);
      expect(existsSync(`${path}.compact.wal`)).toBe(false);
      const rows = (await again.writer.runAndReadAll("SELECT count(*) FROM events")).getRows();
      expect(rows).toEqual([[20000n]]);
    } finally {
      again.close();
    }
  });
});
