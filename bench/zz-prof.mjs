import { join } from "node:path";
import { openAnalyticsStore } from "../dist/src/store/duckdb/analytics-store.js";
import { createDuckDbAnalytics } from "../dist/src/store/duckdb/analytics-engine.js";
import { SITE_ID } from "./lib/analytics-site.mjs";
import { newGeneration } from "./lib/new-generation.mjs";
const dir = process.env.DATA_DIR;
const NOW = Number(process.env.NOW);
const analytics = await openAnalyticsStore({ path: join(dir, "analytics.duckdb"), threads: 2, memoryLimit: "384MB" });
const engine = createDuckDbAnalytics({ analytics, timeoutMs: 600000, perSite: 4 });
const DAY = 86400000; const to = Math.floor(NOW / DAY) * DAY + DAY; const period = { from: to - 30 * DAY, to };
const plan = { siteId: SITE_ID, timeZone: "UTC", dimensions: ["customer"], filters: [], period, model: "first_touch", currency: "USD", limit: 10, offset: 0, metrics: ["net_revenue", "payments"], orderBy: [{ field: "net_revenue", desc: true }] };
for (let i = 0; i < 8; i++) {
  await newGeneration(analytics);
  const s = performance.now();
  const r = await engine.query(plan);
  console.log(Math.round(performance.now() - s), r.rows.length, r.more);
}
analytics.close();
