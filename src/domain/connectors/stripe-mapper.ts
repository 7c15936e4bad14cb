/**
 * Stripe events to payments, customers and subscriptions. Stripe's objects
 * as its API documents them: charges, refunds,
 * disputes, subscriptions, invoices, customers and Checkout Sessions, in the
 * shapes of the API versions before and after 2025-03-31 (basil), where the
 * invoice's subscription moved to `parent.subscription_details` and a
 * subscription's current period to its items.
 */
import type { ChargeReference, ProviderChange } from "../payments/payments-app.js";
import {
  attributionOf,
  compact,
  idOf,
  isObj,
  list,
  num,
  type Obj,
  obj,
  str,
  stringValues,
} from "./json-access.js";
import type { MappedEvent, MapperLookups } from "./mapped-event.js";
import { fromUnixSeconds, stripeExponent, toMajor, unixMs } from "./provider-money.js";

/** The event types a Stripe connector uses; every other one is ignored. */
export const STRIPE_EVENTS = [
  "charge.succeeded",
  "charge.failed",
  "charge.pending",
  "charge.updated",
  "charge.refunded",
  "refund.created",
  "refund.updated",
  "refund.failed",
  "charge.refund.updated",
  "charge.dispute.created",
  "charge.dispute.updated",
  "charge.dispute.closed",
  "customer.subscription.created",
  "customer.subscription.updated",
  "customer.subscription.deleted",
  "invoice.paid",
  "customer.created",
  "customer.updated",
  "checkout.session.completed",
  "checkout.session.async_payment_succeeded",
] as const;

/**
 * Stripe's subscription statuses in the spec's six (docs/connectors.md):
 * `unpaid` keeps collecting nothing but is still owed, so past_due;
 * `incomplete` has not paid its first invoice: not yet recurring revenue,
 * so paused; `incomplete_expired` never started: ended.
 */
const SUBSCRIPTION_STATUS: Record<string, string> = {
  active: "active",
  trialing: "trialing",
  past_due: "past_due",
  paused: "paused",
  canceled: "canceled",
  unpaid: "past_due",
  incomplete: "paused",
  incomplete_expired: "ended",
};

/** Stripe's refund statuses in the payment statuses. */
const REFUND_STATUS: Record<string, string> = {
  succeeded: "succeeded",
  pending: "pending",
  requires_action: "pending",
  failed: "failed",
  canceled: "failed",
};

const upper = (c: unknown) => str(c)?.toUpperCase();

/** Stripe amounts in the currency's Stripe minor units as major units. */
function money(amount: unknown, currency: string | undefined): number | undefined {
  return currency === undefined ? undefined : toMajor(amount, stripeExponent(currency));
}

/**
 * A charge's customer: Stripe's customer id, or for a guest checkout a
 * stable id derived from the payment (its PaymentIntent, which the Checkout
 * Session also names, else the charge) with the billing email, name and
 * country. The ingest ids come from the charge's metadata (a PaymentIntent's
 * metadata is copied to its charges).
 */
function chargeCustomer(ch: Obj): Obj {
  const id = idOf(ch.customer);
  const billing = obj(ch, "billing_details");
  return compact({
    id: id ?? guestId(ch),
    email: id ? undefined : (str(billing.email) ?? str(ch.receipt_email)),
    name: id ? undefined : str(billing.name),
    country: id ? undefined : str(obj(billing, "address").country),
    ...attributionOf(ch.metadata),
  });
}

function guestId(o: Obj): string {
  return `guest_${idOf(o.payment_intent) ?? str(o.id) ?? "unknown"}`;
}

/** The fee of an expanded balance transaction, when it is in the payment's currency. */
function feeOf(bt: unknown, currency: string | undefined): number | undefined {
  if (!isObj(bt) || upper(bt.currency) !== currency) return undefined;
  return money(bt.fee, currency);
}

function chargePayment(ch: Obj, at = "data.object"): Record<string, unknown> {
  const currency = upper(ch.currency);
  const status = str(ch.status);
  return compact({
    payment_id: str(ch.id),
    customer: chargeCustomer(ch),
    amount: money(ch.amount, currency),
    currency,
    fee: feeOf(ch.balance_transaction, currency),
    kind: "charge",
    status:
      status === "succeeded" || status === "pending" || status === "failed" ? status : undefined,
    paid_at: fromUnixSeconds(ch.created, `${at}.created`),
    metadata: stringValues(ch.metadata),
  });
}

function refundPayment(re: Obj, customerId: string, chargeId: string | undefined, at: string) {
  const currency = upper(re.currency);
  return compact({
    payment_id: str(re.id),
    customer: { id: customerId },
    amount: money(re.amount, currency),
    currency,
    fee: feeOf(re.balance_transaction, currency),
    kind: "refund",
    status: REFUND_STATUS[str(re.status) ?? ""] ?? "pending",
    paid_at: fromUnixSeconds(re.created, `${at}.created`),
    metadata: compact({ ...stringValues(re.metadata), stripe_charge: chargeId }),
  });
}

/** The customer a refund or dispute belongs to: its charge's, as recorded, else the guest id. */
async function customerOfCharge(o: Obj, lookups: MapperLookups): Promise<string> {
  const chargeId = idOf(o.charge);
  if (isObj(o.charge)) return chargeCustomer(o.charge).id as string;
  const known = chargeId ? await lookups.customerOfPayment(chargeId) : undefined;
  return known ?? `guest_${idOf(o.payment_intent) ?? chargeId ?? "unknown"}`;
}

/** A dispute's chargeback: pending while open, counted once lost, void (failed) once won. */
function disputeStatus(status: string | undefined): string {
  if (status === "lost") return "succeeded";
  if (status === "won" || status === "warning_closed") return "failed";
  return "pending";
}

/** The subscription items' recurring amount (unit amount × quantity), plan and interval. */
function subscriptionTerms(sub: Obj, currency: string | undefined) {
  const items = list(obj(sub, "items").data);
  const first = items[0] ?? {};
  const price = obj(first, "price");
  const product = price.product;
  let total = 0;
  let known = items.length > 0;
  for (const item of items) {
    const unit = num(obj(item, "price").unit_amount);
    const quantity = num(item.quantity) ?? 1;
    if (unit === undefined) known = false;
    else total += unit * quantity;
  }
  return {
    plan: str(price.nickname) ?? (isObj(product) ? str(product.name) : undefined) ?? idOf(product),
    interval: str(obj(price, "recurring").interval),
    amount: known ? money(total, currency) : undefined,
    // Before basil the period is the subscription's; since, each item's.
    current_period_end:
      sub.current_period_end !== undefined && sub.current_period_end !== null
        ? fromUnixSeconds(sub.current_period_end, "data.object.current_period_end")
        : fromUnixSeconds(first.current_period_end, "data.object.items.data.current_period_end"),
  };
}

function subscriptionChange(sub: Obj, version: number): ProviderChange | undefined {
  const id = str(sub.id);
  const customerId = idOf(sub.customer);
  const currency = upper(sub.currency);
  if (!id || !customerId || !currency) return undefined;
  return {
    object: `subscription:${id}`,
    version,
    customer: { id: customerId, ...attributionOf(sub.metadata) },
    currency,
    at:
      fromUnixSeconds(sub.start_date, "data.object.start_date") ??
      fromUnixSeconds(sub.created, "data.object.created") ??
      "",
    subscription: compact({
      id,
      ...subscriptionTerms(sub, currency),
      status: SUBSCRIPTION_STATUS[str(sub.status) ?? ""],
      started_at: fromUnixSeconds(sub.start_date, "data.object.start_date"),
      canceled_at: fromUnixSeconds(sub.canceled_at, "data.object.canceled_at"),
      ended_at: fromUnixSeconds(sub.ended_at, "data.object.ended_at"),
    }),
  };
}

/**
 * invoice.paid: its subscription is paid up to the end of the invoice's
 * subscription period. `invoice.subscription` before basil,
 * `invoice.parent.subscription_details.subscription` since. The money itself
 * arrives as the invoice's charge (charge.succeeded), so it is not counted
 * twice.
 */
function invoiceChange(inv: Obj, version: number): ProviderChange | undefined {
  const details = obj(inv, "parent", "subscription_details");
  const subscriptionId = idOf(inv.subscription) ?? idOf(details.subscription);
  const customerId = idOf(inv.customer);
  const currency = upper(inv.currency);
  if (!subscriptionId || !customerId || !currency) return undefined;
  const ends = list(obj(inv, "lines").data)
    .map((line) => unixMs(obj(line, "period").end, "data.object.lines.data.period.end"))
    .filter((n): n is number => n !== undefined);
  const paid = (num(inv.amount_paid) ?? 0) > 0;
  return {
    object: `subscription:${subscriptionId}`,
    version,
    customer: compact({
      id: customerId,
      email: str(inv.customer_email),
      name: str(inv.customer_name),
      country: str(obj(inv, "customer_address").country),
      ...attributionOf(details.metadata ?? obj(inv, "subscription_details").metadata),
    }),
    currency,
    at:
      fromUnixSeconds(
        obj(inv, "status_transitions").paid_at,
        "data.object.status_transitions.paid_at",
      ) ??
      fromUnixSeconds(inv.created, "data.object.created") ??
      "",
    subscription: compact({
      id: subscriptionId,
      // A paid invoice (not a $0 trial one) means the subscription is active.
      status: paid ? "active" : undefined,
      current_period_end: ends.length > 0 ? new Date(Math.max(...ends)).toISOString() : undefined,
    }),
  };
}

function customerChange(o: Obj, customer: Obj, version: number): ProviderChange | undefined {
  const id = str(customer.id);
  if (!id) return undefined;
  return {
    object: `customer:${id}`,
    version,
    customer,
    currency: "USD",
    at: fromUnixSeconds(o.created, "data.object.created") ?? "",
  };
}

/** A Checkout Session's customer with the visitor id: `client_reference_id` or the ingest metadata. */
function checkoutChange(session: Obj, version: number): ProviderChange | undefined {
  const customerId = idOf(session.customer);
  if (!customerId && !idOf(session.payment_intent)) return undefined;
  const details = obj(session, "customer_details");
  const fromMeta = attributionOf(session.metadata);
  const customer = compact({
    id: customerId ?? guestId({ payment_intent: session.payment_intent }),
    email: str(details.email),
    name: str(details.name),
    country: str(obj(details, "address").country),
    visitor_id: str(session.client_reference_id) ?? fromMeta.visitor_id,
    user_id: fromMeta.user_id,
  });
  return customerChange(session, customer, version);
}

/** Maps one verified Stripe event. */
export async function mapStripeEvent(event: Obj, lookups: MapperLookups): Promise<MappedEvent> {
  const type = str(event.type) ?? "";
  const eventId = str(event.id);
  if (!eventId || !(STRIPE_EVENTS as readonly string[]).includes(type)) {
    return { kind: "ignored", eventId, type };
  }
  const o = obj(event, "data", "object");
  // Stripe's event time orders the states of one object; seconds, as Stripe gives it.
  const version = unixMs(event.created, "created") ?? 0;
  const changes: ProviderChange[] = [];
  const payment = (p: Record<string, unknown>, against?: ChargeReference) =>
    changes.push({ object: `payment:${p.payment_id}`, version, payment: p, against });
  /** What a refund or dispute of the charge `chargeId` is held against; its amount at `field`. */
  const of = (chargeId: string | undefined, field: string) =>
    chargeId ? { chargeId, key: "stripe_charge", field } : undefined;

  switch (type) {
    case "charge.succeeded":
    case "charge.failed":
    case "charge.pending":
    case "charge.updated":
      payment(chargePayment(o));
      break;
    case "charge.refunded": {
      // The charge stays a charge; each refund listed (API versions before
      // 2022-11-15 include them) is a refund payment of its own.
      payment(chargePayment(o));
      const customerId = chargeCustomer(o).id as string;
      for (const re of list(obj(o, "refunds").data)) {
        payment(
          refundPayment(re, customerId, str(o.id), "data.object.refunds.data"),
          of(str(o.id), "data.object.refunds.data.amount"),
        );
      }
      break;
    }
    case "refund.created":
    case "refund.updated":
    case "refund.failed":
    case "charge.refund.updated":
      payment(
        refundPayment(o, await customerOfCharge(o, lookups), idOf(o.charge), "data.object"),
        of(idOf(o.charge), "data.object.amount"),
      );
      break;
    case "charge.dispute.created":
    case "charge.dispute.updated":
    case "charge.dispute.closed": {
      const currency = upper(o.currency);
      payment(
        compact({
          payment_id: str(o.id),
          customer: { id: await customerOfCharge(o, lookups) },
          amount: money(o.amount, currency),
          currency,
          kind: "chargeback",
          status: disputeStatus(str(o.status)),
          paid_at: fromUnixSeconds(o.created, "data.object.created"),
          metadata: compact({
            ...stringValues(o.metadata),
            stripe_charge: idOf(o.charge),
            stripe_dispute_status: str(o.status),
            stripe_dispute_reason: str(o.reason),
          }),
        }),
        of(idOf(o.charge), "data.object.amount"),
      );
      break;
    }
    case "customer.subscription.created":
    case "customer.subscription.updated":
    case "customer.subscription.deleted": {
      const c = subscriptionChange(o, version);
      if (c) changes.push(c);
      break;
    }
    case "invoice.paid": {
      const c = invoiceChange(o, version);
      if (c) changes.push(c);
      break;
    }
    case "customer.created":
    case "customer.updated": {
      const c = customerChange(
        o,
        compact({
          id: str(o.id),
          email: str(o.email),
          name: str(o.name),
          country: str(obj(o, "address").country),
          ...attributionOf(o.metadata),
        }),
        version,
      );
      if (c) changes.push(c);
      break;
    }
    default: {
      const c = checkoutChange(o, version);
      if (c) changes.push(c);
    }
  }
  return { kind: "changes", eventId, type, changes };
}
