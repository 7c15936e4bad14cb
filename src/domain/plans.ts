/** Plans, their monthly event allowances and the ceilings past which events are refused. */

export const PLANS = ["free", "starter", "growth", "scale"] as const;
export type Plan = (typeof PLANS)[number];

interface Allowance {
  /** Events included per UTC month. */
  readonly included: number;
  /** Events accepted per UTC month; past this the events endpoint answers 429. */
  readonly ceiling: number;
}

/** The spec's quota table: Free accepts 10% above its allowance, the others twice theirs. */
export const ALLOWANCES: Readonly<Record<Plan, Allowance>> = {
  free: { included: 10_000, ceiling: 11_000 },
  starter: { included: 100_000, ceiling: 200_000 },
  growth: { included: 1_000_000, ceiling: 2_000_000 },
  scale: { included: 10_000_000, ceiling: 20_000_000 },
};

/** The plan that may create API keys (the spec's highest paid plan). */
export const KEY_PLAN: Plan = "scale";

export function isPlan(value: string): value is Plan {
  return (PLANS as readonly string[]).includes(value);
}

// The last month asked for and its bounds: every request asks, and it changes once a month.
let lastMonth = { from: 0, to: 0, month: "" };

/** The UTC month of a time, as `YYYY-MM`: the quota period. */
export function utcMonth(ms: number): string {
  if (ms >= lastMonth.from && ms < lastMonth.to) return lastMonth.month;
  const d = new Date(ms);
  const month = d.toISOString().slice(0, 7);
  const from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const to = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  lastMonth = { from, to, month };
  return month;
}

/** Whole seconds from `ms` until the next UTC month starts (at least 1). */
export function secondsUntilNextMonth(ms: number): number {
  const d = new Date(ms);
  const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - ms) / 1000));
}
