/**
 * Polar webhooks (Standard Webhooks) to payments, customers
 * and subscriptions: orders (`order.created`, `order.paid`, `order.updated`,
 * `order.refunded`), refunds (`refund.created`, `refund.updated`),
 * subscriptions and customers. Amounts are integers in the currency's minor
 * units (cents). The delivery's `webhook-id` is the event id; each object's
 * `modified_at` (else `created_at`) orders its states.
 */
import type { ProviderChange } from "../payments/payments-app.js";
import { attributionOf, compact, idOf, type Obj, obj, str } from "./json-access.js";
import type { DeliveryInfo, MappedEvent } from "./mapped-event.js";
import { isoExponent, msOf, rfc3339Of, toMajor } from "./provider-money.js";

export const POLAR_EVENTS = [
  "order.created",
  "order.paid",
  "order.updated",
  "order.refunded",
  "refund.created",
  "refund.updated",
  "subscription.created",
  "subscription.updated",
  "subscription.active",
  "subscription.canceled",
  "subscription.uncanceled",
  "subscription.revoked",
  "customer.created",
  "customer.updated",
] as const;

/** Polar's subscription statuses (Stripe's words) in the spec's six, as for Stripe. */
const SUBSCRIPTION_STATUS: Record<string, string> = {
  active: "active",
  trialing: "trialing",
  past_due: "past_due",
  canceled: "canceled",
  unpaid: "past_due",
  incomplete: "paused",
  incomplete_expired: "ended",
};

const ORDER_STATUS: Record<string, string> = {
  paid: "succeeded",
  refunded: "succeeded",
  partially_refunded: "succeeded",
  pending: "pending",
};

const REFUND_STATUS: Record<string, string> = {
  succeeded: "succeeded",
  pending: "pending",
  failed: "failed",
  canceled: "failed",
};

const upper = (c: unknown) => str(c)?.toUpperCase();

function money(amount: unknown, currency: string | undefined): number | undefined {
  return currency === undefined ? undefined : toMajor(amount, isoExponent(currency));
}

/** The customer of an order or subscription, with the ingest ids from its metadata or the customer's. */
function customerOf(o: Obj): Obj {
  const c = obj(o, "customer");
  return compact({
    id: str(o.customer_id) ?? str(c.id),
    email: str(c.email),
    name: str(c.name),
    country: str(obj(c, "billing_address").country),
    ...attributionOf(c.metadata),
    ...attributionOf(o.metadata),
  });
}

function order(o: Obj): Record<string, unknown> {
  const currency = upper(o.currency);
  return compact({
    payment_id: str(o.id),
    customer: customerOf(o),
    // total_amount since Polar's 2025 order schema; amount + tax_amount before.
    amount: money(o.total_amount ?? sum(o.amount, o.tax_amount), currency),
    currency,
    kind: "charge",
    status: ORDER_STATUS[str(o.status) ?? ""] ?? (o.paid === true ? "succeeded" : "pending"),
    paid_at: rfc3339Of(o.created_at, "data.created_at"),
    metadata: compact({
      polar_billing_reason: str(o.billing_reason),
      polar_product: str(obj(o, "product").name),
    }),
    subscription: str(o.subscription_id) ? { id: str(o.subscription_id) } : undefined,
  });
}

function sum(a: unknown, b: unknown): number | undefined {
  return typeof a === "number" ? a + (typeof b === "number" ? b : 0) : undefined;
}

function subscription(s: Obj, version: number): ProviderChange | undefined {
  const id = str(s.id);
  const currency = upper(s.currency);
  const customer = customerOf(s);
  if (!id || !customer.id || !currency) return undefined;
  return {
    object: `subscription:${id}`,
    version,
    customer,
    currency,
    at:
      rfc3339Of(s.started_at, "data.started_at") ??
      rfc3339Of(s.created_at, "data.created_at") ??
      "",
    subscription: compact({
      id,
      plan: str(obj(s, "product").name),
      interval: str(s.recurring_interval),
      status: SUBSCRIPTION_STATUS[str(s.status) ?? ""],
      amount: money(s.amount, currency),
      started_at: rfc3339Of(s.started_at, "data.started_at"),
      current_period_end: rfc3339Of(s.current_period_end, "data.current_period_end"),
      canceled_at: rfc3339Of(s.canceled_at, "data.canceled_at"),
      ended_at: rfc3339Of(s.ended_at, "data.ended_at"),
    }),
  };
}

/** Maps one verified Polar webhook; its event id is the delivery's `webhook-id`. */
export async function mapPolarEvent(
  event: Obj,
  lookups: { customerOfPayment(id: string): Promise<string | undefined> },
  delivery: DeliveryInfo,
): Promise<MappedEvent> {
  const type = str(event.type) ?? "";
  const eventId = delivery.webhookId;
  if (!eventId || !(POLAR_EVENTS as readonly string[]).includes(type)) {
    return { kind: "ignored", eventId, type };
  }
  const d = obj(event, "data");
  const version =
    msOf(d.modified_at, "data.modified_at") ??
    msOf(d.created_at, "data.created_at") ??
    msOf(event.timestamp, "timestamp") ??
    0;
  const changes: ProviderChange[] = [];
  const [entity] = type.split(".");
  if (entity === "order") {
    const p = order(d);
    changes.push({ object: `payment:${p.payment_id}`, version, payment: p });
  } else if (entity === "refund") {
    const currency = upper(d.currency);
    const orderId = idOf(d.order_id);
    const customerId =
      str(d.customer_id) ?? (orderId ? await lookups.customerOfPayment(orderId) : undefined);
    const p = compact({
      payment_id: str(d.id),
      customer: { id: customerId },
      amount: money(sum(d.amount, d.tax_amount), currency),
      currency,
      kind: "refund",
      status: REFUND_STATUS[str(d.status) ?? ""] ?? "pending",
      paid_at: rfc3339Of(d.created_at, "data.created_at"),
      metadata: compact({ polar_order: orderId, polar_reason: str(d.reason) }),
    });
    changes.push({
      object: `payment:${p.payment_id}`,
      version,
      payment: p,
      against: orderId
        ? { chargeId: orderId, key: "polar_order", field: "data.amount" }
        : undefined,
    });
  } else if (entity === "subscription") {
    const c = subscription(d, version);
    if (c) changes.push(c);
  } else if (str(d.id)) {
    changes.push({
      object: `customer:${str(d.id)}`,
      version,
      customer: compact({
        id: str(d.id),
        email: str(d.email),
        name: str(d.name),
        country: str(obj(d, "billing_address").country),
        ...attributionOf(d.metadata),
      }),
      at: rfc3339Of(d.created_at, "data.created_at") ?? "",
    });
  }
  return { kind: "changes", eventId, type, changes };
}
