/**
 * Stripe event payloads in the shapes Stripe's API reference documents
 * (the event object and the objects it carries), with the
 * API-version differences the connector handles: charges listing their
 * refunds (before 2022-11-15), the invoice's subscription at
 * `invoice.subscription` (before 2025-03-31.basil) or at
 * `invoice.parent.subscription_details.subscription` (since), and a
 * subscription's current period on the subscription (before basil) or on
 * its items (since). Signatures come from the SDK's own
 * `stripe.webhooks.generateTestHeaderString`.
 */
import Stripe from "stripe";

type Obj = Record<string, unknown>;

export const OLD_API = "2022-08-01";
export const NEW_API = "2025-03-31.basil";

let seq = 0;
const next = (prefix: string) => `${prefix}_${(++seq).toString(36).padStart(8, "0")}TEST`;

/** The event envelope. `created` is Unix seconds. */
export function stripeEvent(
  type: string,
  object: Obj,
  created: number,
  options: { id?: string; apiVersion?: string; previous?: Obj } = {},
): Obj {
  return {
    id: options.id ?? next("evt"),
    object: "event",
    api_version: options.apiVersion ?? NEW_API,
    created,
    data: { object, ...(options.previous ? { previous_attributes: options.previous } : {}) },
    livemode: false,
    pending_webhooks: 1,
    request: { id: next("req"), idempotency_key: null },
    type,
  };
}

/** A Charge object. */
export function charge(overrides: Obj = {}): Obj {
  const id = (overrides.id as string) ?? next("ch");
  return {
    id,
    object: "charge",
    amount: 2999,
    amount_captured: 2999,
    amount_refunded: 0,
    application: null,
    application_fee: null,
    application_fee_amount: null,
    balance_transaction: next("txn"),
    billing_details: {
      address: {
        city: "London",
        country: "GB",
        line1: "1 Main St",
        line2: null,
        postal_code: "SW1A 1AA",
        state: null,
      },
      email: "ada@example.com",
      name: "Ada Lovelace",
      phone: null,
    },
    calculated_statement_descriptor: "ACME",
    captured: true,
    created: 1773230000,
    currency: "usd",
    customer: "cus_NffrFeUfNV2Hib",
    description: null,
    disputed: false,
    failure_code: null,
    failure_message: null,
    livemode: false,
    metadata: {},
    outcome: {
      network_status: "approved_by_network",
      reason: null,
      risk_level: "normal",
      seller_message: "Payment complete.",
      type: "authorized",
    },
    paid: true,
    payment_intent: next("pi"),
    payment_method: next("pm"),
    receipt_email: null,
    refunded: false,
    status: "succeeded",
    ...overrides,
  };
}

/** A Refund object. */
export function refund(chargeId: string, overrides: Obj = {}): Obj {
  return {
    id: next("re"),
    object: "refund",
    amount: 1000,
    balance_transaction: next("txn"),
    charge: chargeId,
    created: 1773230100,
    currency: "usd",
    metadata: {},
    payment_intent: next("pi"),
    reason: "requested_by_customer",
    receipt_number: null,
    source_transfer_reversal: null,
    status: "succeeded",
    transfer_reversal: null,
    ...overrides,
  };
}

/** A Dispute object. */
export function dispute(chargeId: string, overrides: Obj = {}): Obj {
  return {
    id: next("dp"),
    object: "dispute",
    amount: 2999,
    balance_transactions: [],
    charge: chargeId,
    created: 1773230200,
    currency: "usd",
    evidence_details: {
      due_by: 1774000000,
      has_evidence: false,
      past_due: false,
      submission_count: 0,
    },
    is_charge_refundable: false,
    livemode: false,
    metadata: {},
    payment_intent: next("pi"),
    reason: "fraudulent",
    status: "needs_response",
    ...overrides,
  };
}

/** A Customer object (Marie Curie, in Paris). */
export function customer(overrides: Obj = {}): Obj {
  return {
    id: next("cus"),
    object: "customer",
    address: {
      city: "Paris",
      country: "FR",
      line1: null,
      line2: null,
      postal_code: null,
      state: null,
    },
    created: 1773220000,
    email: "Marie@Example.com",
    livemode: false,
    metadata: {},
    name: "Marie Curie",
    ...overrides,
  };
}

/** A Price object inside a subscription item. */
export function price(overrides: Obj = {}): Obj {
  return {
    id: next("price"),
    object: "price",
    active: true,
    billing_scheme: "per_unit",
    currency: "usd",
    nickname: "Pro monthly",
    product: "prod_NWjs8kKbJWmuuc",
    recurring: { interval: "month", interval_count: 1, usage_type: "licensed" },
    type: "recurring",
    unit_amount: 2900,
    unit_amount_decimal: "2900",
    ...overrides,
  };
}

/**
 * A Subscription object. With `basil`, the current period is on each item,
 * as since 2025-03-31.basil; otherwise on the subscription itself.
 */
export function subscription(
  options: { basil?: boolean; items?: { price: Obj; quantity: number }[] } & Obj = {},
): Obj {
  const { basil = true, items = [{ price: price(), quantity: 1 }], ...overrides } = options;
  const id = (overrides.id as string) ?? next("sub");
  const period = { current_period_start: 1773230000, current_period_end: 1775908400 };
  return {
    id,
    object: "subscription",
    billing_cycle_anchor: 1773230000,
    cancel_at: null,
    cancel_at_period_end: false,
    canceled_at: null,
    collection_method: "charge_automatically",
    created: 1773230000,
    currency: "usd",
    customer: "cus_NffrFeUfNV2Hib",
    ended_at: null,
    items: {
      object: "list",
      data: items.map((it) => ({
        id: next("si"),
        object: "subscription_item",
        created: 1773230000,
        metadata: {},
        price: it.price,
        quantity: it.quantity,
        subscription: id,
        ...(basil ? period : {}),
      })),
      has_more: false,
      total_count: items.length,
      url: `/v1/subscription_items?subscription=${id}`,
    },
    latest_invoice: next("in"),
    livemode: false,
    metadata: {},
    start_date: 1773230000,
    status: "active",
    trial_end: null,
    trial_start: null,
    ...(basil ? {} : period),
    ...overrides,
  };
}

/**
 * An Invoice object. `basil`: the subscription is at
 * `parent.subscription_details.subscription`; otherwise at `subscription`.
 */
export function invoice(
  subscriptionId: string,
  options: { basil: boolean; period_end?: number } & Obj,
): Obj {
  const { basil, period_end = 1775908400, ...overrides } = options;
  const line = {
    id: next("il"),
    object: "line_item",
    amount: 2900,
    currency: "usd",
    description: "1 × Pro (at $29.00 / month)",
    period: { end: period_end, start: 1773230000 },
    quantity: 1,
  };
  return {
    id: next("in"),
    object: "invoice",
    amount_due: 2900,
    amount_paid: 2900,
    amount_remaining: 0,
    billing_reason: "subscription_cycle",
    created: 1773230000,
    currency: "usd",
    customer: "cus_NffrFeUfNV2Hib",
    customer_address: { country: "GB" },
    customer_email: "ada@example.com",
    customer_name: "Ada Lovelace",
    lines: { object: "list", data: [line], has_more: false, total_count: 1 },
    livemode: false,
    metadata: {},
    status: "paid",
    status_transitions: { finalized_at: 1773230000, paid_at: 1773230050 },
    total: 2900,
    ...(basil
      ? {
          parent: {
            quote_details: null,
            subscription_details: { metadata: {}, subscription: subscriptionId },
            type: "subscription_details",
          },
        }
      : { charge: next("ch"), subscription: subscriptionId }),
    ...overrides,
  };
}

/** A Checkout Session object as `checkout.session.completed` carries it. */
export function checkoutSession(overrides: Obj = {}): Obj {
  return {
    id: next("cs_test"),
    object: "checkout.session",
    amount_subtotal: 2999,
    amount_total: 2999,
    client_reference_id: null,
    created: 1773229900,
    currency: "usd",
    customer: null,
    customer_creation: "if_required",
    customer_details: {
      address: {
        city: null,
        country: "FR",
        line1: null,
        line2: null,
        postal_code: null,
        state: null,
      },
      email: "guest@example.com",
      name: "Grace Guest",
      phone: null,
      tax_exempt: "none",
      tax_ids: [],
    },
    livemode: false,
    metadata: {},
    mode: "payment",
    payment_intent: next("pi"),
    payment_link: null,
    payment_status: "paid",
    status: "complete",
    success_url: "https://example.com/thanks",
    ...overrides,
  };
}

/** The body and Stripe-Signature header for `event`, signed at `timestampSeconds`. */
export function signStripe(event: Obj, secret: string, timestampSeconds: number) {
  // Pretty-printed like Stripe's deliveries: the signature covers these exact bytes.
  const payload = JSON.stringify(event, null, 2);
  const header = Stripe.webhooks.generateTestHeaderString({
    payload,
    secret,
    timestamp: timestampSeconds,
  });
  return { payload, header };
}
