/**
 * Validation of the spec's Payment body (with its Customer and Subscription)
 * into a normalised payment: money in minor units, times in Unix ms, email
 * in lower case, defaults filled. Both doors hand over the same plain JSON
 * (snake_case keys), so this is the one place the field rules live.
 *
 * Every invalid field is reported at once, sorted by field path.
 */

import { type DomainError, errors } from "../errors.js";
import {
  SUBSCRIPTION_INTERVALS as INTERVALS,
  PAYMENT_KINDS as KINDS,
  isOneOf as oneOf,
  type PaymentKind,
  type PaymentStatus,
  PAYMENT_STATUSES as STATUSES,
  SUBSCRIPTION_STATUSES as SUB_STATUSES,
  type SubscriptionInterval,
  type SubscriptionStatus,
} from "../vocabulary.js";
import { isCountry } from "./iso-countries.js";
import {
  currencyExponent,
  formatMinorUnits,
  isCurrency,
  MAX_MINOR,
  toMinorUnits,
} from "./money.js";
import { parseRfc3339 } from "./rfc3339.js";

const ID_RULE = "1-128 chars of [A-Za-z0-9_-:.]";

/** The spec's message table, verbatim: one message per field rule. */
export const MESSAGES = {
  payment_id: `required, ${ID_RULE}`,
  "customer.id": `required, ${ID_RULE}`,
  "customer.email": "must be an email address",
  "customer.country": "must be ISO 3166-1 alpha-2",
  amount: "must be greater than 0",
  fee: "must not be negative",
  currency: "must be a 3-letter ISO 4217 code",
  kind: "must be one of charge, refund, chargeback",
  paid_at: "must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
  status: "must be one of succeeded, pending, failed",
  "subscription.id": "required when subscription is set",
  "subscription.interval": "must be one of day, week, month, year",
  "subscription.status": "must be one of active, trialing, past_due, paused, canceled, ended",
  "subscription.amount": "must not be negative",
  "subscription.started_at": "must be RFC 3339",
  "subscription.current_period_end": "must be RFC 3339",
  "subscription.canceled_at": "must be RFC 3339",
  "subscription.ended_at": "must be RFC 3339",
} as const;

/** Messages for rules the spec leaves to the service. */
export const EXTRA_MESSAGES = {
  /** A money field with more decimals than its currency has. */
  precision: (exponent: number, currency: string) =>
    `must have at most ${exponent} decimal places for ${currency}`,
  /** A money field whose minor units would not be exact. */
  range: (currency: string) =>
    `must be at most ${formatMinorUnits(MAX_MINOR, currency)} for ${currency}`,
  /** subscription.id that is present but malformed (the spec's message is for a missing one). */
  subscriptionIdFormat: `must be ${ID_RULE}`,
  metadata: "must be an object of string values",
  text: "must be a string",
} as const;

/** A field path as the caller wrote it, e.g. `customer.email`. */
export type PaymentField =
  | keyof typeof MESSAGES
  | "metadata"
  | "customer.metadata"
  | "customer.user_id"
  | "customer.name"
  | "customer.visitor_id"
  | "subscription.plan";

/** One invalid field and why. */
export interface FieldIssue {
  field: PaymentField;
  message: string;
}

export interface ValidCustomer {
  id: string;
  /** Lower case. */
  email?: string;
  userId?: string;
  name?: string;
  country?: string;
  visitorId?: string;
  /** Absent (or empty) means "keep what is stored". */
  metadata?: Record<string, string>;
}

export interface ValidSubscription {
  id: string;
  plan?: string;
  interval?: SubscriptionInterval;
  status?: SubscriptionStatus;
  amountMinor?: number;
  startedAt?: number;
  currentPeriodEnd?: number;
  canceledAt?: number;
  endedAt?: number;
}

/** A payment that passed every rule, normalised for the store. */
export interface ValidPayment {
  paymentId: string;
  customer: ValidCustomer;
  currency: string;
  amountMinor: number;
  feeMinor?: number;
  kind: PaymentKind;
  status: PaymentStatus;
  paidAt: number;
  metadata: Record<string, string>;
  subscription?: ValidSubscription;
}

export type PaymentValidation =
  | { ok: true; payment: ValidPayment }
  | { ok: false; issues: FieldIssue[] };

const ID = /^[A-Za-z0-9_\-:.]{1,128}$/;
// The spec only asks for an "@"; also refuse what can never be delivered to:
// an empty side, a second "@", whitespace, more than RFC 5321's 254 chars.
const EMAIL = /^[^\s@]+@[^\s@]+$/;
const EMAIL_MAX = 254;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isId(v: unknown): v is string {
  return typeof v === "string" && ID.test(v);
}

/** Plain code-unit order, as the spec's "sorted by field name" (not locale order). */
function byField(a: FieldIssue, b: FieldIssue): number {
  if (a.field < b.field) return -1;
  return a.field > b.field ? 1 : 0;
}

/**
 * Checks a Payment body. `input` is plain JSON with snake_case keys; a JSON
 * `null` or a missing key is an absent field. Values of the wrong type are
 * reported under their field's rule (the REST door has already refused them
 * with `invalid JSON: …`; the Connect door sends NaN as the string "NaN").
 */
export function validatePayment(input: Record<string, unknown>): PaymentValidation {
  const issues: FieldIssue[] = [];
  const fail = (field: PaymentField, message: string): undefined => {
    issues.push({ field, message });
    return undefined;
  };

  const paymentId = isId(input.payment_id)
    ? input.payment_id
    : fail("payment_id", MESSAGES.payment_id);

  const currency =
    typeof input.currency === "string" && isCurrency(input.currency)
      ? input.currency
      : fail("currency", MESSAGES.currency);

  /**
   * A money field in minor units. The sign rule comes first; precision and
   * range need a valid currency, so they are skipped (not guessed) without one.
   */
  const money = (field: PaymentField, value: unknown, positive: boolean, message: string) => {
    if (typeof value !== "number" || Number.isNaN(value)) return fail(field, message);
    if (positive ? !(value > 0) : value < 0) return fail(field, message);
    if (currency === undefined) return undefined;
    const r = toMinorUnits(value, currency);
    if (r.ok) return r.minor;
    if (r.reason === "precision") {
      return fail(field, EXTRA_MESSAGES.precision(currencyExponent(currency), currency));
    }
    return fail(field, EXTRA_MESSAGES.range(currency));
  };

  const amountMinor = money("amount", input.amount, true, MESSAGES.amount);
  const feeMinor =
    input.fee === undefined || input.fee === null
      ? undefined
      : money("fee", input.fee, false, MESSAGES.fee);

  const kind = oneOf(KINDS, input.kind) ? input.kind : fail("kind", MESSAGES.kind);

  const paidAt = typeof input.paid_at === "string" ? parseRfc3339(input.paid_at) : undefined;
  if (paidAt === undefined) fail("paid_at", MESSAGES.paid_at);

  let status: PaymentStatus | undefined = "succeeded";
  if (input.status !== undefined && input.status !== null) {
    status = oneOf(STATUSES, input.status) ? input.status : fail("status", MESSAGES.status);
  }

  const metadata = stringMap(input.metadata, "metadata", fail) ?? {};
  const customer = validateCustomer(input.customer, fail);
  const subscription = validateSubscription(input.subscription, fail, (field, value) =>
    money(field, value, false, MESSAGES["subscription.amount"]),
  );

  if (
    issues.length > 0 ||
    paymentId === undefined ||
    currency === undefined ||
    amountMinor === undefined ||
    kind === undefined ||
    paidAt === undefined ||
    status === undefined ||
    customer === undefined
  ) {
    return { ok: false, issues: issues.sort(byField) };
  }
  return {
    ok: true,
    payment: {
      paymentId,
      customer,
      currency,
      amountMinor,
      feeMinor,
      kind,
      status,
      paidAt,
      metadata,
      subscription,
    },
  };
}

type Fail = (field: PaymentField, message: string) => undefined;

/** An optional object of string values; `undefined` when absent or invalid. */
function stringMap(
  value: unknown,
  field: PaymentField,
  fail: Fail,
): Record<string, string> | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value) || !Object.values(value).every((v) => typeof v === "string")) {
    return fail(field, EXTRA_MESSAGES.metadata);
  }
  return { ...(value as Record<string, string>) };
}

/**
 * An optional free-text field. An empty string counts as absent, so a later
 * payment cannot erase a known value by sending "" (and both doors agree:
 * proto3 drops empty non-optional strings).
 */
function text(value: unknown, field: PaymentField, fail: Fail): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") return fail(field, EXTRA_MESSAGES.text);
  return value;
}

/** An optional RFC 3339 field in Unix ms. */
function time(
  value: unknown,
  field: PaymentField,
  message: string,
  fail: Fail,
): number | undefined {
  if (value === undefined || value === null) return undefined;
  const ms = typeof value === "string" ? parseRfc3339(value) : undefined;
  return ms === undefined ? fail(field, message) : ms;
}

function validateCustomer(value: unknown, fail: Fail): ValidCustomer | undefined {
  // A missing or non-object customer has no id: that is the rule it breaks.
  const c = isObject(value) ? value : {};
  const id = isId(c.id) ? c.id : fail("customer.id", MESSAGES["customer.id"]);

  let email: string | undefined;
  if (c.email !== undefined && c.email !== null) {
    const ok = typeof c.email === "string" && c.email.length <= EMAIL_MAX && EMAIL.test(c.email);
    email = ok
      ? (c.email as string).toLowerCase()
      : fail("customer.email", MESSAGES["customer.email"]);
  }

  let country: string | undefined;
  if (c.country !== undefined && c.country !== null) {
    country =
      typeof c.country === "string" && isCountry(c.country)
        ? c.country
        : fail("customer.country", MESSAGES["customer.country"]);
  }

  const metadata = stringMap(c.metadata, "customer.metadata", fail);
  const customer: ValidCustomer = {
    id: id ?? "",
    email,
    userId: text(c.user_id, "customer.user_id", fail),
    name: text(c.name, "customer.name", fail),
    country,
    visitorId: text(c.visitor_id, "customer.visitor_id", fail),
    // An empty map is "not sent": over Connect an empty proto map cannot be told from an absent one.
    metadata: metadata && Object.keys(metadata).length > 0 ? metadata : undefined,
  };
  return id === undefined ? undefined : customer;
}

function validateSubscription(
  value: unknown,
  fail: Fail,
  money: (field: PaymentField, value: unknown) => number | undefined,
): ValidSubscription | undefined {
  if (value === undefined || value === null) return undefined;
  const s = isObject(value) ? value : {};

  let id: string | undefined;
  if (s.id === undefined || s.id === null || s.id === "") {
    fail("subscription.id", MESSAGES["subscription.id"]);
  } else if (!isId(s.id)) {
    fail("subscription.id", EXTRA_MESSAGES.subscriptionIdFormat);
  } else {
    id = s.id;
  }

  let interval: SubscriptionInterval | undefined;
  if (s.interval !== undefined && s.interval !== null) {
    interval = oneOf(INTERVALS, s.interval)
      ? s.interval
      : fail("subscription.interval", MESSAGES["subscription.interval"]);
  }
  let status: SubscriptionStatus | undefined;
  if (s.status !== undefined && s.status !== null) {
    status = oneOf(SUB_STATUSES, s.status)
      ? s.status
      : fail("subscription.status", MESSAGES["subscription.status"]);
  }
  const amountMinor =
    s.amount === undefined || s.amount === null
      ? undefined
      : money("subscription.amount", s.amount);

  const sub: ValidSubscription = {
    id: id ?? "",
    plan: text(s.plan, "subscription.plan", fail),
    interval,
    status,
    amountMinor,
    startedAt: time(
      s.started_at,
      "subscription.started_at",
      MESSAGES["subscription.started_at"],
      fail,
    ),
    currentPeriodEnd: time(
      s.current_period_end,
      "subscription.current_period_end",
      MESSAGES["subscription.current_period_end"],
      fail,
    ),
    canceledAt: time(
      s.canceled_at,
      "subscription.canceled_at",
      MESSAGES["subscription.canceled_at"],
      fail,
    ),
    endedAt: time(s.ended_at, "subscription.ended_at", MESSAGES["subscription.ended_at"], fail),
  };
  return id === undefined ? undefined : sub;
}

/** `invalid payment input: <field>: <message>; …` for issues already sorted. */
export function formatIssues(issues: readonly FieldIssue[]): string {
  return `invalid payment input: ${issues.map((i) => `${i.field}: ${i.message}`).join("; ")}`;
}

/** The one 400 `invalid_input` error for a payment's invalid fields. */
export function invalidPaymentInput(issues: readonly FieldIssue[]): DomainError {
  return errors.invalid(formatIssues(issues));
}
