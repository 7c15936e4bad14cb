/**
 * The bench's pure parts: which rows a run measures in which order, the
 * baseline rate, issue 13's targets, the table and the result document. Rows
 * here are made up: what is checked is what the report makes of them.
 */
import { describe, expect, it } from "vitest";
import {
  baselineRate,
  type Machine,
  type ReportSettings,
  type Row,
  renderTable,
  resultDocument,
  resultFileName,
  resultRow,
  targets,
} from "../../bench/lib/report.mjs";
import { planScenarios } from "../../bench/lib/scenarios.mjs";

const ids = (only: string | undefined, workersOk = true) =>
  planScenarios({ only: only ? new Set(only.split(",")) : undefined, workers: 2, workersOk }).map(
    (s) => s.id,
  );

describe("planScenarios", () => {
  it("measures every default row, the WORKERS=2 rows, and the baseline again at the end", () => {
    expect(ids(undefined)).toEqual([
      "baseline",
      ...["a", "b", "c", "d", "e", "f", "r", "a2", "b2", "f2", "o", "om"],
      "baseline2",
    ]);
  });

  it("leaves out the WORKERS rows when the built server has no WORKERS setting", () => {
    expect(ids(undefined, false)).toEqual([
      ...["baseline", "a", "b", "c", "d", "e", "f", "r", "o", "om", "baseline2"],
    ]);
  });

  it("runs only the rows BENCH_ONLY names, c2 and f2x only when named, the second baseline only with others", () => {
    expect(ids("a,c")).toEqual(["a", "c"]);
    expect(ids("baseline")).toEqual(["baseline"]);
    expect(ids("baseline,c2,f2x")).toEqual(["baseline", "f2x", "c2", "baseline2"]);
    expect(ids("a2,b")).toEqual(["b", "a2"]);
    expect(ids("c2", false)).toEqual([]);
  });

  it("gives each row what it sends where", () => {
    const plan = planScenarios({ only: undefined, workers: 2, workersOk: true });
    const by = Object.fromEntries(plan.map((s) => [s.id, s]));
    expect(by.a).toMatchObject({
      kind: "http",
      path: "/api/v1/events",
      eventsPerRequest: 1,
      at70: true,
    });
    expect(by.a2).toMatchObject({
      label: "a) single pageview events (WORKERS=2)",
      at70: false,
      workers: 2,
    });
    expect(by.c).toMatchObject({ path: "/api/v1/payments", table: "payments", at70: true });
    expect(by.e).toMatchObject({ kind: "grpc", label: "e) gRPC RecordEvents, batches of 50" });
    expect(by.r).toMatchObject({
      kind: "retention",
      path: "/api/v1/events",
      oldEvents: 1_000_000,
      serverEnv: { RETENTION_INTERVAL_MS: "200" },
    });
    expect(by.f).toMatchObject({
      path: "/api/v1/collect",
      serverEnv: { COLLECT_RATE_LIMIT: "100000000" },
      headers: { "content-type": "text/plain;charset=UTF-8", origin: "https://example.com" },
    });
  });
});

const cpu = (serverCores: number, serverUsPerRequest: number) => ({
  serverCores,
  benchCores: 0.5,
  foreignCores: 0,
  serverUsPerRequest,
});

function row(id: string, over: Partial<Row> = {}): Row {
  return {
    id,
    label: `${id}) row`,
    workers: 1,
    requestsPerSec: 1000,
    p50Ms: 5,
    p99Ms: 20,
    non2xx: 0,
    rateLimited503: 0,
    errors: 0,
    peakRssMb: 100,
    ...over,
  };
}

describe("baselineRate", () => {
  it("is the baseline's requests/s, or the mean of the first and the last baseline", () => {
    expect(baselineRate([row("a")])).toBeUndefined();
    expect(baselineRate([row("baseline", { requestsPerSec: 8000 }), row("a")])).toBe(8000);
    expect(
      baselineRate([
        row("baseline", { requestsPerSec: 8000 }),
        row("a"),
        row("baseline2", { requestsPerSec: 6000 }),
      ]),
    ).toBe(7000);
  });
});

describe("targets", () => {
  const rows = [
    row("baseline", { requestsPerSec: 10_000, cpu: cpu(1, 100) }),
    row("a", {
      requestsPerSec: 4000,
      eventsPerSec: 3990,
      ackedEventsPerSec: 4000,
      cpu: cpu(1, 250),
      at70: {
        rate: 2800,
        paced: { latencyMs: { p50: 2, p99: 30 }, non2xx: 0 },
        autocannon: { latencyMs: { p50: 2, p99: 9 }, non2xx: 0 },
      },
    }),
    row("b", { requestsPerSec: 3000, eventsPerSec: 150_000 }),
    row("c", { requestsPerSec: 3000, cpu: cpu(1, 300) }),
    row("e", { requestsPerSec: 2700, eventsPerSec: 134_000 }),
    row("f", { requestsPerSec: 3400 }),
  ];

  it("states each of issue 13's targets against the same run's rows", () => {
    expect(targets(rows)).toEqual([
      {
        target: "a) single events ≥ 0.35× baseline requests/s (stretch 0.5×)",
        value: "0.4×",
        met: true,
      },
      {
        target: "a) stored events/s = 2xx answers/s",
        value: "3,990 stored, 4,000 acknowledged",
        met: true,
      },
      {
        target: "collect ≈ events endpoint (same application function)",
        value: "0.85× a)",
        met: true,
      },
      { target: "b) batches of 50 ≥ 150,000 stored events/s", value: "150,000", met: true },
      { target: "c) payments ≥ 0.35× baseline requests/s", value: "0.3×", met: false },
      { target: "a) p99 < 25 ms at 70% of max (2,800/s, paced)", value: "30 ms", met: false },
      {
        target: "e) gRPC batches within 10% of REST batches (stored events/s)",
        value: "0.89× b)",
        met: false,
      },
      {
        target: "(info) a) server CPU per request ÷ baseline's",
        value: "2.5× (250 µs)",
        met: undefined,
      },
      {
        target: "(info) c) server CPU per request ÷ baseline's",
        value: "3× (300 µs)",
        met: undefined,
      },
    ]);
  });

  it("states r)'s target: the p99 during a prune within 2× of the p99 without, with events pruned meanwhile", () => {
    const retention = {
      rate: 300,
      phases: 3,
      oldEvents: 1_000_000,
      keepP99s: [4, 5, 6],
      pruneP99s: [8, 9, 10],
      keepP99Ms: 5,
      pruneP99Ms: 9,
      ratio: 1.8,
      prunedDuring: 600_000,
      left: 400_000,
    };
    expect(targets([row("r", { retention })])).toEqual([
      {
        target: "r) single-event p99 during a prune ≤ 2× without",
        value: "1.8× (9 vs 5 ms, 600,000 events pruned while measured)",
        met: true,
      },
    ]);
    expect(targets([row("r", { retention: { ...retention, prunedDuring: 0 } })])[0]?.met).toBe(
      false,
    );
    expect(targets([row("r", { retention: { ...retention, ratio: 2.1 } })])[0]?.met).toBe(false);
  });

  it("leaves out what the run did not measure", () => {
    expect(targets([row("b", { eventsPerSec: 1 })]).map((t) => t.target)).toEqual([
      "b) batches of 50 ≥ 150,000 stored events/s",
    ]);
  });
});

const machine: Machine = {
  cpuModel: "Test CPU",
  cores: 2,
  totalMemoryGb: 4,
  node: "v20.0.0",
  platform: "Linux",
};
const settings: ReportSettings = {
  duration: 10,
  warmup: 2,
  connections: 64,
  grpcConcurrency: 64,
  serverEnv: {
    ADMIN_TOKEN: "secret-token",
    INGEST_QUEUE_CAPACITY: "10000",
    INGEST_BATCH_MAX: "512",
    INGEST_FLUSH_MS: "2",
    INGEST_BATCHES_IN_FLIGHT: "4",
  },
};

describe("row o: the dashboard's calls at scale", () => {
  const rowO = (maxMs: number) => ({
    id: "o",
    label: "o) dashboard calls",
    events: 10_000_000,
    payments: 100_000,
    loadSeconds: { events: 60, payments: 15 },
    calls: {
      GetAccess: { p50Ms: 1.5, maxMs: 2 },
      SiteOverview: { p50Ms: 25, maxMs },
      CustomerJourney: { p50Ms: 2, maxMs: 3 },
    },
  });

  it("meets its target only when the slowest call of every method is under 200 ms", () => {
    expect(targets([rowO(199.9)])).toEqual([
      {
        target: "o) every call behind a 90-day view < 200 ms (10,000,000 events, 100,000 payments)",
        value: "199.9 ms (slowest of GetAccess, SiteOverview, CustomerJourney)",
        met: true,
      },
    ]);
    expect(targets([rowO(200)])[0]?.met).toBe(false);
  });

  it("says plainly when its MongoDB half did not run", () => {
    const skipped = {
      id: "om",
      label: "o) dashboard calls, MongoDB",
      events: 10_000_000,
      payments: 100_000,
      skipped: "MONGODB_URI not set",
    };
    expect(targets([skipped])).toEqual([]);
    const table = renderTable({
      rows: [skipped],
      baselineRps: undefined,
      targets: [],
      machine,
      settings,
      workersRan: true,
    });
    expect(table.split("\n").slice(0, 2)).toEqual([
      "",
      "o) dashboard calls, MongoDB: skipped, MONGODB_URI not set.",
    ]);
  });

  it("has its own table of calls, not a throughput row", () => {
    const table = renderTable({
      rows: [rowO(30)],
      baselineRps: undefined,
      targets: [],
      machine,
      settings,
      workersRan: true,
    });
    expect(table.split("\n").slice(0, 6)).toEqual([
      "",
      "| o) dashboard calls: 10,000,000 events, 100,000 payments (loaded in 75 s) | p50 ms | max ms |",
      "|---|--:|--:|",
      "| GetAccess | 1.5 | 2 |",
      "| SiteOverview | 25 | 30 |",
      "| CustomerJourney | 2 | 3 |",
    ]);
  });
});

describe("the table and the result file", () => {
  const rows = [
    row("baseline", { label: "baseline", requestsPerSec: 8000, cpu: cpu(0.5, 62.5) }),
    row("a", { label: "a) pageviews", requestsPerSec: 2000, eventsPerSec: 2000, cpu: cpu(1, 500) }),
  ];

  it("renders the rows, the targets and the settings as markdown", () => {
    const table = renderTable({
      rows,
      baselineRps: 8000,
      targets: [{ target: "t", value: "v", met: false }],
      machine,
      settings,
      workersRan: false,
    });
    expect(table.split("\n")).toEqual([
      "| Scenario | requests/s | × baseline | stored events/s | p50 ms | p99 ms | non-2xx (503) | peak RSS MB | CPU cores server/client/other |",
      "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
      "| baseline | 8,000 | 1× | – | 5 | 20 | 0 (0) | 100 | 0.5/0.5/0 |",
      "| a) pageviews | 2,000 | 0.25× | 2,000 | 5 | 20 | 0 (0) | 100 | 1/0.5/0 |",
      "",
      "| Target | measured | met |",
      "|---|--:|:-:|",
      "| t | v | **no** |",
      "",
      "Test CPU, 2 cores, 4 GB, Node v20.0.0; 10 s per phase after 2 s warm-up, 64 connections (gRPC: 64 calls in flight); INGEST_QUEUE_CAPACITY=10000, INGEST_BATCH_MAX=512, INGEST_FLUSH_MS=2, INGEST_BATCHES_IN_FLIGHT=4; no WORKERS rows (the built server has no WORKERS setting)",
    ]);
  });

  it("writes the rows, the targets and the same table, without the admin token", () => {
    const startedAt = new Date(Date.UTC(2026, 2, 11, 12, 0, 0));
    const doc = resultDocument({ startedAt, machine, settings, rows, workersRan: true });
    expect(doc.startedAt).toBe("2026-03-11T12:00:00.000Z");
    expect(doc.baselineRequestsPerSec).toBe(8000);
    expect(doc.results).toEqual(rows);
    expect(doc.targets).toEqual(targets(rows));
    expect(doc.table).toBe(
      renderTable({
        rows,
        baselineRps: 8000,
        targets: doc.targets,
        machine,
        settings,
        workersRan: true,
      }),
    );
    expect(JSON.stringify(doc)).not.toContain("secret-token");
    expect(resultFileName(new Date(Date.UTC(2026, 2, 11, 12, 0, 5, 123)))).toBe(
      "2026-03-11T12-00-05Z.json",
    );
  });

  it("builds every row's columns in one order, whatever measured it", () => {
    const run = { okPerSec: 500, latencyMs: { p50: 1, p99: 2 }, non2xx: 3 };
    const built = resultRow(
      { id: "x", label: "x) row" },
      {
        run,
        rateLimited503: 1,
        errors: 0,
        peakRssMb: 90,
        cpuUse: { serverCores: 0.5 },
        quietBefore: 0,
      },
    );
    expect(Object.keys(built)).toEqual([
      ...["id", "label", "workers", "requestsPerSec", "eventsPerSec", "ackedEventsPerSec"],
      ...["storedRows", "p50Ms", "p99Ms", "non2xx", "rateLimited503", "errors", "peakRssMb"],
      ...["cpu", "quietBefore", "max"],
    ]);
    expect(built).toMatchObject({
      workers: 1,
      requestsPerSec: 500,
      p99Ms: 2,
      cpu: { serverCores: 0.5, serverUsPerRequest: 1000 },
      max: run,
    });
  });
});
