/**
 * The attribution models of `ReportsService.Query` and `Funnel`: how one
 * payment's amount is split across the touches of its customer. Pure and
 * exact: amounts are integer minor units (bigint) and the shares of a
 * payment always add up to its amount, to the unit, by largest remainder.
 * The engine computes the same split inside its queries; the reference
 * model of the tests (test/helpers/analytics-reference.ts) calls this, and a
 * property checks that the two agree. The rules are written in
 * docs/reports.md.
 */

import type { AttributionModel } from "./query-plan.js";

/**
 * A touch as the models see it: the start of a visit, with what that visit
 * came from. `direct` is true when the visit had no referrer (other than the
 * site itself), no campaign and no click id.
 */
export interface AnalyticsTouch {
  /** When the visit started (Unix ms). */
  ts: number;
  channel: string;
  source?: string;
  medium?: string;
  campaign?: string;
  term?: string;
  content?: string;
  /** The landing page's path, without query or fragment. */
  landingPage: string;
  /** The referrer's host, lower case. */
  referrerHost?: string;
  direct: boolean;
}

/** One part of a payment: the touch credited (by index in the touches given), or none. */
export interface AttributionShare {
  /** Index in the touches passed to {@link splitPayment}; undefined for the unattributed share. */
  touchIndex: number | undefined;
  /** Minor units; negative when the payment is (a refund or a chargeback). */
  minor: bigint;
}

/**
 * The weights of a model over `n` touches (ordered by time), as integer
 * numerators over one denominator, so that splitting stays exact. Every
 * numerator is non-negative and they add up to the denominator.
 *
 * - `first_touch`: the whole to the first touch given. The engine passes the
 *   customer's stored attribution (today's first touch, with its ranking
 *   rules: a non-internal touch beats an internal one) as the only touch.
 * - `last_touch`: the whole to the last touch.
 * - `last_non_direct`: the whole to the last touch that is not direct; the
 *   last touch when all are direct.
 * - `linear`: equal parts.
 * - `position_based` (40/20/40, the U-shaped model of Google Analytics and
 *   HubSpot): 40 % to the first touch, 40 % to the last, the middle touches
 *   share 20 % equally; one touch gets 100 %, two touches 50 % each.
 *
 * Returns `undefined` when `n` is 0 (the payment is unattributed).
 */
export function modelWeights(
  model: AttributionModel,
  touches: readonly Pick<AnalyticsTouch, "direct">[],
): { numerators: bigint[]; denominator: bigint } | undefined {
  const n = touches.length;
  if (n === 0) return undefined;
  const one = (i: number) => {
    const numerators = touches.map(() => 0n);
    numerators[i] = 1n;
    return { numerators, denominator: 1n };
  };
  switch (model) {
    case "first_touch":
      return one(0);
    case "last_touch":
      return one(n - 1);
    case "last_non_direct": {
      let i = n - 1;
      while (i >= 0 && touches[i]?.direct) i--;
      return one(i >= 0 ? i : n - 1);
    }
    case "linear":
      return { numerators: touches.map(() => 1n), denominator: BigInt(n) };
    case "position_based": {
      if (n === 1) return one(0);
      if (n === 2) return { numerators: [1n, 1n], denominator: 2n };
      // First 40 %, last 40 %, each middle one 20 % / (n − 2); over 10·(n − 2).
      const middle = BigInt(n - 2);
      const numerators = touches.map((_, i) => (i === 0 || i === n - 1 ? 4n * middle : 2n));
      return { numerators, denominator: 10n * middle };
    }
  }
}

/**
 * Splits integer `total` in proportion to `numerators / denominator`, exactly:
 * each part is first rounded toward zero, then the units left over go one
 * each to the parts with the largest remainders (ties: the earlier part).
 * A negative total is split as its magnitude, then negated, so a refund
 * mirrors the payment it reverses.
 */
export function largestRemainder(
  total: bigint,
  numerators: readonly bigint[],
  denominator: bigint,
): bigint[] {
  const negative = total < 0n;
  const magnitude = negative ? -total : total;
  const parts = numerators.map((w) => (magnitude * w) / denominator);
  const remainders = numerators.map((w) => (magnitude * w) % denominator);
  let left = magnitude - parts.reduce((a, b) => a + b, 0n);
  const order = remainders
    .map((r, i) => ({ r, i }))
    .sort((a, b) => (a.r === b.r ? a.i - b.i : a.r > b.r ? -1 : 1));
  for (const { i } of order) {
    if (left === 0n) break;
    parts[i] = (parts[i] as bigint) + 1n;
    left--;
  }
  return negative ? parts.map((p) => -p) : parts;
}

/**
 * Splits one payment's amount across the customer's touches before its
 * `paid_at` (ordered by time, earliest first) by `model`. The shares add up
 * to `amountMinor` exactly; touches that get nothing are left out. With no
 * touch, the whole amount is one unattributed share.
 */
export function splitPayment(
  model: AttributionModel,
  amountMinor: bigint,
  touches: readonly Pick<AnalyticsTouch, "direct">[],
): AttributionShare[] {
  const weights = modelWeights(model, touches);
  if (!weights) return [{ touchIndex: undefined, minor: amountMinor }];
  const parts = largestRemainder(amountMinor, weights.numerators, weights.denominator);
  const shares: AttributionShare[] = [];
  parts.forEach((minor, i) => {
    if ((weights.numerators[i] as bigint) > 0n) shares.push({ touchIndex: i, minor });
  });
  return shares;
}
