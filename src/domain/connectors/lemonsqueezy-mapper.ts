/**
 * Lemon Squeezy webhooks (as its webhook help documents them) to payments,
 * customers and subscriptions: `order_created`, `order_refunded`,
 * `subscription_payment_success` (renewals), `subscription_payment_refunded`
 * and the subscription events. Amounts are integers in the currency's
 * minor units (cents). Lemon Squeezy sends no event id: a delivery is
 * identified by its event name, object and the object's `updated_at`, so a
 * repeat of the same state is recognised and a new state is not mistaken
 * for one. Ids are prefixed (`ls_order_1`): Lemon Squeezy's are bare numbers.
 */
import type { ProviderChange } from "../payments/payments-app.js";
import { attributionOf, compact, num, type Obj, obj, str } from "./json-access.js";
import type { MappedEvent } from "./mapped-event.js";
import { isoExponent, msOf, rfc3339Of, toMajor } from "./provider-money.js";

export const LEMONSQUEEZY_EVENTS = [
  "order_created",
  "order_refunded",
  "subscription_payment_success",
  "subscription_payment_refunded",
  "subscription_created",
  "subscription_updated",
  "subscription_cancelled",
  "subscription_resumed",
  "subscription_expired",
  "subscription_paused",
  "subscription_unpaused",
] as const;

/**
 * Lemon Squeezy's subscription statuses in the spec's six: `on_trial` is
 * trialing, `unpaid` (retries exhausted, still owed) past_due, `cancelled`
 * (still running until `ends_at`) canceled, `expired` ended.
 */
const SUBSCRIPTION_STATUS: Record<string, string> = {
  on_trial: "trialing",
  active: "active",
  paused: "paused",
  past_due: "past_due",
  unpaid: "past_due",
  cancelled: "canceled",
  expired: "ended",
};

/** Order and invoice statuses in the payment statuses. */
const PAYMENT_STATUS: Record<string, string> = {
  paid: "succeeded",
  refunded: "succeeded",
  partial_refund: "succeeded",
  pending: "pending",
  failed: "failed",
  void: "failed",
};

const id = (prefix: string, v: unknown) => {
  const raw = typeof v === "number" ? String(v) : str(v);
  return raw === undefined ? undefined : `ls_${prefix}_${raw}`;
};

function money(amount: unknown, currency: string | undefined): number | undefined {
  return currency === undefined ? undefined : toMajor(amount, isoExponent(currency));
}

function customerOf(a: Obj, custom: unknown): Obj {
  return compact({
    id: id("customer", a.customer_id),
    email: str(a.user_email),
    name: str(a.user_name),
    ...attributionOf(custom),
  });
}

/** An order (or subscription invoice) as a charge, and its refunded amount as one refund. */
function paymentsOf(kind: "order" | "invoice", a: Obj, objectId: string, custom: unknown) {
  const currency = str(a.currency);
  const customer = customerOf(a, custom);
  const charge = compact({
    payment_id: id(kind, objectId),
    customer,
    amount: money(a.total, currency),
    currency,
    kind: "charge",
    status: PAYMENT_STATUS[str(a.status) ?? ""] ?? "pending",
    paid_at: rfc3339Of(a.created_at, "data.attributes.created_at"),
    metadata: compact({
      lemonsqueezy_order_number: a.order_number === undefined ? undefined : String(a.order_number),
    }),
    subscription:
      kind === "invoice" && id("sub", a.subscription_id)
        ? { id: id("sub", a.subscription_id) }
        : undefined,
  });
  const out: Record<string, unknown>[] = [charge];
  // Lemon Squeezy gives the refunded total, not each refund: one refund
  // payment per order carries it, updated as partial refunds add up.
  const refunded = num(a.refunded_amount);
  if (a.refunded === true && refunded !== undefined && refunded > 0) {
    out.push(
      compact({
        payment_id: id(`${kind}_refund`, objectId),
        customer: { id: customer.id },
        amount: money(refunded, currency),
        currency,
        kind: "refund",
        status: "succeeded",
        paid_at:
          rfc3339Of(a.refunded_at, "data.attributes.refunded_at") ??
          rfc3339Of(a.updated_at, "data.attributes.updated_at"),
        metadata: { lemonsqueezy_refund_of: id(kind, objectId) as string },
      }),
    );
  }
  return out;
}

function subscriptionChange(
  a: Obj,
  objectId: string,
  version: number,
  custom: unknown,
): ProviderChange {
  const status = SUBSCRIPTION_STATUS[str(a.status) ?? ""];
  return {
    object: `subscription:${id("sub", objectId)}`,
    version,
    customer: customerOf(a, custom),
    at: rfc3339Of(a.created_at, "data.attributes.created_at") ?? "",
    subscription: compact({
      id: id("sub", objectId),
      plan: [str(a.product_name), str(a.variant_name)].filter(Boolean).join(" – ") || undefined,
      status,
      started_at: rfc3339Of(a.created_at, "data.attributes.created_at"),
      current_period_end: rfc3339Of(a.renews_at, "data.attributes.renews_at"),
      canceled_at:
        a.cancelled === true ? rfc3339Of(a.updated_at, "data.attributes.updated_at") : undefined,
      ended_at:
        status === "ended"
          ? (rfc3339Of(a.ends_at, "data.attributes.ends_at") ??
            rfc3339Of(a.updated_at, "data.attributes.updated_at"))
          : undefined,
    }),
  };
}

/** The order or invoice a refund payment is of: the refunded total is held to its total. */
function refundOf(p: Record<string, unknown>) {
  const chargeId = (p.metadata as Record<string, string> | undefined)?.[REFUND_OF];
  return p.kind === "refund" && chargeId
    ? { chargeId, key: REFUND_OF, field: "data.attributes.refunded_amount" }
    : undefined;
}
const REFUND_OF = "lemonsqueezy_refund_of";

/** Maps one verified Lemon Squeezy webhook. */
export async function mapLemonSqueezyEvent(event: Obj): Promise<MappedEvent> {
  const meta = obj(event, "meta");
  const type = str(meta.event_name) ?? "";
  const data = obj(event, "data");
  const a = obj(data, "attributes");
  const objectId = typeof data.id === "number" ? String(data.id) : str(data.id);
  const updatedAt = str(a.updated_at);
  const eventId =
    objectId && updatedAt ? `${type}:${str(data.type)}:${objectId}:${updatedAt}` : undefined;
  if (!eventId || !objectId || !(LEMONSQUEEZY_EVENTS as readonly string[]).includes(type)) {
    return { kind: "ignored", eventId, type };
  }
  const version = msOf(updatedAt, "data.attributes.updated_at") ?? 0;
  const custom = meta.custom_data;
  const changes: ProviderChange[] = [];
  if (type.startsWith("order_")) {
    for (const p of paymentsOf("order", a, objectId, custom)) {
      changes.push({
        object: `payment:${p.payment_id}`,
        version,
        payment: p,
        against: refundOf(p),
      });
    }
  } else if (type.startsWith("subscription_payment_")) {
    // The first invoice of a subscription is also an order (order_created): only renewals are new money.
    if (str(a.billing_reason) !== "initial") {
      for (const p of paymentsOf("invoice", a, objectId, custom)) {
        changes.push({
          object: `payment:${p.payment_id}`,
          version,
          payment: p,
          against: refundOf(p),
        });
      }
    }
    // A paid renewal's subtotal (before tax) is the recurring amount.
    const subId = id("sub", a.subscription_id);
    const subtotal = money(a.subtotal, str(a.currency));
    if (type === "subscription_payment_success" && subId && subtotal !== undefined) {
      changes.push({
        object: `subscription_amount:${subId}`,
        version,
        customer: customerOf(a, custom),
        currency: str(a.currency),
        at: rfc3339Of(a.created_at, "data.attributes.created_at") ?? "",
        subscription: { id: subId, amount: subtotal },
      });
    }
  } else {
    changes.push(subscriptionChange(a, objectId, version, custom));
  }
  return { kind: "changes", eventId, type, changes };
}
