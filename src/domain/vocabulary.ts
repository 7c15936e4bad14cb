/**
 * The domain's vocabulary: the words the API, the domain and every store
 * share, each list declared once. The types derive from the lists, and the
 * lists are what validation, the admin rules and the MongoDB schema's
 * `enum`s read, so a new word is added here and nowhere else. Stores depend
 * on it; it depends on nothing but the plans.
 *
 * Orders matter: LINK_KINDS is strongest first (the index is the rank), and
 * the MongoDB validators list the values in these orders (a deployed
 * validator is compared with the expected one at start).
 */

export { PLANS, type Plan } from "./plans.js";

/** Members' roles in an account. */
export const ROLES = ["owner", "admin", "member"] as const;
export type Role = (typeof ROLES)[number];

/** The roles that may create and delete API keys. */
export const KEY_MANAGERS: readonly Role[] = ["owner", "admin"];

/** What an API key may be used for. */
/** The scopes that write: each public write endpoint needs one. */
export const WRITE_SCOPES = ["events", "payments"] as const;
/**
 * Every key scope: the write scopes and `reports`, read-only access to
 * ReportsService (and the dashboard) for the key's own site. `reports` is
 * never combined with a write scope (src/domain/admin.ts).
 */
export const SCOPES = [...WRITE_SCOPES, "reports"] as const;
export type Scope = (typeof SCOPES)[number];

/** How a customer is linked to a visitor, strongest first: the index is the rank. */
export const LINK_KINDS = ["user_id", "visitor_id", "customer"] as const;
export type LinkKind = (typeof LINK_KINDS)[number];

export const PAYMENT_KINDS = ["charge", "refund", "chargeback"] as const;
export type PaymentKind = (typeof PAYMENT_KINDS)[number];

export const PAYMENT_STATUSES = ["succeeded", "pending", "failed"] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

export const SUBSCRIPTION_INTERVALS = ["day", "week", "month", "year"] as const;
export type SubscriptionInterval = (typeof SUBSCRIPTION_INTERVALS)[number];

export const SUBSCRIPTION_STATUSES = [
  "active",
  "trialing",
  "past_due",
  "paused",
  "canceled",
  "ended",
] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

/** The payment providers whose webhooks a connector receives, by the names users type. */
export const PROVIDERS = ["stripe", "paddle", "lemonsqueezy", "polar"] as const;
export type Provider = (typeof PROVIDERS)[number];

/** The subscription statuses that count towards MRR. */
export const RECURRING_STATUSES: readonly SubscriptionStatus[] = ["active", "past_due"];

/** The channel of a payment no touch is credited to (stored, reported and summed under it). */
export const UNATTRIBUTED = "unattributed";

/**
 * The landing page of the new-visitor rollup row an erased visitor's count
 * moves to (same day and channel, no source or campaign): the number of
 * new visitors stays, the strings that came from their events go.
 */
export const ERASED_LANDING_PAGE = "(erased)";

/** The longest per-site retention of raw events, in days (ten years); longer is "keep". */
export const MAX_RETENTION_DAYS = 3650;

/** Whether `value` is one of `values` (narrows it to their union). */
export function isOneOf<T extends string>(values: readonly T[], value: unknown): value is T {
  return (values as readonly unknown[]).includes(value);
}
