/**
 * revenue_days and revenue_dims (migration 12) kept by the writers of
 * payments: each reads the counted columns of the rows it is about to
 * change, hands the domain's rule (src/domain/revenue-rollup.ts) the before
 * and after, and applies the summed deltas in its own transaction. Until
 * migration 13 triggers did this per row; summed per write, a group commit
 * of new payments on one day updates one cell instead of running a trigger
 * program per payment (docs/dashboard.md, Performance).
 */
import {
  type CountedPayment,
  createRevenueDeltas,
  type RevenueDeltas,
} from "../../domain/revenue-rollup.js";
import type { Attribution, PaymentKind, PaymentStatus } from "../port.js";
import type { Db } from "./open-sqlite.js";

/** The payments columns the rollup counts, for a SELECT before a change. */
export const COUNTED_COLUMNS =
  "site_id, status, kind, amount_minor, currency, paid_at, channel, attribution";

/** A row of COUNTED_COLUMNS. */
export interface CountedRow {
  site_id: string;
  status: PaymentStatus;
  kind: PaymentKind;
  amount_minor: number;
  currency: string;
  paid_at: number;
  channel: string;
  attribution: string | null;
}

/** A stored row's counted part; `attribution` as stored (JSON or NULL). */
export function countedOf(r: CountedRow): CountedPayment {
  return {
    siteId: r.site_id,
    status: r.status,
    kind: r.kind,
    amountMinor: r.amount_minor,
    currency: r.currency,
    paidAt: r.paid_at,
    channel: r.channel,
    attribution: r.attribution === null ? undefined : (JSON.parse(r.attribution) as Attribution),
  };
}

/** Applies a write's deltas to the daily cells, inside the caller's transaction. */
export type RevenueRollupWriter = (deltas: RevenueDeltas) => void;

/**
 * The writer of the deltas: an upsert per changed cell, and a delete of the
 * cell when the write took payments away and none is left in it.
 */
export function createRevenueRollupWriter(db: Db): RevenueRollupWriter {
  const s = {
    day: db.prepare(
      `INSERT INTO revenue_days (site_id, day, currency, channel, gross, refunds, chargebacks, payments)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (site_id, day, currency, channel) DO UPDATE SET
         gross = gross + excluded.gross, refunds = refunds + excluded.refunds,
         chargebacks = chargebacks + excluded.chargebacks, payments = payments + excluded.payments`,
    ),
    dropDay: db.prepare(
      `DELETE FROM revenue_days
       WHERE site_id = ? AND day = ? AND currency = ? AND channel = ? AND payments = 0`,
    ),
    dim: db.prepare(
      `INSERT INTO revenue_dims (site_id, day, currency, dimension, value, net, payments)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (site_id, day, currency, dimension, value) DO UPDATE SET
         net = net + excluded.net, payments = payments + excluded.payments`,
    ),
    dropDim: db.prepare(
      `DELETE FROM revenue_dims
       WHERE site_id = ? AND day = ? AND currency = ? AND dimension = ? AND value = ? AND payments = 0`,
    ),
  };
  return (deltas) => {
    for (const c of deltas.days()) {
      s.day.run(
        c.siteId,
        c.day,
        c.currency,
        c.channel,
        c.gross,
        c.refunds,
        c.chargebacks,
        c.payments,
      );
      if (c.payments < 0) s.dropDay.run(c.siteId, c.day, c.currency, c.channel);
    }
    for (const c of deltas.dims()) {
      s.dim.run(c.siteId, c.day, c.currency, c.dimension, c.value, c.net, c.payments);
      if (c.payments < 0) s.dropDim.run(c.siteId, c.day, c.currency, c.dimension, c.value);
    }
  };
}

/**
 * Runs `update` on the rows `select` returns, counting each row's change
 * (`after` gives its new counted part) into one set of deltas applied with
 * it, and returns what `update` returns. For the updates that move or strip
 * many payments at once (re-attribution, erasure): read, update and apply in
 * one transaction.
 */
export function trackRevenueChange<T>(
  apply: RevenueRollupWriter,
  before: readonly CountedRow[],
  after: (p: CountedPayment) => CountedPayment,
  update: () => T,
): T {
  const deltas = createRevenueDeltas();
  for (const r of before) {
    const p = countedOf(r);
    deltas.change(p, after(p));
  }
  const result = update();
  apply(deltas);
  return result;
}
