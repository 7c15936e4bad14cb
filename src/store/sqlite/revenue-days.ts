/**
 * How the revenue reads split a period for revenue_days (migration 12): the
 * whole UTC days inside [from, to) are read from the daily cells, the partial
 * days at either end from the payments themselves, so any period is exact
 * and a period of whole days (the dashboard's) reads cells only.
 */

import { splitPeriod } from "../../domain/overview-traffic.js";

/** The parts of [from, to): whole days as YYYY-MM-DD bounds [firstDay, endDay), and the two edges in ms. */
export interface PeriodParts {
  firstDay: string;
  endDay: string;
  /** [from, head) before the first whole day; empty when from is midnight. */
  head: [number, number];
  /** [tail, to) after the last whole day; empty when to is midnight. */
  tail: [number, number];
}

/** Splits [from, to) as the domain does (splitPeriod): whole UTC days and the partial edges around them. */
export function periodParts(from: number, to: number): PeriodParts {
  const { days } = splitPeriod(from, to);
  if (!days) return { firstDay: "", endDay: "", head: [from, to], tail: [to, to] };
  const first = Date.parse(days.fromDay);
  const end = Date.parse(days.toDay);
  return { firstDay: days.fromDay, endDay: days.toDay, head: [from, first], tail: [end, to] };
}

/**
 * The succeeded payments of one edge [from, to) as revenue_days rows (one
 * payment each), for a UNION ALL with the days; the bounds are parameter names.
 */
export const EDGE_SUMS = (from: string, to: string) =>
  `SELECT channel, currency,
     CASE kind WHEN 'charge' THEN amount_minor ELSE 0 END,
     CASE kind WHEN 'refund' THEN amount_minor ELSE 0 END,
     CASE kind WHEN 'chargeback' THEN amount_minor ELSE 0 END, 1
   FROM payments INDEXED BY payments_paid_at
   WHERE site_id = @site AND paid_at >= ${from} AND paid_at < ${to} AND status = 'succeeded'`;

/**
 * A sum read with safe integers. SQLite's `+` turns an integer past 2^63 into
 * a float instead of failing (so a payment write never fails on a huge day);
 * such a sum has no exact value, and the read fails as sum() itself does.
 */
export function exactSum(v: bigint | number): bigint {
  if (typeof v !== "bigint") throw new RangeError("a revenue sum is past 2^63 minor units");
  return v;
}

/** Net revenue summed exactly per key (a day, a dimension's value) and currency. */
export interface NetSums<T> {
  add(key: string, currency: string, net: bigint | number): void;
  /** The sums, sorted by key, then currency. */
  list(): T[];
}

/** Net sums whose entries `make` gives their key field (`{ day }`, `{ value }`). */
export function createNetSums<T extends { currency: string; netMinor: bigint }>(
  make: (key: string) => Omit<T, "currency" | "netMinor">,
): NetSums<T> {
  const entries = new Map<string, T>();
  return {
    add(key, currency, net) {
      const k = `${key}\u0000${currency}`;
      const found = entries.get(k);
      if (found) found.netMinor += exactSum(net);
      else entries.set(k, { ...make(key), currency, netMinor: exactSum(net) } as T);
    },
    list: () =>
      [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, entry]) => entry),
  };
}
