/**
 * DuckDB's EXPLAIN ANALYZE of the SQL the engine generates for one of
 * bench:analytics' queries (`DATA_DIR=… QUERY='visitors by day' npm run
 * bench:explain`, on a data directory that `LOAD=direct DATA_DIR=… npm run
 * bench:analytics` wrote): the query runs once through the engine, each
 * statement it sends is recorded with its parameters, then each is run again
 * under EXPLAIN ANALYZE and its profile printed (operators with their time
 * and cardinality), with the statement's own time. ENGINE=<checkout> profiles
 * another build's SQL on the same file, as in bench:analytics.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { openAnalyticsStore } from "../src/store/duckdb/analytics-store.ts";
import { directQueries, SITE_ID } from "./lib/analytics-site.mjs";
import { recordingStore } from "./lib/recording-store.mjs";

const { createDuckDbAnalytics } = await import(
  `${process.env.ENGINE ? `${process.env.ENGINE}/` : "../"}src/store/duckdb/analytics-engine.ts`
);
const dir = process.env.DATA_DIR;
if (!dir) throw new Error("DATA_DIR: a data directory written by LOAD=direct bench:analytics");
const NOW = Number(process.env.NOW ?? Date.UTC(2026, 2, 11, 12));
const want = (process.env.QUERY ?? "visitors by day").toLowerCase();

const analytics = await openAnalyticsStore({
  path: join(dir, "analytics.duckdb"),
  threads: Number(process.env.ANALYTICS_THREADS ?? 2),
  memoryLimit: process.env.ANALYTICS_MEMORY_LIMIT ?? "512MB",
});
const statements = [];
// Every statement the engine sends, recorded on its way to DuckDB.
const recording = recordingStore(analytics, (st) => statements.push(st));
const engine = createDuckDbAnalytics({ analytics: recording, timeoutMs: 600_000, perSite: 4 });
const { queries, funnels } = directQueries(SITE_ID, NOW);
const [name, plan] =
  Object.entries({ ...queries, ...funnels }).find(([k]) => k.toLowerCase().includes(want)) ?? [];
if (!plan) throw new Error(`no query named like ${want}`);
const s = performance.now();
if (name in funnels) await engine.funnel(plan);
else await engine.query(plan);
console.log(`${name}: ${Math.round(performance.now() - s)} ms through the engine`);
const conn = await analytics.connect();
for (const st of statements) {
  // Tables the engine made: a temporary one (its own connection's) is made
  // again here; a shared one (read-memo.ts: `read_memo.…`, every connection
  // sees it) is there already. Each one's SELECT is profiled.
  const made = /^\s*CREATE (?:OR REPLACE )?(TEMP )?TABLE ([\w.]+) AS/i.exec(st.sql);
  if (made) {
    const body = st.sql.slice(made[0].length);
    const r = await conn.runAndReadAll(`EXPLAIN ANALYZE ${body}`, st.values);
    if (made[1])
      await conn.run(
        st.sql.replace(/^\s*CREATE (TEMP )?TABLE/i, "CREATE OR REPLACE TEMP TABLE"),
        st.values,
      );
    console.log(`\n--- ${st.sql.slice(0, 80).replace(/\s+/g, " ")}…`);
    console.log(String(r.getRows()[0]?.[1] ?? ""));
    continue;
  }
  if (!/^\s*(WITH|SELECT)/i.test(st.sql)) continue;
  const t = performance.now();
  await conn.runAndReadAll(st.sql, st.values);
  const ms = Math.round(performance.now() - t);
  const r = await conn.runAndReadAll(`EXPLAIN ANALYZE ${st.sql}`, st.values);
  console.log(`\n--- ${ms} ms: ${st.sql.slice(0, 80).replace(/\s+/g, " ")}…`);
  console.log(String(r.getRows()[0]?.[1] ?? ""));
}
conn.closeSync();
analytics.close();
console.log(`load average ${readFileSync("/proc/loadavg", "utf8").trim()}`);
