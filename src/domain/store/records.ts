/**
 * The records the domain reads from and writes to its store. Times are Unix
 * milliseconds. Money is integer minor units. Optional fields are
 * `undefined` when unknown; adapters never store `undefined`.
 */

import type {
  LinkKind,
  PaymentKind,
  PaymentStatus,
  Plan,
  Scope,
  SubscriptionInterval,
  SubscriptionStatus,
} from "../vocabulary.js";
import type { EventRecord } from "./event-fields.js";
import type { VisitorStitch } from "./persistent-visitors-port.js";

export interface AccountRecord {
  id: string;
  name: string;
  plan: Plan;
  createdAt: number;
}

export interface UserRecord {
  id: string;
  /** Lower case. Unique across users. */
  email: string;
  createdAt: number;
}

export interface SiteRecord {
  id: string;
  accountId: string;
  /** Lower-case host names, e.g. `example.com`, `www.example.com`. */
  hostnames: string[];
  createdAt: number;
  /** IANA time zone the site's days are read in (analytics queries); UTC when absent. */
  timeZone?: string;
}

export interface ApiKeyRecord {
  id: string;
  siteId: string;
  name: string;
  scopes: Scope[];
  /** SHA-256 hex of the whole key; unique. The key itself is never stored. */
  hash: string;
  /** First characters of the key, for display. */
  prefix: string;
  createdBy: string;
  createdAt: number;
  lastUsedAt?: number;
}

/** A key found by its hash, with what authentication needs to know about its site. */
export interface KeyPrincipal extends ApiKeyRecord {
  accountId: string;
}

/** One enriched event as stored: declared once, as a table (event-fields.ts). */
export type { EventRecord } from "./event-fields.js";

/** A link from a visitor to the caller's user id, made by a `$identify` event. */
export interface IdentityLink {
  siteId: string;
  visitorId: string;
  userId: string;
  ts: number;
}

/**
 * A visit that may be a visitor's first touch: a pageview with its
 * classified channel. `internal` marks a pageview whose referrer is the
 * site itself (the visit's real landing was not recorded).
 */
export interface VisitorTouch {
  siteId: string;
  visitorId: string;
  ts: number;
  internal: boolean;
  channel: string;
  source?: string;
  medium?: string;
  campaign?: string;
  landingPage: string;
}

/** The events of one accepted request, written together or not at all. */
export interface EventGroup {
  accountId: string;
  /** Quota period, `YYYY-MM`. */
  month: string;
  /** The plan's ceiling for the month. */
  ceiling: number;
  /** Events that count toward the quota (stored, non-`$identify`). */
  countable: number;
  events: EventRecord[];
  links: IdentityLink[];
  /**
   * Candidate first touches. A visitor keeps the best one seen: a
   * non-internal touch beats an internal one, then the earlier wins.
   */
  touches?: VisitorTouch[];
  /** Daily ids joined to persistent ids by this group's events with a `vid`. */
  stitches?: VisitorStitch[];
}

export type EventGroupResult =
  | {
      ok: true;
      remaining: number;
      /** Visitors whose first touch this group set or improved. */
      firstTouches?: string[];
    }
  | { ok: false; reason: "quota_exceeded"; remaining: number }
  /**
   * Nothing of this group was written (its quota is given back), while other
   * groups of the batch may have been: a StoreUnavailableError (retry) or a
   * StoreFailureError (refused). Adapters that write a batch all or nothing
   * (SQLite) throw instead.
   */
  | { ok: false; reason: "failed"; error: Error };

/** A visitor linked to a customer, remembered so later payments keep the link. */
export interface CustomerVisitorLink {
  visitorId: string;
  via: LinkKind;
  linkedAt: number;
}

/** The first touch credited to a customer's payments. */
export interface Attribution {
  channel: string;
  source?: string;
  medium?: string;
  campaign?: string;
  landingPage: string;
  visitorId: string;
  /** Which link found the visitor. */
  via: LinkKind;
  /** When the touch happened. */
  touchedAt: number;
}

/** Succeeded payments of one channel and currency, in minor units. */
export interface RevenueRow {
  /** The channel, or `unattributed`. */
  channel: string;
  currency: string;
  /** Sums are bigint: many payments can pass 2^53 minor units. */
  grossMinor: bigint;
  refundsMinor: bigint;
  chargebacksMinor: bigint;
  payments: number;
  /** Distinct customers with a succeeded charge. */
  payingCustomers: number;
}

/** Recurring amounts of subscriptions of one currency and interval. */
export interface MrrRow {
  currency: string;
  interval: SubscriptionInterval;
  /** Sum of the per-interval amounts. */
  amountMinor: bigint;
  subscriptions: number;
}

export interface PaymentRecord {
  siteId: string;
  paymentId: string;
  customerId: string;
  currency: string;
  amountMinor: number;
  feeMinor?: number;
  kind: PaymentKind;
  status: PaymentStatus;
  paidAt: number;
  metadata: Record<string, string>;
  subscriptionId?: string;
  /** Set on first insert and kept on updates. */
  createdAt: number;
  updatedAt: number;
  /**
   * The first touch this payment is credited to; undefined when
   * unattributed. Written by `setAttribution`, never by `commitPayments`.
   */
  attribution?: Attribution;
  /**
   * The channel revenue reports count the payment under when its customer
   * was erased: the attribution's details (visitor, landing page, time) are
   * gone, its channel stays. Undefined otherwise.
   */
  erasedChannel?: string;
}

/**
 * What a payment says about its customer. Absent fields leave stored values
 * as they are; present ones replace them (metadata as a whole).
 */
export interface CustomerPatch {
  siteId: string;
  customerId: string;
  email?: string;
  userId?: string;
  name?: string;
  country?: string;
  visitorId?: string;
  metadata?: Record<string, string>;
  at: number;
}

export interface CustomerRecord {
  siteId: string;
  customerId: string;
  email?: string;
  userId?: string;
  name?: string;
  country?: string;
  visitorId?: string;
  metadata: Record<string, string>;
  createdAt: number;
  updatedAt: number;
  /** The customer's first touch; undefined when unattributed. */
  attribution?: Attribution;
}

/**
 * What a payment says about its subscription. Absent fields keep stored
 * values; `currency` (the unit of `amountMinor`) changes only together with
 * an amount; on first insert `status` defaults to `active` and `startedAt` to the
 * payment's paid_at (the caller fills `defaults`).
 */
export interface SubscriptionPatch {
  siteId: string;
  subscriptionId: string;
  customerId: string;
  currency: string;
  plan?: string;
  interval?: SubscriptionInterval;
  status?: SubscriptionStatus;
  amountMinor?: number;
  startedAt?: number;
  currentPeriodEnd?: number;
  canceledAt?: number;
  endedAt?: number;
  defaults: { status: SubscriptionStatus; startedAt: number };
  at: number;
}

export interface SubscriptionRecord {
  siteId: string;
  subscriptionId: string;
  customerId: string;
  currency: string;
  plan?: string;
  interval?: SubscriptionInterval;
  status: SubscriptionStatus;
  amountMinor?: number;
  startedAt: number;
  currentPeriodEnd?: number;
  canceledAt?: number;
  endedAt?: number;
  createdAt: number;
  updatedAt: number;
}

/** One validated payment request: the payment with its customer and subscription. */
export interface PaymentWrite {
  payment: PaymentRecord;
  customer: CustomerPatch;
  subscription?: SubscriptionPatch;
}
