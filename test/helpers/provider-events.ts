/**
 * Paddle Billing, Lemon Squeezy and Polar webhook payloads in the shapes
 * their references document (Paddle: the
 * transaction, adjustment, subscription and customer entities; Lemon
 * Squeezy: the order, subscription and
 * subscription-invoice objects under `data.attributes` with `meta`; Polar:
 * webhooks, `{type, timestamp, data}`), and each provider's
 * documented signature: Paddle `ts=…;h1=…`, Lemon Squeezy `X-Signature`,
 * Polar through Standard Webhooks' own `sign`.
 */
import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";

type Obj = Record<string, unknown>;

let seq = 0;
const n = () => (++seq).toString().padStart(6, "0");

// ---- Paddle ----

export function paddleEvent(
  eventType: string,
  data: Obj,
  occurredAt: string,
  eventId?: string,
): Obj {
  return {
    event_id: eventId ?? `evt_01hv8x2acma2gz8he4yw${n()}`,
    event_type: eventType,
    occurred_at: occurredAt,
    notification_id: `ntf_01hv8x2af3bbmcfxw4dd${n()}`,
    data,
  };
}

/** A Paddle price entity as notifications carry it. */
export function paddlePrice(): Obj {
  return {
    id: "pri_01gsz8x8sawmvhz1pv30nge1ke",
    product_id: "pro_01gsz4t5hdjse780zja8vvr7jg",
    type: "standard",
    description: "Monthly",
    name: "Pro monthly",
    billing_cycle: { interval: "month", frequency: 1 },
    trial_period: null,
    tax_mode: "account_setting",
    unit_price: { amount: "3000", currency_code: "USD" },
    unit_price_overrides: [],
    quantity: { minimum: 1, maximum: 100 },
    status: "active",
    custom_data: null,
    import_meta: null,
    created_at: "2026-01-05T10:00:00.000000Z",
    updated_at: "2026-01-05T10:00:00.000000Z",
  };
}

export function paddleTransaction(overrides: Obj = {}): Obj {
  return {
    id: `txn_01hv8wptq8987qeep44c${n()}`,
    status: "completed",
    customer_id: "ctm_01hv6y1jedq4p1n0yqn5ba3ky4",
    address_id: "add_01hv6y1jgkhz8c7rfwjvp9ynzb",
    business_id: null,
    custom_data: { ingest_visitor_id: "v_paddle_1", ingest_user_id: "u_paddle_1" },
    origin: "web",
    collection_mode: "automatic",
    subscription_id: "sub_01hv8x29kz0t586xy6zn1a62ny",
    invoice_id: "inv_01hv8x2a5n3fsvqs4ehb2sr2xx",
    invoice_number: "325-10566",
    billing_details: null,
    billing_period: {
      starts_at: "2026-03-11T11:00:00.000000Z",
      ends_at: "2026-04-11T11:00:00.000000Z",
    },
    currency_code: "USD",
    discount_id: null,
    created_at: "2026-03-11T10:59:00.201400Z",
    updated_at: "2026-03-11T11:00:02.294633Z",
    billed_at: "2026-03-11T11:00:01.635628Z",
    items: [
      {
        price: paddlePrice(),
        quantity: 1,
        proration: null,
      },
    ],
    details: {
      tax_rates_used: [
        { tax_rate: "0.2", totals: { subtotal: "3000", discount: "0", tax: "600", total: "3600" } },
      ],
      totals: {
        subtotal: "3000",
        tax: "600",
        discount: "0",
        total: "3600",
        grand_total: "3600",
        fee: "230",
        credit: "0",
        credit_to_balance: "0",
        balance: "0",
        earnings: "2770",
        currency_code: "USD",
      },
      line_items: [],
    },
    payments: [
      {
        amount: "3600",
        status: "captured",
        created_at: "2026-03-11T11:00:00.000000Z",
        captured_at: "2026-03-11T11:00:01.000000Z",
        error_code: null,
        method_details: { type: "card", card: { type: "visa", last4: "4242" } },
        payment_attempt_id: "497f776b-851d-4ebf-89ab-8ba0f75d2d6a",
        stored_payment_method_id: "7c1d6a2e-4d2b-4a5d-8c1e-6f0e6a7b3c9d",
      },
    ],
    checkout: { url: "https://example.com/pay?_ptxn=txn_01" },
    ...overrides,
  };
}

export function paddleAdjustment(transactionId: string, overrides: Obj = {}): Obj {
  return {
    id: `adj_01hvgf2s84dr6reszzg2${n()}`,
    action: "refund",
    type: "partial",
    transaction_id: transactionId,
    subscription_id: "sub_01hv8x29kz0t586xy6zn1a62ny",
    customer_id: "ctm_01hv6y1jedq4p1n0yqn5ba3ky4",
    reason: "error",
    credit_applied_to_balance: null,
    currency_code: "USD",
    status: "approved",
    items: [],
    totals: {
      subtotal: "1000",
      tax: "200",
      total: "1200",
      fee: "77",
      earnings: "1123",
      currency_code: "USD",
    },
    payout_totals: null,
    created_at: "2026-03-11T11:30:00.000000Z",
    updated_at: "2026-03-11T11:30:00.000000Z",
    ...overrides,
  };
}

export function paddleSubscription(overrides: Obj = {}): Obj {
  return {
    id: "sub_01hv8x29kz0t586xy6zn1a62ny",
    status: "active",
    customer_id: "ctm_01hv6y1jedq4p1n0yqn5ba3ky4",
    address_id: "add_01hv6y1jgkhz8c7rfwjvp9ynzb",
    business_id: null,
    currency_code: "USD",
    created_at: "2026-03-11T10:59:00.000000Z",
    updated_at: "2026-03-11T11:00:03.000000Z",
    started_at: "2026-03-11T11:00:00.000000Z",
    first_billed_at: "2026-03-11T11:00:00.000000Z",
    next_billed_at: "2026-04-11T11:00:00.000000Z",
    paused_at: null,
    canceled_at: null,
    collection_mode: "automatic",
    billing_details: null,
    current_billing_period: {
      starts_at: "2026-03-11T11:00:00.000000Z",
      ends_at: "2026-04-11T11:00:00.000000Z",
    },
    billing_cycle: { frequency: 1, interval: "month" },
    scheduled_change: null,
    items: [
      {
        status: "active",
        quantity: 2,
        recurring: true,
        created_at: "2026-03-11T10:59:00.000000Z",
        updated_at: "2026-03-11T10:59:00.000000Z",
        previously_billed_at: "2026-03-11T11:00:00.000000Z",
        next_billed_at: "2026-04-11T11:00:00.000000Z",
        price: paddlePrice(),
        product: { id: "pro_01gsz4t5hdjse780zja8vvr7jg", name: "Pro" },
      },
    ],
    custom_data: null,
    management_urls: { update_payment_method: null, cancel: "https://example.com/cancel" },
    discount: null,
    import_meta: null,
    ...overrides,
  };
}

/** Paddle's documented signature: `ts=<unix>;h1=<hex HMAC-SHA256 of "ts:body">`. */
export function signPaddle(payload: string, secret: string, ts: number): string {
  const h1 = createHmac("sha256", secret).update(`${ts}:${payload}`).digest("hex");
  return `ts=${ts};h1=${h1}`;
}

// ---- Lemon Squeezy ----

export function lemonEvent(
  eventName: string,
  type: string,
  id: string,
  attributes: Obj,
  custom?: Obj,
): Obj {
  return {
    meta: {
      test_mode: true,
      event_name: eventName,
      webhook_id: "9d1e7b5b-6a1c-4b8e-9d5e-3c2f1a0b9e8d",
      ...(custom ? { custom_data: custom } : {}),
    },
    data: {
      type,
      id,
      attributes,
      relationships: {},
      links: { self: `https://api.lemonsqueezy.com/v1/${type}/${id}` },
    },
  };
}

export function lemonOrder(overrides: Obj = {}): Obj {
  return {
    store_id: 1,
    customer_id: 7,
    identifier: "104e18a2-d755-4d4b-80c4-a6c1dcbe1c10",
    order_number: 1001,
    user_name: "Lin Lemon",
    user_email: "lin@example.com",
    currency: "EUR",
    currency_rate: "1.08",
    subtotal: 999,
    setup_fee: 0,
    discount_total: 0,
    tax: 200,
    total: 1199,
    subtotal_usd: 1079,
    discount_total_usd: 0,
    tax_usd: 216,
    total_usd: 1295,
    tax_name: "VAT",
    tax_rate: "20.00",
    tax_inclusive: false,
    status: "paid",
    status_formatted: "Paid",
    refunded: false,
    refunded_at: null,
    refunded_amount: 0,
    refunded_amount_usd: 0,
    subtotal_formatted: "€9.99",
    total_formatted: "€11.99",
    first_order_item: {
      id: 1,
      order_id: 1,
      product_id: 1,
      variant_id: 1,
      product_name: "Pro",
      variant_name: "Monthly",
      price: 999,
    },
    urls: { receipt: "https://app.lemonsqueezy.com/my-orders/104e18a2" },
    created_at: "2026-03-11T11:00:00.000000Z",
    updated_at: "2026-03-11T11:00:00.000000Z",
    ...overrides,
  };
}

export function lemonSubscription(overrides: Obj = {}): Obj {
  return {
    store_id: 1,
    customer_id: 7,
    order_id: 1,
    order_item_id: 1,
    product_id: 1,
    variant_id: 1,
    product_name: "Pro",
    variant_name: "Monthly",
    user_name: "Lin Lemon",
    user_email: "lin@example.com",
    status: "active",
    status_formatted: "Active",
    card_brand: "visa",
    card_last_four: "4242",
    pause: null,
    cancelled: false,
    trial_ends_at: null,
    billing_anchor: 11,
    first_subscription_item: { id: 1, subscription_id: 1, price_id: 1, quantity: 1 },
    urls: {
      update_payment_method: "https://example.com/update",
      customer_portal: "https://example.com/portal",
    },
    renews_at: "2026-04-11T11:00:00.000000Z",
    ends_at: null,
    created_at: "2026-03-11T11:00:00.000000Z",
    updated_at: "2026-03-11T11:00:00.000000Z",
    test_mode: true,
    ...overrides,
  };
}

export function lemonInvoice(overrides: Obj = {}): Obj {
  return {
    store_id: 1,
    subscription_id: 1,
    customer_id: 7,
    user_name: "Lin Lemon",
    user_email: "lin@example.com",
    billing_reason: "renewal",
    card_brand: "visa",
    card_last_four: "4242",
    currency: "EUR",
    currency_rate: "1.08",
    status: "paid",
    status_formatted: "Paid",
    refunded: false,
    refunded_at: null,
    subtotal: 999,
    discount_total: 0,
    tax: 200,
    total: 1199,
    created_at: "2026-04-11T11:00:00.000000Z",
    updated_at: "2026-04-11T11:00:00.000000Z",
    test_mode: true,
    ...overrides,
  };
}

/** Lemon Squeezy's documented signature: hex HMAC-SHA256 of the raw body. */
export function signLemon(payload: string, secret: string): string {
  return createHmac("sha256", secret).update(payload).digest("hex");
}

// ---- Polar ----

export function polarEvent(type: string, data: Obj, timestamp: string): Obj {
  return { type, timestamp, data };
}

export function polarCustomer(overrides: Obj = {}): Obj {
  return {
    id: "992fae2a-2a17-4b7a-8d9e-e287cf90131b",
    created_at: "2026-03-01T10:00:00Z",
    modified_at: "2026-03-01T10:00:00Z",
    metadata: {},
    external_id: null,
    email: "pola@example.com",
    email_verified: true,
    name: "Pola Polar",
    billing_address: {
      line1: null,
      line2: null,
      postal_code: null,
      city: null,
      state: null,
      country: "DE",
    },
    tax_id: null,
    organization_id: "1dbfc517-0bbf-4301-9ba8-555ca42b9737",
    deleted_at: null,
    ...overrides,
  };
}

export function polarOrder(overrides: Obj = {}): Obj {
  return {
    id: "57107b74-8400-4d80-a2fc-54c2b4239cb3",
    created_at: "2026-03-11T11:00:00Z",
    modified_at: "2026-03-11T11:00:01Z",
    status: "paid",
    paid: true,
    subtotal_amount: 2000,
    discount_amount: 0,
    net_amount: 2000,
    tax_amount: 380,
    total_amount: 2380,
    refunded_amount: 0,
    refunded_tax_amount: 0,
    currency: "eur",
    billing_reason: "subscription_create",
    billing_address: { country: "DE" },
    customer_id: "992fae2a-2a17-4b7a-8d9e-e287cf90131b",
    product_id: "d8dd2de1-21b7-4a41-8bc3-ce909c0cfe23",
    discount_id: null,
    subscription_id: "e5149aae-e521-42b9-b24c-abb3d71eea2e",
    checkout_id: "e4b478fa-cd25-4253-9f1f-8a41e6370ede",
    metadata: { ingest_visitor_id: "v_polar_1" },
    custom_field_data: {},
    customer: polarCustomer(),
    product: { id: "d8dd2de1-21b7-4a41-8bc3-ce909c0cfe23", name: "Polar Pro", is_recurring: true },
    discount: null,
    subscription: null,
    items: [{ label: "Polar Pro", amount: 2000, tax_amount: 380, proration: false }],
    ...overrides,
  };
}

export function polarSubscription(overrides: Obj = {}): Obj {
  return {
    id: "e5149aae-e521-42b9-b24c-abb3d71eea2e",
    created_at: "2026-03-11T11:00:00Z",
    modified_at: "2026-03-11T11:00:02Z",
    amount: 2000,
    currency: "eur",
    recurring_interval: "month",
    status: "active",
    current_period_start: "2026-03-11T11:00:00Z",
    current_period_end: "2026-04-11T11:00:00Z",
    cancel_at_period_end: false,
    canceled_at: null,
    started_at: "2026-03-11T11:00:00Z",
    ends_at: null,
    ended_at: null,
    customer_id: "992fae2a-2a17-4b7a-8d9e-e287cf90131b",
    product_id: "d8dd2de1-21b7-4a41-8bc3-ce909c0cfe23",
    discount_id: null,
    checkout_id: "e4b478fa-cd25-4253-9f1f-8a41e6370ede",
    metadata: {},
    customer: polarCustomer(),
    product: { id: "d8dd2de1-21b7-4a41-8bc3-ce909c0cfe23", name: "Polar Pro", is_recurring: true },
    prices: [],
    ...overrides,
  };
}

export function polarRefund(orderId: string, overrides: Obj = {}): Obj {
  return {
    id: "8b4c1d3e-5f6a-4b7c-9d8e-0f1a2b3c4d5e",
    created_at: "2026-03-12T09:00:00Z",
    modified_at: "2026-03-12T09:00:00Z",
    metadata: {},
    status: "succeeded",
    reason: "customer_request",
    amount: 1000,
    tax_amount: 190,
    currency: "eur",
    organization_id: "1dbfc517-0bbf-4301-9ba8-555ca42b9737",
    order_id: orderId,
    subscription_id: null,
    customer_id: "992fae2a-2a17-4b7a-8d9e-e287cf90131b",
    revoke_benefits: false,
    ...overrides,
  };
}

/**
 * Polar's signature with Standard Webhooks' own `sign`, the key being the
 * secret's bytes as Polar's SDK passes it (base64 of its UTF-8).
 */
export function signPolar(payload: string, secret: string, msgId: string, tsSeconds: number) {
  const wh = new Webhook(Buffer.from(secret, "utf8").toString("base64"));
  return {
    "webhook-id": msgId,
    "webhook-timestamp": String(tsSeconds),
    "webhook-signature": wh.sign(msgId, new Date(tsSeconds * 1000), payload),
  };
}
