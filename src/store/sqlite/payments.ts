/** Payments, customers and subscriptions in SQLite. */
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
import { type Db, nul, opt } from "./open-sqlite.js";

interface PaymentRow {
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

/**
 * Applies one write (its customer, subscription and payment, in that order)
 * inside the caller's transaction. `payment` may be absent: a provider's
 * subscription change alone (src/store/sqlite/connectors.ts).
 */
export function createSqlitePaymentWriter(
  db: Db,
): (w: Omit<PaymentWrite, "payment"> & { payment?: PaymentRecord }) => void {
  const s = {
    // Every column is replaced on re-send except created_at.
    upsertPayment: db.prepare(
      `INSERT INTO payments (site_id, payment_id, customer_id, currency, amount_minor, fee_minor, kind,
         status, paid_at, metadata, subscription_id, created_at, updated_at)
       VALUES (@site_id, @payment_id, @customer_id, @currency, @amount_minor, @fee_minor, @kind,
         @status, @paid_at, @metadata, @subscription_id, @created_at, @updated_at)
       ON CONFLICT (site_id, payment_id) DO UPDATE SET
         customer_id = excluded.customer_id, currency = excluded.currency,
         amount_minor = excluded.amount_minor, fee_minor = excluded.fee_minor, kind = excluded.kind,
         status = excluded.status, paid_at = excluded.paid_at, metadata = excluded.metadata,
         subscription_id = excluded.subscription_id, updated_at = excluded.updated_at`,
    ),
    // Absent (NULL) fields keep what is known; metadata is replaced only when sent.
    upsertCustomer: db.prepare(
      `INSERT INTO customers (site_id, customer_id, email, user_id, name, country, visitor_id, metadata,
         created_at, updated_at)
       VALUES (@site_id, @customer_id, @email, @user_id, @name, @country, @visitor_id,
         coalesce(@metadata, '{}'), @at, @at)
       ON CONFLICT (site_id, customer_id) DO UPDATE SET
         email = coalesce(excluded.email, email), user_id = coalesce(excluded.user_id, user_id),
         name = coalesce(excluded.name, name), country = coalesce(excluded.country, country),
         visitor_id = coalesce(excluded.visitor_id, visitor_id),
         metadata = coalesce(@metadata, metadata), updated_at = excluded.updated_at`,
    ),
    upsertSubscription: db.prepare(
      `INSERT INTO subscriptions (site_id, subscription_id, customer_id, currency, plan, interval, status,
         amount_minor, started_at, current_period_end, canceled_at, ended_at, created_at, updated_at)
       VALUES (@site_id, @subscription_id, @customer_id, @currency, @plan, @interval,
         coalesce(@status, @default_status), @amount_minor, coalesce(@started_at, @default_started_at),
         @current_period_end, @canceled_at, @ended_at, @at, @at)
       ON CONFLICT (site_id, subscription_id) DO UPDATE SET
         customer_id = excluded.customer_id,
         -- The currency is the unit of the amount: they change together.
         currency = CASE WHEN @amount_minor IS NOT NULL THEN excluded.currency ELSE currency END,
         plan = coalesce(@plan, plan), interval = coalesce(@interval, interval),
         status = coalesce(@status, status), amount_minor = coalesce(@amount_minor, amount_minor),
         started_at = coalesce(@started_at, started_at),
         current_period_end = coalesce(@current_period_end, current_period_end),
         canceled_at = coalesce(@canceled_at, canceled_at), ended_at = coalesce(@ended_at, ended_at),
         updated_at = excluded.updated_at`,
    ),
  };

  return (w) => {
    const c = w.customer;
    s.upsertCustomer.run({
      site_id: c.siteId,
      customer_id: c.customerId,
      email: nul(c.email),
      user_id: nul(c.userId),
      name: nul(c.name),
      country: nul(c.country),
      visitor_id: nul(c.visitorId),
      metadata: c.metadata === undefined ? null : JSON.stringify(c.metadata),
      at: c.at,
    });
    const sub = w.subscription;
    if (sub) {
      s.upsertSubscription.run({
        site_id: sub.siteId,
        subscription_id: sub.subscriptionId,
        customer_id: sub.customerId,
        currency: sub.currency,
        plan: nul(sub.plan),
        interval: nul(sub.interval),
        status: nul(sub.status),
        default_status: sub.defaults.status,
        amount_minor: nul(sub.amountMinor),
        started_at: nul(sub.startedAt),
        default_started_at: sub.defaults.startedAt,
        current_period_end: nul(sub.currentPeriodEnd),
        canceled_at: nul(sub.canceledAt),
        ended_at: nul(sub.endedAt),
        at: sub.at,
      });
    }
    const p = w.payment;
    if (!p) return;
    s.upsertPayment.run({
      site_id: p.siteId,
      payment_id: p.paymentId,
      customer_id: p.customerId,
      currency: p.currency,
      amount_minor: p.amountMinor,
      fee_minor: nul(p.feeMinor),
      kind: p.kind,
      status: p.status,
      paid_at: p.paidAt,
      metadata: JSON.stringify(p.metadata),
      subscription_id: nul(p.subscriptionId),
      created_at: p.createdAt,
      updated_at: p.updatedAt,
    });
  };
}

export function createSqlitePayments(db: Db): StorePaymentsPart {
  const write = createSqlitePaymentWriter(db);
  const s = {
    getPayment: db.prepare("SELECT * FROM payments WHERE site_id = ? AND payment_id = ?"),
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
      const p: PaymentRecord = {
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
        attribution:
          r.attribution === null ? undefined : (JSON.parse(r.attribution) as Attribution),
      };
      return p;
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
