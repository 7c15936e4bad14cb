/** Payments, customers and subscriptions in SQLite. */

import {
  type CustomerFields,
  customerChange,
  type SubscriptionFields,
  subscriptionChange,
} from "../../domain/store/patches.js";
import { UNATTRIBUTED } from "../../domain/vocabulary.js";
import type {
  Attribution,
  CustomerRecord,
  PaymentKind,
  PaymentRecord,
  PaymentStatus,
  PaymentWrite,
  StorePaymentsPart,
  SubscriptionInterval,
  SubscriptionRecord,
  SubscriptionStatus,
} from "../port.js";
import { createChangeWriter } from "./change-writer.js";
import { type Db, nul, opt } from "./open-sqlite.js";

/** A row of the payments table. */
export interface PaymentRow {
  site_id: string;
  payment_id: string;
  customer_id: string;
  currency: string;
  amount_minor: number;
  fee_minor: number | null;
  kind: PaymentKind;
  status: PaymentStatus;
  paid_at: number;
  metadata: string;
  subscription_id: string | null;
  created_at: number;
  updated_at: number;
  attribution: string | null;
  channel: string;
}

interface CustomerRow {
  site_id: string;
  customer_id: string;
  email: string | null;
  user_id: string | null;
  name: string | null;
  country: string | null;
  visitor_id: string | null;
  metadata: string;
  created_at: number;
  updated_at: number;
  attribution: string | null;
}

interface SubscriptionRow {
  site_id: string;
  subscription_id: string;
  customer_id: string;
  currency: string;
  plan: string | null;
  interval: SubscriptionInterval | null;
  status: SubscriptionStatus;
  amount_minor: number | null;
  started_at: number;
  current_period_end: number | null;
  canceled_at: number | null;
  ended_at: number | null;
  created_at: number;
  updated_at: number;
}

/** A payments row as the port's record. */
export function paymentFromRow(r: PaymentRow): PaymentRecord {
  return {
    siteId: r.site_id,
    paymentId: r.payment_id,
    customerId: r.customer_id,
    currency: r.currency,
    amountMinor: r.amount_minor,
    feeMinor: opt(r.fee_minor),
    kind: r.kind,
    status: r.status,
    paidAt: r.paid_at,
    metadata: JSON.parse(r.metadata) as Record<string, string>,
    subscriptionId: opt(r.subscription_id),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    attribution: r.attribution === null ? undefined : (JSON.parse(r.attribution) as Attribution),
    // An erased customer's payment keeps its channel without the attribution's details.
    erasedChannel: r.attribution === null && r.channel !== UNATTRIBUTED ? r.channel : undefined,
  };
}

/** The payments columns a write sets, in the insert's order. */
const PAYMENT_COLUMNS = [
  "site_id",
  "payment_id",
  "customer_id",
  "currency",
  "amount_minor",
  "fee_minor",
  "kind",
  "status",
  "paid_at",
  "metadata",
  "subscription_id",
  "created_at",
  "updated_at",
] as const;

/** What a re-send replaces, in the updates' order: all but the key and created_at. */
const UPDATED_COLUMNS = PAYMENT_COLUMNS.filter(
  (c) => c !== "site_id" && c !== "payment_id" && c !== "created_at",
);

/** Where each of UPDATED_COLUMNS, and the metadata, sit in PAYMENT_COLUMNS. */
const UPDATED_AT = UPDATED_COLUMNS.map((c) => PAYMENT_COLUMNS.indexOf(c));
const METADATA = PAYMENT_COLUMNS.indexOf("metadata");

/** Applies one write inside the caller's transaction. */
export type SqlitePaymentWriter = (
  w: Omit<PaymentWrite, "payment"> & { payment?: PaymentRecord },
) => void;

/**
 * Applies one write (its customer, subscription and payment, in that order)
 * inside the caller's transaction. `payment` may be absent: a provider's
 * subscription change alone (src/store/sqlite/connectors.ts).
 */
export function createSqlitePaymentWriter(db: Db): SqlitePaymentWriter {
  const s = {
    // A new payment is one insert. A re-send is the insert refused by the
    // primary key, then one update that leaves the indexed columns alone when
    // they are as they were (a re-send mostly repeats itself), or else the
    // update of every column but created_at (and the attribution, which
    // setAttribution writes). Positional parameters: cheaper to bind.
    insertPayment: db.prepare(
      `INSERT INTO payments (${PAYMENT_COLUMNS.join(", ")}) VALUES (${PAYMENT_COLUMNS.map(() => "?").join(", ")})
       ON CONFLICT (site_id, payment_id) DO NOTHING`,
    ),
    // The indexed columns are not SET: equal by the WHERE, and an unset
    // column's index (payments_paid_at) is left alone.
    updateUnindexed: db.prepare(
      `UPDATE payments SET customer_id = ?, fee_minor = ?, metadata = ?, subscription_id = ?,
         updated_at = ?
       WHERE site_id = ? AND payment_id = ?
         AND status = ? AND kind = ? AND amount_minor = ? AND currency = ? AND paid_at = ?`,
    ),
    updatePayment: db.prepare(
      `UPDATE payments SET ${UPDATED_COLUMNS.map((c) => `${c} = ?`).join(", ")}
       WHERE site_id = ? AND payment_id = ?`,
    ),
  };

  // Customers and subscriptions change as the domain's patches say (patches.ts).
  const writeCustomer = createChangeWriter<CustomerFields>(
    db,
    "customers",
    ["site_id", "customer_id"],
    [
      { field: "email", column: "email" },
      { field: "userId", column: "user_id" },
      { field: "name", column: "name" },
      { field: "country", column: "country" },
      { field: "visitorId", column: "visitor_id" },
      {
        field: "metadata",
        column: "metadata",
        toSql: (m: Record<string, string>) => JSON.stringify(m),
      },
      { field: "createdAt", column: "created_at" },
      { field: "updatedAt", column: "updated_at" },
    ],
  );
  const writeSubscription = createChangeWriter<SubscriptionFields>(
    db,
    "subscriptions",
    ["site_id", "subscription_id"],
    [
      { field: "customerId", column: "customer_id" },
      { field: "currency", column: "currency" },
      { field: "plan", column: "plan" },
      { field: "interval", column: "interval" },
      { field: "status", column: "status" },
      { field: "amountMinor", column: "amount_minor" },
      { field: "startedAt", column: "started_at" },
      { field: "currentPeriodEnd", column: "current_period_end" },
      { field: "canceledAt", column: "canceled_at" },
      { field: "endedAt", column: "ended_at" },
      { field: "createdAt", column: "created_at" },
      { field: "updatedAt", column: "updated_at" },
    ],
  );

  return (w) => {
    const c = w.customer;
    writeCustomer([c.siteId, c.customerId], customerChange([c]));
    const sub = w.subscription;
    if (sub) writeSubscription([sub.siteId, sub.subscriptionId], subscriptionChange([sub]));
    const p = w.payment;
    if (!p) return;
    // Values in PAYMENT_COLUMNS' order.
    const row = [
      p.siteId,
      p.paymentId,
      p.customerId,
      p.currency,
      p.amountMinor,
      nul(p.feeMinor),
      p.kind,
      p.status,
      p.paidAt,
      JSON.stringify(p.metadata),
      nul(p.subscriptionId),
      p.createdAt,
      p.updatedAt,
    ];
    if (s.insertPayment.run(...row).changes === 1) return;
    const same = s.updateUnindexed.run(
      p.customerId,
      nul(p.feeMinor),
      row[METADATA],
      nul(p.subscriptionId),
      p.updatedAt,
      p.siteId,
      p.paymentId,
      p.status,
      p.kind,
      p.amountMinor,
      p.currency,
      p.paidAt,
    ).changes;
    if (same === 1) return;
    s.updatePayment.run(...UPDATED_AT.map((i) => row[i]), p.siteId, p.paymentId);
  };
}

export function createSqlitePayments(db: Db): StorePaymentsPart {
  const write = createSqlitePaymentWriter(db);
  const s = {
    getPayment: db.prepare("SELECT * FROM payments WHERE site_id = ? AND payment_id = ?"),
    // The customer's payments by index, then the few refunds among them by their metadata.
    refundsOfCharge: db.prepare(
      `SELECT * FROM payments INDEXED BY payments_customer
       WHERE site_id = ? AND customer_id = ? AND kind IN ('refund', 'chargeback')
         AND status <> 'failed' AND json_extract(metadata, '$.' || json_quote(?)) = ?`,
    ),
    // The range by the (site_id, paid_at) index; the position as a row-value comparison.
    pagePayments: db.prepare(
      `SELECT * FROM payments INDEXED BY payments_paid_at
       WHERE site_id = ? AND paid_at >= ? AND paid_at < ? AND (paid_at, payment_id) > (?, ?)
       ORDER BY paid_at, payment_id LIMIT ?`,
    ),
    getCustomer: db.prepare("SELECT * FROM customers WHERE site_id = ? AND customer_id = ?"),
    getSubscription: db.prepare(
      "SELECT * FROM subscriptions WHERE site_id = ? AND subscription_id = ?",
    ),
  };

  // One IMMEDIATE transaction (one WAL sync) for a whole batch of payments.
  const commit = db.transaction((writes: PaymentWrite[]) => {
    for (const w of writes) write(w);
  });

  return {
    async commitPayments(writes) {
      commit.immediate(writes);
    },
    async getPayment(siteId, paymentId) {
      const r = s.getPayment.get(siteId, paymentId) as PaymentRow | undefined;
      if (!r) return undefined;
      return paymentFromRow(r);
    },
    async refundsOfCharge(siteId, customerId, key, chargeId) {
      const rows = s.refundsOfCharge.all(siteId, customerId, key, chargeId) as PaymentRow[];
      return rows.map(paymentFromRow);
    },
    async pagePayments(siteId, q) {
      const after = q.after ?? { paidAt: q.from, paymentId: "" };
      const rows = s.pagePayments.all(
        siteId,
        q.from,
        q.to,
        after.paidAt,
        after.paymentId,
        q.limit + 1,
      ) as PaymentRow[];
      // One more than the page: its presence says whether a next page exists (never an empty one).
      const payments = rows.slice(0, q.limit).map(paymentFromRow);
      const last = payments.at(-1);
      return rows.length > q.limit && last
        ? { payments, next: { paidAt: last.paidAt, paymentId: last.paymentId } }
        : { payments };
    },
    async getCustomer(siteId, customerId) {
      const r = s.getCustomer.get(siteId, customerId) as CustomerRow | undefined;
      if (!r) return undefined;
      const c: CustomerRecord = {
        siteId: r.site_id,
        customerId: r.customer_id,
        email: opt(r.email),
        userId: opt(r.user_id),
        name: opt(r.name),
        country: opt(r.country),
        visitorId: opt(r.visitor_id),
        metadata: JSON.parse(r.metadata) as Record<string, string>,
        createdAt: r.created_at,
        updatedAt: r.updated_at,
        attribution:
          r.attribution === null ? undefined : (JSON.parse(r.attribution) as Attribution),
      };
      return c;
    },
    async getSubscription(siteId, subscriptionId) {
      const r = s.getSubscription.get(siteId, subscriptionId) as SubscriptionRow | undefined;
      if (!r) return undefined;
      const sub: SubscriptionRecord = {
        siteId: r.site_id,
        subscriptionId: r.subscription_id,
        customerId: r.customer_id,
        currency: r.currency,
        plan: opt(r.plan),
        interval: opt(r.interval),
        status: r.status,
        amountMinor: opt(r.amount_minor),
        startedAt: r.started_at,
        currentPeriodEnd: opt(r.current_period_end),
        canceledAt: opt(r.canceled_at),
        endedAt: opt(r.ended_at),
        createdAt: r.created_at,
        updatedAt: r.updated_at,
      };
      return sub;
    },
  };
}
