/**
 * The chart's scales, apart from uPlot so they can be checked on their own:
 * counts (visitors, pageviews) are whole numbers, so their axis only ever
 * steps by whole numbers and starts at 0; money has its own axis.
 */

/** The steps a count axis may take: 1, 2, 5, 10, 20, 50, … (never 2.5). */
export const COUNT_INCRS: number[] = [
  1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000,
].flatMap((p) => [p, 2 * p, 5 * p]);

/** A count axis's range: from 0 to a whole number above the largest value (at least 1). */
export function countRange(max: number | null): [number, number] {
  const top = max === null || !Number.isFinite(max) ? 0 : max;
  return [0, Math.max(1, Math.ceil(top * 1.1))];
}

/** A count tick's label: a whole number, grouped by thousands. */
export function countLabel(value: number): string {
  return Number.isInteger(value) ? value.toLocaleString("en-GB") : "";
}
