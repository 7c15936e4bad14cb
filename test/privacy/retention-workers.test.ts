/**
 * Retention under WORKERS (issue 24): of N server processes on one store,
 * exactly one runs the pruner, and `close()` on SIGTERM stops it with the
 * rest. The real service as a child process, its clock at TEST_NOW.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { analyticsPathBeside, openAnalyticsStore } from "../../src/store/duckdb/analytics-store.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { startChildServer } from "../helpers/child-server.js";
import { seedTenantFile, TEST_NOW } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";

const DAY = 86_400_000;
const OLD = 1_200;
let dir: string;
let path: string;
let siteId: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ingest-retention-"));
  path = join(dir, "db.sqlite");
  let accountId: string;
  ({ siteId, accountId } = await seedTenantFile(path));
  const store = createSqliteStore(path);
  try {
    const events = Array.from({ length: OLD }, (_, i) => ({
      siteId,
      name: "pageview",
      url: `https://example.com/${i}`,
      ts: TEST_NOW - 10 * DAY + i,
      receivedAt: TEST_NOW - 10 * DAY + i,
      visitorId: `v${i % 7}`,
    }));
    await store.commitEvents([
      { accountId, month: "2026-03", ceiling: 1e9, countable: 0, events, links: [], touches: [] },
    ]);
    expect(await store.setEventsRetention(siteId, 3)).toBe(true);
  } finally {
    await store.close();
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("retention under WORKERS", () => {
  it("prunes in one worker only, in steps of RETENTION_STEP_EVENTS", {
    timeout: scaled(90_000),
  }, async () => {
    const child = await startChildServer({
      STORE_URL: `sqlite:${path}`,
      WORKERS: "2",
      LOG_LEVEL: "info",
      RETENTION_INTERVAL_MS: "200",
      RETENTION_STEP_EVENTS: "500",
    });
    const pruneLines = () =>
      child
        .output()
        .split("\n")
        .filter((l) => l.includes('"msg":"events pruned"'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    try {
      // Both workers listening (they load TypeScript on start: slow on a busy machine), and a pass done.
      for (
        let i = 0;
        i < 600 &&
        ((child.output().match(/"msg":"listening"/g) ?? []).length < 2 || pruneLines().length < 1);
        i++
      ) {
        await new Promise((r) => setTimeout(r, 100));
      }
      // More intervals go by: a second pruner would log its own pass.
      await new Promise((r) => setTimeout(r, 1_500));
      const lines = pruneLines();
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        site_id: siteId,
        events_retention_days: 3,
        horizon: new Date(Date.UTC(2026, 2, 8)).toISOString(),
        // Counted in the analytics store, which the feed had filled first (migration 19).
        events_pruned: OLD,
        // One step finds SQLite's outbox empty (the feed moved the events); SQLite keeps no
        // rollups' visitor ids since migration 20.
        steps: 1,
        complete: true,
      });
    } finally {
      child.proc.kill("SIGTERM");
    }
    expect(await child.exited).toBe(0);
    const store = createSqliteStore(path);
    try {
      expect(await store.listEvents(siteId, 10)).toEqual([]);
    } finally {
      await store.close();
    }
    // The pruning reached the analytics store, where the events were.
    const analytics = await openAnalyticsStore({
      path: analyticsPathBeside(path),
      threads: 1,
      memoryLimit: "256MB",
    });
    try {
      const n = await analytics.writer.runAndReadAll(
        "SELECT count(*) FROM events WHERE site_id = $1",
        [siteId],
      );
      expect(Number(n.getRows()[0]?.[0])).toBe(0);
    } finally {
      analytics.close();
    }
  });
});
