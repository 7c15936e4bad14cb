/** Payments, customers and subscriptions in MongoDB. */
import type { AnyBulkWriteOperation } from "mongodb";
import { UNATTRIBUTED } from "../../domain/vocabulary.js";
import type {
  CustomerPatch,
  CustomerRecord,
  PaymentRecord,
  PaymentWrite,
  StorePaymentsPart,
  SubscriptionPatch,
  SubscriptionRecord,
} from "../port.js";
import {
  attributionFromDoc,
  type CustomerDoc,
  fromPairs,
  opt,
  optMs,
  optNumber,
  type PaymentDoc,
  type SubscriptionDoc,
  toDate,
  toLong,
  toNumber,
  toPairs,
} from "./documents.js";
import { bulkUpsert } from "./retry.js";
import type { Collections } from "./schema.js";

/**
 * Groups items by key, keeping first-seen order of keys and the items' order.
 * A batch may carry several writes of one customer, subscription or payment;
 * they are folded into one operation per key (below), so the unordered bulk
 * write never holds two operations on one document whose order would matter.
 */
function byKey<T>(items: readonly T[], key: (item: T) => [string, string]): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = JSON.stringify(key(item));
    const list = groups.get(k);
    if (list) list.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.values()];
}

/**
 * One upsert applying customer patches in order: present fields are `$set`
 * (later patches win, metadata replaced as a whole), absent ones leave the
 * stored values alone; created_at is the first patch's time, and a new
 * customer without metadata gets an empty map.
 */
export function customerUpsert(
  patches: readonly CustomerPatch[],
): AnyBulkWriteOperation<CustomerDoc> {
  const first = patches[0] as CustomerPatch;
  const set: Partial<CustomerDoc> = {};
  for (const c of patches) {
    if (c.email !== undefined) set.email = c.email;
    if (c.userId !== undefined) set.user_id = c.userId;
    if (c.name !== undefined) set.name = c.name;
    if (c.country !== undefined) set.country = c.country;
    if (c.visitorId !== undefined) set.visitor_id = c.visitorId;
    if (c.metadata !== undefined) set.metadata = toPairs(c.metadata);
    set.updated_at = toDate(c.at);
  }
  const setOnInsert: Partial<CustomerDoc> = { created_at: toDate(first.at) };
  // A path may not be in both $set and $setOnInsert.
  if (set.metadata === undefined) setOnInsert.metadata = [];
  return {
    updateOne: {
      filter: { site_id: first.siteId, customer_id: first.customerId },
      update: { $set: set, $setOnInsert: setOnInsert },
      upsert: true,
    },
  };
}

/**
 * One upsert applying subscription patches in order: customer always
 * replaced, currency only together with an amount (it is the amount's unit),
 * other present fields `$set`, absent ones kept; on insert
 * only, the first patch's defaults fill status and started_at when no patch
 * gave them.
 */
export function subscriptionUpsert(
  patches: readonly SubscriptionPatch[],
): AnyBulkWriteOperation<SubscriptionDoc> {
  const first = patches[0] as SubscriptionPatch;
  const set: Partial<SubscriptionDoc> = {};
  for (const s of patches) {
    set.customer_id = s.customerId;
    if (s.plan !== undefined) set.plan = s.plan;
    if (s.interval !== undefined) set.interval = s.interval;
    if (s.status !== undefined) set.status = s.status;
    if (s.amountMinor !== undefined) {
      // The currency is the unit of the amount: they change together.
      set.amount_minor = toLong(s.amountMinor);
      set.currency = s.currency;
    }
    if (s.startedAt !== undefined) set.started_at = toDate(s.startedAt);
    if (s.currentPeriodEnd !== undefined) set.current_period_end = toDate(s.currentPeriodEnd);
    if (s.canceledAt !== undefined) set.canceled_at = toDate(s.canceledAt);
    if (s.endedAt !== undefined) set.ended_at = toDate(s.endedAt);
    set.updated_at = toDate(s.at);
  }
  const setOnInsert: Partial<SubscriptionDoc> = { created_at: toDate(first.at) };
  if (set.currency === undefined) setOnInsert.currency = first.currency;
  if (set.status === undefined) setOnInsert.status = first.defaults.status;
  if (set.started_at === undefined) setOnInsert.started_at = toDate(first.defaults.startedAt);
  return {
    updateOne: {
      filter: { site_id: first.siteId, subscription_id: first.subscriptionId },
      update: { $set: set, $setOnInsert: setOnInsert },
      upsert: true,
    },
  };
}

/**
 * One upsert of a payment: the last write of the batch replaces every field
 * (optional ones it lacks are removed) except created_at, which only the
 * insert sets, from the first write. Attribution belongs to setAttribution:
 * a new payment starts `unattributed` (channel set on insert only) and a
 * re-send leaves `attribution` and `channel` as they are.
 */
export function paymentUpsert(writes: readonly PaymentRecord[]): AnyBulkWriteOperation<PaymentDoc> {
  const first = writes[0] as PaymentRecord;
  const p = writes[writes.length - 1] as PaymentRecord;
  const set: Partial<PaymentDoc> = {
    customer_id: p.customerId,
    currency: p.currency,
    amount_minor: toLong(p.amountMinor),
    kind: p.kind,
    status: p.status,
    paid_at: toDate(p.paidAt),
    metadata: toPairs(p.metadata),
    updated_at: toDate(p.updatedAt),
  };
  const unset: Record<string, ""> = {};
  if (p.feeMinor !== undefined) set.fee_minor = toLong(p.feeMinor);
  else unset.fee_minor = "";
  if (p.subscriptionId !== undefined) set.subscription_id = p.subscriptionId;
  else unset.subscription_id = "";
  return {
    updateOne: {
      filter: { site_id: p.siteId, payment_id: p.paymentId },
      update: {
        $set: set,
        $setOnInsert: { created_at: toDate(first.createdAt), channel: UNATTRIBUTED },
        ...(Object.keys(unset).length > 0 ? { $unset: unset } : {}),
      },
      upsert: true,
    },
  };
}

export function createMongoPayments(c: Collections): StorePaymentsPart {
  return {
    async commitPayments(writes) {
      if (writes.length === 0) return;
      // Built before anything is written, so a bad amount (not an integer)
      // fails the batch before it touches the database.
      const customers = byKey(
        writes.map((w) => w.customer),
        (p) => [p.siteId, p.customerId],
      ).map(customerUpsert);
      const subscriptions = byKey(
        writes.flatMap((w: PaymentWrite) => (w.subscription ? [w.subscription] : [])),
        (s) => [s.siteId, s.subscriptionId],
      ).map(subscriptionUpsert);
      const payments = byKey(
        writes.map((w) => w.payment),
        (p) => [p.siteId, p.paymentId],
      ).map(paymentUpsert);

      // Customers and subscriptions first, payments last: a reader who finds
      // a payment finds what it refers to. Without a transaction a failure
      // can leave the first two written; every write is an idempotent upsert,
      // so the caller's retry completes it.
      await Promise.all([
        bulkUpsert(c.customers, customers),
        subscriptions.length > 0 ? bulkUpsert(c.subscriptions, subscriptions) : undefined,
      ]);
      await bulkUpsert(c.payments, payments);
    },

    async getPayment(siteId, paymentId) {
      const d = await c.payments.findOne({ site_id: siteId, payment_id: paymentId });
      if (!d) return undefined;
      const p: PaymentRecord = {
        siteId: d.site_id,
        paymentId: d.payment_id,
        customerId: d.customer_id,
        currency: d.currency,
        amountMinor: toNumber(d.amount_minor),
        feeMinor: optNumber(d.fee_minor),
        kind: d.kind,
        status: d.status,
        paidAt: d.paid_at.getTime(),
        metadata: fromPairs(d.metadata),
        subscriptionId: opt(d.subscription_id),
        createdAt: d.created_at.getTime(),
        updatedAt: d.updated_at.getTime(),
        attribution: attributionFromDoc(d.attribution),
      };
      return p;
    },

    async getCustomer(siteId, customerId) {
      const d = await c.customers.findOne({ site_id: siteId, customer_id: customerId });
      if (!d) return undefined;
      const r: CustomerRecord = {
        siteId: d.site_id,
        customerId: d.customer_id,
        email: opt(d.email),
        userId: opt(d.user_id),
        name: opt(d.name),
        country: opt(d.country),
        visitorId: opt(d.visitor_id),
        metadata: fromPairs(d.metadata),
        createdAt: d.created_at.getTime(),
        updatedAt: d.updated_at.getTime(),
        attribution: attributionFromDoc(d.attribution),
      };
      return r;
    },

    async getSubscription(siteId, subscriptionId) {
      const d = await c.subscriptions.findOne({ site_id: siteId, subscription_id: subscriptionId });
      if (!d) return undefined;
      const r: SubscriptionRecord = {
        siteId: d.site_id,
        subscriptionId: d.subscription_id,
        customerId: d.customer_id,
        currency: d.currency,
        plan: opt(d.plan),
        interval: opt(d.interval),
        status: d.status,
        amountMinor: optNumber(d.amount_minor),
        startedAt: d.started_at.getTime(),
        currentPeriodEnd: optMs(d.current_period_end),
        canceledAt: optMs(d.canceled_at),
        endedAt: optMs(d.ended_at),
        createdAt: d.created_at.getTime(),
        updatedAt: d.updated_at.getTime(),
      };
      return r;
    },
  };
}
