/**
 * What one retention pruning step costs on SQLite (issue 24):
 * `node --import tsx bench/retention-step.mjs`. Writes EVENTS (default
 * 300,000) old events of one site to a fresh store, then times 100
 * `pruneEventsStep` calls for each step size: the time the call holds the JS
 * thread (the transaction), and the time until it resolves (with the WAL
 * sync). docs/performance.md, "Retention: prune during ingestion".
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { writeOldPageviews } from "./lib/old-events.mjs";

const DAY = 86_400_000;
const N = Number(process.env.EVENTS ?? 300_000);
const dir = mkdtempSync(join(tmpdir(), "bench-retention-"));
const store = createSqliteStore(join(dir, "bench.sqlite"));
try {
  await store.createAccount({ id: "a", name: "a", plan: "scale", createdAt: 0 });
  await store.createSite({ id: "s", accountId: "a", hostnames: [], createdAt: 0 });
  const now = Date.now();
  await writeOldPageviews({
    store,
    siteId: "s",
    accountId: "a",
    n: N,
    tsOf: (j) => now - 40 * DAY + j,
    visitors: 1000,
  });
  for (const limit of [100, 200, 500]) {
    let cursor;
    let js = 0;
    let total = 0;
    let max = 0;
    const steps = 100;
    for (let k = 0; k < steps; k++) {
      const t0 = performance.now();
      const pending = store.pruneEventsStep("s", now - 3 * DAY, limit, cursor);
      const t1 = performance.now();
      cursor = (await pending).cursor;
      js += t1 - t0;
      total += performance.now() - t0;
      max = Math.max(max, t1 - t0);
    }
    console.log(
      `${limit} events/step: ${(js / steps).toFixed(2)} ms on the JS thread (max ${max.toFixed(1)}), ${(total / steps).toFixed(2)} ms with the WAL sync`,
    );
  }
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
