import type { AnalyticsStore } from "../../src/store/duckdb/analytics-store.js";

/** One statement the engine sent, once it ended. */
export interface RecordedStatement {
  sql: string;
  values: unknown;
  ms: number;
}

/** `analytics` as the engine sees it, each statement handed to `record` once it ends. */
export function recordingStore(
  analytics: AnalyticsStore,
  record: (statement: RecordedStatement) => void,
): AnalyticsStore;
