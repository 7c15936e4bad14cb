import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AnalyticsStore,
  closeCompacted,
  isHeldByAnotherProcess,
  openAnalyticsStore,
} from "../../../../src/store/duckdb/analytics-store.js";

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
     ${page}, NULL, NULL, NULL, NULL, 1, 'v1', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL`;
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

  it("tells a lock held by another process from other failures", () => {
    expect(
      isHeldByAnotherProcess(
        new Error('IO Error: Could not set lock on file "/x/analytics.duckdb": Conflicting lock'),
      ),
    ).toBe(true);
    expect(isHeldByAnotherProcess(new Error("IO Error: disk full"))).toBe(false);
  });
});
