/**
 * Paddle Billing notifications (as Paddle's webhook reference documents them) to payments,
 * customers and subscriptions: transactions (`transaction.completed`,
 * `transaction.paid`, `transaction.payment_failed`), adjustments (refunds
 * and chargebacks), subscriptions and customers. Paddle sends amounts as
 * strings of the currency's minor units (ISO 4217's) and its own fee in
 * `details.totals.fee`. Each entity's `updated_at` orders its states.
 */
import type { ProviderChange } from "../payments/payments-app.js";
import { attributionOf, compact, list, num, type Obj, obj, str } from "./json-access.js";
import type { MappedEvent } from "./mapped-event.js";
import { isoExponent, msOf, rfc3339Of, toMajor } from "./provider-money.js";

export const PADDLE_EVENTS = [
  "transaction.completed",
  "transaction.paid",
  "transaction.payment_failed",
  "adjustment.created",
  "adjustment.updated",
  "subscription.created",
  "subscription.updated",
  "subscription.activated",
  "subscription.canceled",
  "subscription.past_due",
  "subscription.paused",
  "subscription.resumed",
  "subscription.trialing",
  "customer.created",
  "customer.updated",
] as const;

/** Paddle's adjustment statuses in the payment statuses. */
const ADJUSTMENT_STATUS: Record<string, string> = {
  approved: "succeeded",
  pending_approval: "pending",
  rejected: "failed",
  reversed: "failed",
};

/** Paddle's five subscription statuses are the spec's words already. */
const SUBSCRIPTION_STATUS = new Set(["active", "trialing", "past_due", "paused", "canceled"]);

function money(amount: unknown, currency: string | undefined): number | undefined {
  return currency === undefined ? undefined : toMajor(amount, isoExponent(currency));
}

function payment(d: Obj, type: string): Record<string, unknown> {
  const currency = str(d.currency_code);
  const totals = obj(d, "details", "totals");
  // transaction.completed/paid mean collected; payment_failed a failed attempt.
  const status = type === "transaction.payment_failed" ? "failed" : "succeeded";
  return compact({
    payment_id: str(d.id),
    customer: compact({ id: str(d.customer_id), ...attributionOf(d.custom_data) }),
    amount: money(totals.grand_total ?? totals.total, currency),
    currency,
    fee: money(totals.fee, currency),
    kind: "charge",
    status,
    paid_at: rfc3339Of(d.billed_at, "data.billed_at") ?? rfc3339Of(d.created_at, "data.created_at"),
    metadata: compact({
      paddle_invoice_number: str(d.invoice_number),
      paddle_origin: str(d.origin),
    }),
    subscription: str(d.subscription_id) ? { id: str(d.subscription_id) } : undefined,
  });
}

/** A refund or chargeback adjustment; credits and reversals are not money the customer paid or got back. */
function adjustment(d: Obj): Record<string, unknown> | undefined {
  const action = str(d.action);
  if (action !== "refund" && action !== "chargeback") return undefined;
  const currency = str(d.currency_code);
  const totals = obj(d, "totals");
  return compact({
    payment_id: str(d.id),
    customer: { id: str(d.customer_id) },
    amount: money(totals.total, currency),
    currency,
    fee: money(totals.fee, currency),
    kind: action === "refund" ? "refund" : "chargeback",
    status: ADJUSTMENT_STATUS[str(d.status) ?? ""] ?? "pending",
    paid_at: rfc3339Of(d.created_at, "data.created_at"),
    metadata: compact({ paddle_transaction: str(d.transaction_id), paddle_reason: str(d.reason) }),
  });
}

function subscription(d: Obj, version: number): ProviderChange | undefined {
  const id = str(d.id);
  const customerId = str(d.customer_id);
  const currency = str(d.currency_code);
  if (!id || !customerId || !currency) return undefined;
  const items = list(d.items).filter((i) => i.recurring !== false);
  const first = obj(items[0]);
  let total = 0;
  let known = items.length > 0;
  for (const item of items) {
    const unit = num(Number(str(obj(item, "price", "unit_price").amount)));
    if (unit === undefined || !Number.isSafeInteger(unit)) known = false;
    else total += unit * (num(item.quantity) ?? 1);
  }
  const status = str(d.status) ?? "";
  const canceledAt = rfc3339Of(d.canceled_at, "data.canceled_at");
  return {
    object: `subscription:${id}`,
    version,
    customer: compact({ id: customerId, ...attributionOf(d.custom_data) }),
    currency,
    at:
      rfc3339Of(d.started_at, "data.started_at") ??
      rfc3339Of(d.created_at, "data.created_at") ??
      "",
    subscription: compact({
      id,
      plan:
        str(obj(first, "price").name) ??
        str(obj(first, "product").name) ??
        str(obj(first, "price").description),
      interval: str(obj(d, "billing_cycle").interval),
      status: SUBSCRIPTION_STATUS.has(status) ? status : undefined,
      amount: known ? money(total, currency) : undefined,
      started_at: rfc3339Of(d.started_at, "data.started_at"),
      current_period_end: rfc3339Of(
        obj(d, "current_billing_period").ends_at,
        "data.current_billing_period.ends_at",
      ),
      canceled_at: canceledAt,
      // A canceled Paddle subscription has ended: Paddle cancels at the period's end or at once.
      ended_at: status === "canceled" ? canceledAt : undefined,
    }),
  };
}

/** Maps one verified Paddle notification. */
export async function mapPaddleEvent(event: Obj): Promise<MappedEvent> {
  const type = str(event.event_type) ?? "";
  const eventId = str(event.event_id);
  if (!eventId || !(PADDLE_EVENTS as readonly string[]).includes(type)) {
    return { kind: "ignored", eventId, type };
  }
  const d = obj(event, "data");
  const version =
    msOf(d.updated_at, "data.updated_at") ?? msOf(event.occurred_at, "occurred_at") ?? 0;
  const changes: ProviderChange[] = [];
  const [entity] = type.split(".");
  if (entity === "transaction") {
    const p = payment(d, type);
    changes.push({ object: `payment:${p.payment_id}`, version, payment: p });
  } else if (entity === "adjustment") {
    const p = adjustment(d);
    const transaction = str(d.transaction_id);
    if (p) {
      changes.push({
        object: `payment:${p.payment_id}`,
        version,
        payment: p,
        against: transaction
          ? { chargeId: transaction, key: "paddle_transaction", field: "data.totals.total" }
          : undefined,
      });
    }
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
        ...attributionOf(d.custom_data),
      }),
      at: rfc3339Of(d.created_at, "data.created_at") ?? "",
    });
  }
  return { kind: "changes", eventId, type, changes };
}
