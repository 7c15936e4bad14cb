/**
 * What numbering visitors costs the feed per batch (docs/performance.md,
 * "Dense visitor numbers"): on a copy of DATA_DIR's analytics file (written
 * by `LOAD=direct bench:analytics`, or any data directory), BATCHES batches of
 * EVENTS events of which NEW (a fraction) are new visitors and the rest known
 * ones of the bench site, each staged as the feed stages them, then moved
 * into `events` twice, each in a transaction rolled back: with the numbers
 * (`moveStagedEvents`: the known looked up, the new numbered) and without
 * (a plain copy of the stage, numbers 0), the two alternating. Prints each
 * batch's milliseconds and the medians.
 *
 *   DATA_DIR=<dir> npm run bench:visitor-numbers
 */
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { appendEvent } from "../src/store/duckdb/analytics-rows.ts";
import { openAnalyticsStore } from "../src/store/duckdb/analytics-store.ts";
import { moveStagedEvents, openEventStage } from "../src/store/duckdb/visitor-numbers.ts";
import { SITE_ID } from "./lib/analytics-site.mjs";

const dir = process.env.DATA_DIR;
if (!dir) throw new Error("DATA_DIR: a data directory with an analytics.duckdb");
const BATCHES = Number(process.env.BATCHES ?? 8);
const EVENTS = Number(process.env.EVENTS ?? 1000);
const NEW = Number(process.env.NEW ?? 0.5);

const scratch = mkdtempSync(join(tmpdir(), "bench-numbers-"));
const path = join(scratch, "analytics.duckdb");
copyFileSync(join(dir, "analytics.duckdb"), path);
const analytics = await openAnalyticsStore({
  path,
  threads: Number(process.env.ANALYTICS_THREADS ?? 2),
  memoryLimit: process.env.ANALYTICS_MEMORY_LIMIT ?? "384MB",
});
const w = analytics.writer;
const one = async (sql) => (await w.runAndReadAll(sql)).getRowsJS()[0]?.[0];
const known = Number(
  await one(`SELECT count(*) FROM visitor_numbers WHERE site_id = '${SITE_ID}'`),
);
const visitors = Number(await one("SELECT count(*) FROM visitor_numbers"));
let seq = Number(await one("SELECT max(seq) FROM events")) + 1;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** One batch's events: the bench site's visitors `v<k>` (known) and new ones. */
function batch(b) {
  const rows = [];
  for (let i = 0; i < EVENTS; i++) {
    const fresh = i < EVENTS * NEW;
    rows.push({
      id: seq++,
      site_id: SITE_ID,
      name: "pageview",
      url: "https://bench.test/x",
      referrer: null,
      title: null,
      width: null,
      language: null,
      props: null,
      ts: 1_795_705_200_000,
      received_at: 1_795_705_200_000,
      visitor_id: fresh ? `new-${b}-${i}` : `v${(b * 7919 + i * 13) % Math.max(1, known)}`,
      user_id: null,
      country: null,
      browser: null,
      os: null,
      device: null,
      referrer_host: null,
      utm_source: null,
      utm_medium: null,
      utm_campaign: null,
      utm_term: null,
      utm_content: null,
      click_ids: null,
    });
  }
  return rows;
}

/** Stages `rows`, then times `move` in a transaction rolled back. */
async function timed(rows, move) {
  await w.run("BEGIN TRANSACTION");
  try {
    const ap = await openEventStage(w);
    for (const r of rows) appendEvent(ap, r, ["bench.test"]);
    ap.closeSync();
    const started = performance.now();
    await move();
    return Math.round(performance.now() - started);
  } finally {
    await w.run("ROLLBACK");
  }
}

const numbered = [];
const plain = [];
for (let b = 0; b < BATCHES; b++) {
  const rows = batch(b);
  numbered.push(await timed(rows, () => moveStagedEvents(w)));
  plain.push(
    await timed(rows, () =>
      w.run("INSERT INTO events SELECT *, 0, 0 FROM temp.event_stage ORDER BY seq"),
    ),
  );
}
analytics.close();
rmSync(scratch, { recursive: true, force: true });
console.log(
  JSON.stringify({
    visitors,
    batch: { events: EVENTS, new: NEW },
    numberedMs: numbered,
    plainMs: plain,
    medianMs: { numbered: median(numbered), plain: median(plain) },
  }),
);
