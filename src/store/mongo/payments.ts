/** Payments, customers and subscriptions in MongoDB. */
import type { AnyBulkWriteOperation } from "mongodb";
import {
  type CustomerFields,
  customerChange,
  type SubscriptionFields,
  subscriptionChange,
} from "../../domain/store/patches.js";
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

/** A customer change's fields as the document's (patches.ts decides which). */
function customerDoc(f: Partial<CustomerFields>): Partial<CustomerDoc> {
  const d: Partial<CustomerDoc> = {};
  if (f.email !== undefined) d.email = f.email;
  if (f.userId !== undefined) d.user_id = f.userId;
  if (f.name !== undefined) d.name = f.name;
  if (f.country !== undefined) d.country = f.country;
  if (f.visitorId !== undefined) d.visitor_id = f.visitorId;
  if (f.metadata !== undefined) d.metadata = toPairs(f.metadata);
  if (f.createdAt !== undefined) d.created_at = toDate(f.createdAt);
  if (f.updatedAt !== undefined) d.updated_at = toDate(f.updatedAt);
  return d;
}

/** A subscription change's fields as the document's (patches.ts decides which). */
function subscriptionDoc(f: Partial<SubscriptionFields>): Partial<SubscriptionDoc> {
  const d: Partial<SubscriptionDoc> = {};
  if (f.customerId !== undefined) d.customer_id = f.customerId;
  if (f.currency !== undefined) d.currency = f.currency;
  if (f.plan !== undefined) d.plan = f.plan;
  if (f.interval !== undefined) d.interval = f.interval;
  if (f.status !== undefined) d.status = f.status;
  if (f.amountMinor !== undefined) d.amount_minor = toLong(f.amountMinor);
  if (f.startedAt !== undefined) d.started_at = toDate(f.startedAt);
  if (f.currentPeriodEnd !== undefined) d.current_period_end = toDate(f.currentPeriodEnd);
  if (f.canceledAt !== undefined) d.canceled_at = toDate(f.canceledAt);
  if (f.endedAt !== undefined) d.ended_at = toDate(f.endedAt);
  if (f.createdAt !== undefined) d.created_at = toDate(f.createdAt);
  if (f.updatedAt !== undefined) d.updated_at = toDate(f.updatedAt);
  return d;
}

/** One upsert applying a batch's customer patches of one customer, in order (customerChange). */
export function customerUpsert(
  patches: readonly CustomerPatch[],
): AnyBulkWriteOperation<CustomerDoc> {
  const first = patches[0] as CustomerPatch;
  const change = customerChange(patches);
  return {
    updateOne: {
      filter: { site_id: first.siteId, customer_id: first.customerId },
      update: { $set: customerDoc(change.set), $setOnInsert: customerDoc(change.setOnInsert) },
      upsert: true,
    },
  };
}

/** One upsert applying a batch's patches of one subscription, in order (subscriptionChange). */
export function subscriptionUpsert(
  patches: readonly SubscriptionPatch[],
): AnyBulkWriteOperation<SubscriptionDoc> {
  const first = patches[0] as SubscriptionPatch;
  const change = subscriptionChange(patches);
  return {
    updateOne: {
      filter: { site_id: first.siteId, subscription_id: first.subscriptionId },
      update: {
        $set: subscriptionDoc(change.set),
        $setOnInsert: subscriptionDoc(change.setOnInsert),
      },
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
        // The analytics feed's marker: the server's time of this change.
        $currentDate: { u: true },
      },
      upsert: true,
    },
  };
}

/** A payment document as the port's record. */
export function paymentFromDoc(d: PaymentDoc): PaymentRecord {
  return {
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
    // An erased customer's payment keeps its channel without the attribution's details.
    erasedChannel:
      d.attribution == null && d.channel !== undefined && d.channel !== UNATTRIBUTED
        ? d.channel
        : undefined,
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
      return paymentFromDoc(d);
    },

    async refundsOfCharge(siteId, customerId, key, chargeId) {
      // By the customer's index; metadata is stored as {k, v} pairs.
      const docs = await c.payments
        .find({
          site_id: siteId,
          customer_id: customerId,
          kind: { $in: ["refund", "chargeback"] },
          status: { $ne: "failed" },
          metadata: { $elemMatch: { k: key, v: chargeId } },
        })
        .toArray();
      return docs.map(paymentFromDoc);
    },

    async pagePayments(siteId, q) {
      const after = q.after ?? { paidAt: q.from, paymentId: "" };
      const at = new Date(after.paidAt);
      const docs = await c.payments
        .find({
          site_id: siteId,
          paid_at: { $gte: new Date(q.from), $lt: new Date(q.to) },
          $or: [{ paid_at: { $gt: at } }, { paid_at: at, payment_id: { $gt: after.paymentId } }],
        })
        .sort({ paid_at: 1, payment_id: 1 })
        .limit(q.limit + 1)
        .toArray();
      // One more than the page: its presence says whether a next page exists (never an empty one).
      const payments = docs.slice(0, q.limit).map(paymentFromDoc);
      const last = payments.at(-1);
      return docs.length > q.limit && last
        ? { payments, next: { paidAt: last.paidAt, paymentId: last.paymentId } }
        : { payments };
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
