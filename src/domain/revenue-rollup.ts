/**
 * The daily revenue rollup's rule, once for every writer of a payment: a
 * payment counts while its status is `succeeded`, its amount under its kind
 * (gross, refunds or chargebacks), in the UTC day of its paid_at, under its
 * channel, and its net (a charge adds, a refund or a chargeback takes away)
 * under each first-touch dimension its attribution names (source, campaign,
 * landing page). A change of a payment is its old part taken away and its
 * new part added; the deltas of a whole write (a group commit, a
 * re-attribution, an erasure) are summed per cell before the store applies
 * them, so a batch of payments on one day costs one write per cell instead
 * of one per payment, and a change that leaves a cell as it was costs none.
 */
import { utcDay } from "./overview-traffic.js";
import type { PaymentKind, PaymentStatus } from "./vocabulary.js";

/** The fields of a stored payment the rollup counts; nothing else changes it. */
export interface CountedPayment {
  siteId: string;
  status: PaymentStatus;
  kind: PaymentKind;
  amountMinor: number;
  currency: string;
  paidAt: number;
  /** The channel the payment is counted under (`unattributed` when none). */
  channel: string;
  /** The first-touch dimensions of its attribution; absent when unattributed or erased. */
  attribution?: { source?: string; campaign?: string; landingPage?: string };
}

/** The first-touch dimensions of the rollup, as stored, and the attribution field each reads. */
export const REVENUE_DIMENSIONS = [
  ["source", "source"],
  ["campaign", "campaign"],
  ["landing_page", "landingPage"],
] as const;

/** A revenue dimension's stored name. */
export type RevenueDimension = (typeof REVENUE_DIMENSIONS)[number][0];

/**
 * A sum of minor units, exact: a number while it is a safe integer (the
 * common case costs no BigInt), a bigint past 2^53.
 */
export type MinorSum = number | bigint;

/** a + b, exactly. */
function addMinor(a: MinorSum, b: number): MinorSum {
  if (typeof a === "bigint") return a + BigInt(b);
  const sum = a + b;
  return Number.isSafeInteger(sum) ? sum : BigInt(a) + BigInt(b);
}

const isZero = (v: MinorSum) => v === 0 || v === 0n;

/** What a write adds to one (site, day, currency, channel) cell; negative to take away. */
export interface RevenueDayDelta {
  siteId: string;
  day: string;
  currency: string;
  channel: string;
  gross: MinorSum;
  refunds: MinorSum;
  chargebacks: MinorSum;
  payments: number;
}

/** What a write adds to one (site, day, currency, dimension, value) cell; negative to take away. */
export interface RevenueDimDelta {
  siteId: string;
  day: string;
  currency: string;
  dimension: RevenueDimension;
  value: string;
  net: MinorSum;
  payments: number;
}

/** The summed deltas of one write, cells that end unchanged left out. */
export interface RevenueDeltas {
  /** Adds a payment's part (`sign` 1) or takes it away (-1). */
  count(p: CountedPayment, sign: 1 | -1): void;
  /** Takes `before`'s part away and adds `after`'s: one change of a stored payment. */
  change(before: CountedPayment, after: CountedPayment): void;
  days(): RevenueDayDelta[];
  dims(): RevenueDimDelta[];
}

/** An empty set of deltas for one write. */
export function createRevenueDeltas(): RevenueDeltas {
  const days = new Map<string, RevenueDayDelta>();
  const dims = new Map<string, RevenueDimDelta>();

  function count(p: CountedPayment, sign: 1 | -1): void {
    if (p.status !== "succeeded") return;
    const day = utcDay(p.paidAt);
    const amount = p.amountMinor * sign;
    const dayKey = `${p.siteId}\u0000${day}\u0000${p.currency}`;
    const cellKey = `${dayKey}\u0000${p.channel}`;
    let cell = days.get(cellKey);
    if (!cell) {
      cell = {
        siteId: p.siteId,
        day,
        currency: p.currency,
        channel: p.channel,
        gross: 0,
        refunds: 0,
        chargebacks: 0,
        payments: 0,
      };
      days.set(cellKey, cell);
    }
    if (p.kind === "charge") cell.gross = addMinor(cell.gross, amount);
    else if (p.kind === "refund") cell.refunds = addMinor(cell.refunds, amount);
    else cell.chargebacks = addMinor(cell.chargebacks, amount);
    cell.payments += sign;
    const net = p.kind === "charge" ? amount : -amount;
    for (const [dimension, field] of REVENUE_DIMENSIONS) {
      const value = p.attribution?.[field];
      if (value === undefined) continue;
      const key = `${dayKey}\u0000${dimension}\u0000${value}`;
      const d = dims.get(key);
      if (d) {
        d.net = addMinor(d.net, net);
        d.payments += sign;
      } else {
        dims.set(key, {
          siteId: p.siteId,
          day,
          currency: p.currency,
          dimension,
          value,
          net,
          payments: sign,
        });
      }
    }
  }

  return {
    count,
    change(before, after) {
      count(before, -1);
      count(after, 1);
    },
    days: () =>
      [...days.values()].filter(
        (c) => c.payments !== 0 || !isZero(c.gross) || !isZero(c.refunds) || !isZero(c.chargebacks),
      ),
    dims: () => [...dims.values()].filter((c) => c.payments !== 0 || !isZero(c.net)),
  };
}
