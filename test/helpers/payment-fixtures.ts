/**
 * Shared payment bodies and the spec's message table, for the unit and
 * integration tests. The messages are written out here verbatim (not
 * imported from the implementation) so the tests check the spec itself.
 */

/** A valid Payment body with every field, as the REST door receives it. */
export function fullPayment(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    payment_id: "pay_001",
    customer: {
      id: "cus_001",
      email: "Ada@Example.COM",
      user_id: "user-42",
      name: "Ada Lovelace",
      country: "GB",
      visitor_id: "v_abc123",
      metadata: { tier: "gold" },
    },
    amount: 29.99,
    currency: "USD",
    fee: 1.17,
    kind: "charge",
    paid_at: "2024-01-15T10:30:00Z",
    status: "succeeded",
    metadata: { order: "A-1", source: "stripe" },
    subscription: {
      id: "sub_001",
      plan: "pro",
      interval: "month",
      status: "active",
      amount: 29.99,
      started_at: "2024-01-15T10:30:00Z",
      current_period_end: "2024-02-15T10:30:00Z",
    },
    ...overrides,
  };
}

/**
 * What `fullPayment()`'s customer and subscription become once validated
 * (camelCase, e-mail in lower case, amounts in minor units, times in ms):
 * the same at every layer that keeps them, the domain's and the stores'.
 */
export const FULL_PAYMENT_CUSTOMER = {
  email: "ada@example.com",
  userId: "user-42",
  name: "Ada Lovelace",
  country: "GB",
  visitorId: "v_abc123",
  metadata: { tier: "gold" },
} as const;
export const FULL_PAYMENT_SUBSCRIPTION = {
  plan: "pro",
  interval: "month",
  status: "active",
  amountMinor: 2999,
  startedAt: Date.UTC(2024, 0, 15, 10, 30),
  currentPeriodEnd: Date.UTC(2024, 1, 15, 10, 30),
} as const;

/** The smallest valid Payment body. */
export function minimalPayment(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    payment_id: "pay_min",
    customer: { id: "cus_min" },
    amount: 10,
    currency: "USD",
    kind: "charge",
    paid_at: "2024-01-15T10:30:00Z",
    ...overrides,
  };
}

/** `body` with the value at a dotted path replaced, or removed when `value` is undefined. */
export function withField(
  body: Record<string, unknown>,
  path: string,
  value: unknown,
): Record<string, unknown> {
  const copy = structuredClone(body);
  const keys = path.split(".");
  const last = keys.pop() as string;
  let target = copy;
  for (const k of keys) {
    target[k] = (target[k] as Record<string, unknown> | undefined) ?? {};
    target = target[k] as Record<string, unknown>;
  }
  if (value === undefined) delete target[last];
  else target[last] = value;
  return copy;
}

const ID_MESSAGE = "required, 1-128 chars of [A-Za-z0-9_-:.]";

/**
 * One row per line of the spec's message table: the field, an invalid value
 * (undefined: the field is left out) and the verbatim message.
 */
export const MESSAGE_TABLE: { field: string; value: unknown; message: string; note: string }[] = [
  { field: "payment_id", value: undefined, message: ID_MESSAGE, note: "missing" },
  { field: "payment_id", value: "", message: ID_MESSAGE, note: "empty" },
  { field: "payment_id", value: "a".repeat(129), message: ID_MESSAGE, note: "129 chars" },
  { field: "payment_id", value: "pay 001", message: ID_MESSAGE, note: "space" },
  { field: "payment_id", value: "pay/001", message: ID_MESSAGE, note: "slash" },
  { field: "payment_id", value: "pé", message: ID_MESSAGE, note: "non-ASCII letter" },
  { field: "customer.id", value: undefined, message: ID_MESSAGE, note: "missing" },
  { field: "customer.id", value: "", message: ID_MESSAGE, note: "empty" },
  { field: "customer.id", value: "c".repeat(129), message: ID_MESSAGE, note: "129 chars" },
  { field: "customer.id", value: "cus#1", message: ID_MESSAGE, note: "hash sign" },
  {
    field: "customer.email",
    value: "ada.example.com",
    message: "must be an email address",
    note: "no @",
  },
  { field: "customer.email", value: "", message: "must be an email address", note: "empty" },
  {
    field: "customer.email",
    value: "ada@",
    message: "must be an email address",
    note: "no domain",
  },
  {
    field: "customer.email",
    value: "ada @x.io",
    message: "must be an email address",
    note: "space",
  },
  {
    field: "customer.country",
    value: "USA",
    message: "must be ISO 3166-1 alpha-2",
    note: "alpha-3",
  },
  {
    field: "customer.country",
    value: "XK",
    message: "must be ISO 3166-1 alpha-2",
    note: "user-assigned",
  },
  {
    field: "customer.country",
    value: "UK",
    message: "must be ISO 3166-1 alpha-2",
    note: "reserved",
  },
  {
    field: "customer.country",
    value: "gb",
    message: "must be ISO 3166-1 alpha-2",
    note: "lower case",
  },
  { field: "amount", value: undefined, message: "must be greater than 0", note: "missing" },
  { field: "amount", value: 0, message: "must be greater than 0", note: "zero" },
  { field: "amount", value: -5, message: "must be greater than 0", note: "negative" },
  { field: "fee", value: -0.01, message: "must not be negative", note: "negative" },
  {
    field: "currency",
    value: undefined,
    message: "must be a 3-letter ISO 4217 code",
    note: "missing",
  },
  {
    field: "currency",
    value: "usd",
    message: "must be a 3-letter ISO 4217 code",
    note: "lower case",
  },
  {
    field: "currency",
    value: "ABC",
    message: "must be a 3-letter ISO 4217 code",
    note: "not assigned",
  },
  {
    field: "currency",
    value: "US",
    message: "must be a 3-letter ISO 4217 code",
    note: "2 letters",
  },
  {
    field: "kind",
    value: undefined,
    message: "must be one of charge, refund, chargeback",
    note: "missing",
  },
  {
    field: "kind",
    value: "payment",
    message: "must be one of charge, refund, chargeback",
    note: "unknown",
  },
  {
    field: "kind",
    value: "Charge",
    message: "must be one of charge, refund, chargeback",
    note: "case",
  },
  {
    field: "paid_at",
    value: undefined,
    message: "must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
    note: "missing",
  },
  {
    field: "paid_at",
    value: "2024-01-15",
    message: "must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
    note: "date alone",
  },
  {
    field: "paid_at",
    value: "2024-01-15T10:30:00",
    message: "must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
    note: "no offset",
  },
  {
    field: "status",
    value: "refunded",
    message: "must be one of succeeded, pending, failed",
    note: "unknown",
  },
  {
    field: "status",
    value: "",
    message: "must be one of succeeded, pending, failed",
    note: "empty",
  },
  {
    field: "subscription.id",
    value: undefined,
    message: "required when subscription is set",
    note: "missing",
  },
  {
    field: "subscription.id",
    value: "",
    message: "required when subscription is set",
    note: "empty",
  },
  {
    field: "subscription.interval",
    value: "monthly",
    message: "must be one of day, week, month, year",
    note: "unknown",
  },
  {
    field: "subscription.status",
    value: "expired",
    message: "must be one of active, trialing, past_due, paused, canceled, ended",
    note: "unknown",
  },
  { field: "subscription.amount", value: -1, message: "must not be negative", note: "negative" },
  {
    field: "subscription.started_at",
    value: "yesterday",
    message: "must be RFC 3339",
    note: "prose",
  },
  {
    field: "subscription.current_period_end",
    value: "2024-02-15",
    message: "must be RFC 3339",
    note: "date alone",
  },
  {
    field: "subscription.canceled_at",
    value: "2024-02-15T10:30:00",
    message: "must be RFC 3339",
    note: "no offset",
  },
  {
    field: "subscription.ended_at",
    value: "2024-02-30T10:30:00Z",
    message: "must be RFC 3339",
    note: "no such day",
  },
];
