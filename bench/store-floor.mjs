/**
 * The store's own ceiling for events on this machine: `commitEvents` of the
 * built SQLite adapter, in-process, with already-enriched events shaped like
 * the bench's batches (64 requests × 50 events per transaction, every event a
 * new visitor with a first touch). No HTTP, no validation, no enrichment:
 * what is left is row building, statement execution, the WAL write and its
 * sync. Scenario b cannot beat this number in one process.
 *
 *   npm run --silent build && node bench/store-floor.mjs [seconds=5]
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const DIST = join(dirname(fileURLToPath(import.meta.url)), "../dist");
const { createSqliteStore } = await import(join(DIST, "src/store/sqlite/sqlite-store.js"));
const seconds = Number(process.argv[2] ?? 5);

async function run(label, { touches, groups = 64, perGroup = 50 }) {
  const dir = mkdtempSync(join(os.tmpdir(), "store-floor-"));
  const store = createSqliteStore(join(dir, "ingest.sqlite"));
  try {
    const siteId = "site_0123456789abcdef01234567";
    const now = Date.now();
    let v = 0;
    const event = () => {
      const visitorId = (v++ * 2654435761 + 0x9e3779b9).toString(16).padStart(32, "0").slice(-32);
      return {
        siteId,
        name: "pageview",
        url: "https://example.com/pricing",
        ts: now,
        receivedAt: now,
        visitorId,
        country: "US",
        browser: "Firefox",
        os: "Linux",
        device: "desktop",
      };
    };
    const group = () => {
      const events = Array.from({ length: perGroup }, event);
      return {
        accountId: "acct_bench",
        month: "2026-01",
        ceiling: 1e12,
        countable: perGroup,
        events,
        links: [],
        touches: touches
          ? events.map((e) => ({
              siteId,
              visitorId: e.visitorId,
              ts: e.ts,
              internal: false,
              channel: "Direct",
              landingPage: "https://example.com/pricing",
            }))
          : [],
      };
    };
    let n = 0;
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    while (performance.now() - t0 < seconds * 1000) {
      await store.commitEvents(Array.from({ length: groups }, group));
      n += groups * perGroup;
    }
    const secs = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const cpuSecs = (cpu.user + cpu.system) / 1e6;
    process.stdout.write(
      `${label.padEnd(44)} ${Math.round(n / secs)
        .toLocaleString("en-US")
        .padStart(9)} events/s  ` +
        `${((cpuSecs * 1e6) / n).toFixed(1)} µs CPU/event  (${(cpuSecs / secs).toFixed(2)} cores)\n`,
    );
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await run("commitEvents, 64×50 per tx, with first touches", { touches: true });
await run("commitEvents, 64×50 per tx, no touches", { touches: false });
await run("commitEvents, 64×1 per tx, with first touches", { touches: true, perGroup: 1 });
