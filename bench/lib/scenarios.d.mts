/** Types of scenarios.mjs, for the tests that call `planScenarios`. */
export interface Scenario {
  kind: "baseline" | "http" | "grpc" | "retention" | "overview";
  /** Row o: calls timed per method. */
  calls?: number;
  store?: "sqlite" | "mongodb";
  id: string;
  label: string;
  path?: string;
  table?: string;
  eventsPerRequest?: number;
  at70?: boolean;
  workers?: number;
  headers?: Record<string, string>;
  serverEnv?: Record<string, string>;
  /** r): old events prepared, paced rate, keep/prune phase pairs. */
  oldEvents?: number;
  rate?: number;
  phases?: number;
  makeBodies?: (tenant: { siteId: string }) => unknown;
}

export const EVENTS_PATH: string;
export const PAYMENTS_PATH: string;
export const COLLECT_PATH: string;
export function planScenarios(input: {
  only: ReadonlySet<string> | undefined;
  workers: number;
  workersOk: boolean;
}): Scenario[];
