/**
 * ExportEvents over a million events (`npm run bench:export`, issue 24): a
 * fresh SQLite site of EVENTS events (default 1,000,000) written straight to
 * the store, then the export's pages (ReportsService.ExportEvents and the
 * export door read the same pages) turned into NDJSON lines as the door does
 * and counted, with the heap sampled after a full collection every 50 pages.
 * Prints one JSON object: the count (it must equal EVENTS), the bytes, the
 * seconds, and the largest heap growth over the start of the export.
 * Run with --expose-gc (the npm script does).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toJsonString } from "@bufbuild/protobuf";
import { StoredEventSchema } from "../gen/ingest/v1/reports_pb.ts";
import { createReports } from "../src/domain/reports.ts";
import { toStoredEvent } from "../src/edge/stored-event.ts";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.ts";

const NOW = Date.UTC(2026, 2, 11, 12);
const EVENTS = Number(process.env.EVENTS ?? 1_000_000);
const BATCH = 5000;
const SITE = "site_bench";
const gc = globalThis.gc ?? (() => {});

const dir = mkdtempSync(join(tmpdir(), "bench-export-"));
const store = createSqliteStore(join(dir, "bench.sqlite"));
try {
  await store.createAccount({ id: "acct_bench", name: "bench", plan: "scale", createdAt: NOW });
  await store.createSite({ id: SITE, accountId: "acct_bench", hostnames: [], createdAt: NOW });
  const t0 = performance.now();
  for (let i = 0; i < EVENTS; i += BATCH) {
    const events = [];
    for (let j = i; j < Math.min(EVENTS, i + BATCH); j++) {
      const ts = NOW - EVENTS + j;
      events.push({
        siteId: SITE,
        name: "pageview",
        url: `https://example.com/p${j % 100}`,
        title: `Page ${j % 100}`,
        ts,
        receivedAt: ts,
        visitorId: `v${j % 50_000}`,
      });
    }
    await store.commitEvents([
      { accountId: "acct_bench", month: "2026-03", ceiling: 1e15, countable: 0, events, links: [] },
    ]);
  }
  const t1 = performance.now();
  const reports = createReports({ store, clock: { now: () => NOW } });
  gc();
  const base = process.memoryUsage().heapUsed;
  let peak = 0;
  let count = 0;
  let bytes = 0;
  let pages = 0;
  for await (const page of await reports.exportEvents({ siteId: SITE })) {
    for (const e of page) {
      bytes += Buffer.byteLength(
        `${toJsonString(StoredEventSchema, create(StoredEventSchema, toStoredEvent(e)))}\n`,
      );
    }
    count += page.length;
    if (++pages % 50 === 0) {
      gc();
      peak = Math.max(peak, process.memoryUsage().heapUsed - base);
    }
  }
  const t2 = performance.now();
  console.log(
    JSON.stringify({
      events: EVENTS,
      exported: count,
      countMatches: count === EVENTS,
      ndjsonMB: +(bytes / 2 ** 20).toFixed(1),
      seedSeconds: +((t1 - t0) / 1000).toFixed(1),
      exportSeconds: +((t2 - t1) / 1000).toFixed(1),
      heapGrowthMB: +(peak / 2 ** 20).toFixed(1),
      gcExposed: globalThis.gc !== undefined,
    }),
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
