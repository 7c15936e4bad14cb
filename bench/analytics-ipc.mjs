/**
 * What reaching the analytics engine over the cluster's IPC costs under
 * WORKERS (`npm run bench:analytics-ipc`, issue 30): a real node:cluster
 * with `serialization: 'advanced'`, the primary relaying (src/cluster/port-relay.ts),
 * one worker serving an engine whose answer is ready-made (a Query answer of
 * ROWS rows: 2 dimensions, 5 metrics of which one is money as bigint), the
 * other calling it CALLS times in a row. The figures are the round trip
 * caller → primary → owner → primary → caller, over the engine's own time,
 * which is nil here. docs/performance.md, "Scale-out: WORKERS=N".
 */
import cluster from "node:cluster";
import { createRemotePort, relayPorts, servePort } from "../src/cluster/port-relay.ts";

const CALLS = Number(process.env.CALLS ?? 2_000);
const SIZES = (process.env.ROWS ?? "10,100,1000").split(",").map(Number);

/** A Query answer of `rows` rows, as the DuckDB engine gives it. */
function answer(rows) {
  const metrics = (i) => [
    { kind: "count", value: 1_000 + i },
    { kind: "count", value: 1_500 + i },
    { kind: "number", value: 42.17 },
    { kind: "number", value: 181.5 },
    { kind: "money", currency: "USD", minor: BigInt(249_900 + i) },
  ];
  return {
    rows: Array.from({ length: rows }, (_, i) => ({
      dimensions: [`Channel ${i % 9}`, `https://example.com/page/${i}`],
      metrics: metrics(i),
    })),
    totals: metrics(0),
    more: rows >= 100,
  };
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

if (cluster.isPrimary) {
  cluster.setupPrimary({ serialization: "advanced" });
  relayPorts(cluster);
  const owner = cluster.fork({ BENCH_ROLE: "owner" });
  owner.on("message", (m) => {
    if (m?.type !== "port:serving") return;
    const caller = cluster.fork({ BENCH_ROLE: "caller" });
    caller.on("message", (r) => {
      if (r?.type !== "bench:result") return;
      process.stdout.write(`${JSON.stringify(r.result, null, 2)}\n`);
      for (const w of Object.values(cluster.workers ?? {})) w?.kill();
    });
  });
} else if (process.env.BENCH_ROLE === "owner") {
  const answers = new Map(SIZES.map((n) => [n, answer(n)]));
  servePort("analytics", {
    async query(plan) {
      return answers.get(plan.limit);
    },
  });
} else {
  const engine = createRemotePort("analytics", {
    timeoutMs: 10_000,
    unavailable: (cause) => new Error("unavailable", { cause }),
  });
  const result = { calls: CALLS, sizes: {} };
  for (const rows of SIZES) {
    const plan = { siteId: "site_bench", limit: rows };
    for (let i = 0; i < 100; i++) await engine.query(plan, new AbortController().signal);
    const ms = [];
    for (let i = 0; i < CALLS; i++) {
      const s = performance.now();
      await engine.query(plan, new AbortController().signal);
      ms.push(performance.now() - s);
    }
    ms.sort((a, b) => a - b);
    const bytes = JSON.stringify(answer(rows), (_k, v) => (typeof v === "bigint" ? String(v) : v));
    result.sizes[rows] = {
      jsonBytes: bytes.length,
      p50Ms: Math.round(quantile(ms, 0.5) * 1000) / 1000,
      p99Ms: Math.round(quantile(ms, 0.99) * 1000) / 1000,
      maxMs: Math.round(ms[ms.length - 1] * 1000) / 1000,
    };
  }
  process.send({ type: "bench:result", result });
}
