/**
 * The domain's vocabulary: the words the API, the domain and every store
 * share. Stores depend on it; it depends on nothing.
 */

export type { Plan } from "./plans.js";

export type Role = "owner" | "admin" | "member";
export type Scope = "events" | "payments";

/** How a customer is linked to a visitor, strongest first. */
export type LinkKind = "user_id" | "visitor_id" | "customer";

export type PaymentKind = "charge" | "refund" | "chargeback";
export type PaymentStatus = "succeeded" | "pending" | "failed";
export type SubscriptionInterval = "day" | "week" | "month" | "year";
export type SubscriptionStatus =
  | "active"
  | "trialing"
  | "past_due"
  | "paused"
  | "canceled"
  | "ended";
