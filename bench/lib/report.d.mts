/** Types of report.mjs, for the tests that call its pure functions. */

/** A measured row of the table (bench/run.mjs builds it with `resultRow`). */
export interface Row {
  id: string;
  label: string;
  workers: number;
  requestsPerSec: number;
  eventsPerSec?: number;
  ackedEventsPerSec?: number;
  storedRows?: number;
  p50Ms: number | null;
  p99Ms: number | null;
  non2xx: number;
  rateLimited503: number;
  errors: number;
  peakRssMb: number;
  cpu?: {
    serverCores: number;
    benchCores: number;
    foreignCores: number;
    serverUsPerRequest: number;
  };
  quietBefore?: number;
  max?: unknown;
  at70?: {
    rate: number;
    paced: { latencyMs: { p50: number | null; p99: number | null }; non2xx: number };
    autocannon: { latencyMs: { p50: number | null; p99: number | null }; non2xx: number };
  };
  /** r): the single-event p99s without and during a prune (bench/run.mjs, runRetention). */
  retention?: {
    rate: number;
    phases: number;
    oldEvents: number;
    keepP99s: number[];
    pruneP99s: number[];
    keepP99Ms: number;
    pruneP99Ms: number;
    ratio: number;
    prunedDuring: number;
    left: number;
  };
}

/** Row o: the dashboard's calls at scale, timed one at a time (bench/run.mjs runOverview). */
export interface CallsRow {
  id: string;
  label: string;
  store?: "sqlite" | "mongodb";
  events: number;
  payments: number;
  loadSeconds?: { events: number; payments: number };
  /** Absent when the row was skipped. */
  calls?: Record<string, { p50Ms: number | null; maxMs: number | null }>;
  /** Why the row did not run (the MongoDB half without MONGODB_URI). */
  skipped?: string;
  quietBefore?: number;
}

/** Any row of a run. */
export type AnyRow = Row | CallsRow;

export interface Target {
  target: string;
  value: string;
  met: boolean | undefined;
}

export interface Machine {
  cpuModel: string | undefined;
  cores: number;
  totalMemoryGb: number | null;
  node: string;
  platform: string;
}

export interface ReportSettings {
  duration: number;
  warmup: number;
  connections: number;
  grpcConcurrency: number;
  profDir?: string;
  serverEnv: Record<string, string>;
}

export function fmt(x: number | null | undefined, d?: number): string;
export function round(x: number | null | undefined, d?: number): number | null;
export function resultRow(
  scenario: { id: string; label: string; workers?: number },
  measured: unknown,
): Row;
export function baselineRate(rows: readonly AnyRow[]): number | undefined;
export function targets(rows: readonly AnyRow[], baselineRps?: number): Target[];
export function renderTable(input: {
  rows: readonly AnyRow[];
  baselineRps: number | undefined;
  targets: readonly Target[];
  machine: Machine;
  settings: ReportSettings;
  workersRan: boolean;
}): string;
export function resultDocument(input: {
  startedAt: Date;
  machine: Machine;
  settings: ReportSettings;
  rows: readonly AnyRow[];
  workersRan: boolean;
}): {
  startedAt: string;
  machine: Machine;
  settings: Record<string, unknown>;
  baselineRequestsPerSec: number | undefined;
  targets: Target[];
  results: AnyRow[];
  table: string;
};
export function resultFileName(date: Date): string;
