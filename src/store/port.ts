/**
 * The store port: what the service needs from a database, in the domain's
 * words. Two adapters implement it: SQLite (embedded default) and MongoDB
 * (production). Both pass the contract suite in test/store/.
 *
 * Times are Unix milliseconds. Money is integer minor units. Optional fields
 * are `undefined` when unknown; the adapters never store `undefined`.
 */
import type { Plan } from "../domain/plans.js";

export type Role = "owner" | "admin" | "member";
export type Scope = "events" | "payments";

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

/** One enriched event as stored. */
export interface EventRecord {
  siteId: string;
  name: string;
  url: string;
  referrer?: string;
  title?: string;
  width?: number;
  language?: string;
  props?: Record<string, unknown>;
  ts: number;
  receivedAt: number;
  visitorId: string;
  /** The uid of a `$identify` event. */
  userId?: string;
  country?: string;
  browser?: string;
  os?: string;
  device?: string;
  referrerHost?: string;
  utmSource?: string;
  utmMedium?: string;
  utmCampaign?: string;
  utmTerm?: string;
  utmContent?: string;
  clickIds?: Record<string, string>;
}

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
}

export type EventGroupResult =
  | {
      ok: true;
      remaining: number;
      /** Visitors whose first touch this group set or improved. */
      firstTouches?: string[];
    }
  | { ok: false; reason: "quota_exceeded"; remaining: number };

/** How a customer is linked to a visitor, strongest first. */
export type LinkKind = "user_id" | "visitor_id" | "customer";

/** Link kinds, strongest first: the index is the rank (lower is stronger). */
export const LINK_KINDS: readonly LinkKind[] = ["user_id", "visitor_id", "customer"];

/** The rank of a link kind: lower is stronger. */
export function linkRank(kind: LinkKind): number {
  return LINK_KINDS.indexOf(kind);
}

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

/** The accounts, users, sites and keys part of the port (one file per part in each adapter). */
export type StoreAccountsPart = Pick<
  Store,
  | "createAccount"
  | "getAccount"
  | "setPlan"
  | "ensureUser"
  | "setMembership"
  | "getRole"
  | "createSite"
  | "getSite"
  | "insertKey"
  | "findKeyByHash"
  | "getKey"
  | "listKeys"
  | "deleteKey"
  | "touchKey"
  | "directoryVersion"
>;

/** The events, identities, salts and quota part of the port. */
export type StoreEventsPart = Pick<
  Store,
  "getUsage" | "commitEvents" | "listEvents" | "findVisitorsByUser" | "ensureSalt" | "pruneSalts"
>;

/** The payments, customers and subscriptions part of the port. */
export type StorePaymentsPart = Pick<
  Store,
  "commitPayments" | "getPayment" | "getCustomer" | "getSubscription"
>;

/** The attribution and reports part of the port. */
export type StoreAttributionPart = Pick<
  Store,
  | "getFirstTouches"
  | "linkCustomerVisitors"
  | "getCustomerVisitors"
  | "findCustomersToReattribute"
  | "setAttribution"
  | "revenueByChannel"
  | "mrrTotals"
>;

/** The store port. Every method may reject when the database is unreachable. */
export interface Store {
  /** Which adapter this is, for logs and /readyz. */
  readonly kind: "sqlite" | "mongodb";

  /** Resolves when the database answers. */
  ping(): Promise<void>;
  /** Closes the database after pending writes. Idempotent. */
  close(): Promise<void>;

  // Accounts, users, sites and keys.
  createAccount(account: AccountRecord): Promise<void>;
  getAccount(accountId: string): Promise<AccountRecord | undefined>;
  /** Returns false when the account does not exist. */
  setPlan(accountId: string, plan: Plan): Promise<boolean>;
  /** Returns the user with this email, creating `candidate` when there is none. */
  ensureUser(candidate: UserRecord): Promise<UserRecord>;
  /** Adds or changes a membership. */
  setMembership(accountId: string, userId: string, role: Role): Promise<void>;
  getRole(accountId: string, userId: string): Promise<Role | undefined>;
  createSite(site: SiteRecord): Promise<void>;
  getSite(siteId: string): Promise<SiteRecord | undefined>;
  insertKey(key: ApiKeyRecord): Promise<void>;
  /** Looks a key up by its hash, in the database (callers cache against `directoryVersion`). */
  findKeyByHash(hash: string): Promise<KeyPrincipal | undefined>;
  getKey(keyId: string): Promise<ApiKeyRecord | undefined>;
  listKeys(siteId: string): Promise<ApiKeyRecord[]>;
  /** Returns false when there was no such key. */
  deleteKey(keyId: string): Promise<boolean>;
  /** Records a use of the key (callers throttle this). */
  touchKey(keyId: string, at: number): Promise<void>;
  /**
   * A number that changes, in every process's view, once any account, site
   * or key is created, changed or deleted (a key's last use does not count),
   * before the call that changed it returns. One small read: lookups of
   * those records are cached against it (src/store/directory-cache.ts).
   */
  directoryVersion(): Promise<number>;

  // Events and quota.
  /** Counted events of an account in a month. */
  getUsage(accountId: string, month: string): Promise<number>;
  /**
   * Writes groups of events durably in one batch. For each group, in order,
   * the quota counter of (account, month) is raised by `countable` only when
   * it stays at or under `ceiling`; otherwise nothing of that group is
   * written. The counter can never pass the ceiling, whatever runs at once.
   */
  commitEvents(groups: EventGroup[]): Promise<EventGroupResult[]>;
  /** A site's most recent events, newest first. */
  listEvents(siteId: string, limit: number): Promise<EventRecord[]>;
  /** The visitor ids that `$identify` linked to a user id on a site. */
  findVisitorsByUser(siteId: string, userId: string): Promise<IdentityLink[]>;
  /**
   * The visitor-hash salt of a UTC day (`YYYY-MM-DD`): stores `candidate` when
   * the day has none yet and returns the salt every process will use.
   */
  ensureSalt(day: string, candidate: string): Promise<string>;
  /** Deletes the salts of days before `day`: once gone, their visitor ids cannot be recomputed. */
  pruneSalts(day: string): Promise<void>;

  // Payments.
  /**
   * Upserts payments with their customers and subscriptions, durably, in one
   * batch. A payment is unique per (site, payment id): re-sending replaces
   * its fields (keeping createdAt); concurrent sends never make two.
   */
  commitPayments(writes: PaymentWrite[]): Promise<void>;
  getPayment(siteId: string, paymentId: string): Promise<PaymentRecord | undefined>;
  getCustomer(siteId: string, customerId: string): Promise<CustomerRecord | undefined>;
  getSubscription(siteId: string, subscriptionId: string): Promise<SubscriptionRecord | undefined>;

  // Attribution and reports.
  /** The first touches of these visitors (those that have one), earliest first. */
  getFirstTouches(siteId: string, visitorIds: string[]): Promise<VisitorTouch[]>;
  /**
   * Remembers links from a customer to visitors. A link already known keeps
   * its earliest `linkedAt` and the strongest `via`.
   */
  linkCustomerVisitors(
    siteId: string,
    customerId: string,
    links: CustomerVisitorLink[],
  ): Promise<void>;
  getCustomerVisitors(siteId: string, customerId: string): Promise<CustomerVisitorLink[]>;
  /** Customers linked to any of these visitors, or whose user_id is one of `userIds`. */
  findCustomersToReattribute(
    siteId: string,
    query: { visitorIds: string[]; userIds: string[] },
  ): Promise<string[]>;
  /**
   * Sets the attribution of a customer and of all its payments (undefined:
   * unattributed). Idempotent.
   */
  setAttribution(
    siteId: string,
    customerId: string,
    attribution: Attribution | undefined,
  ): Promise<void>;
  /** Succeeded payments with paid_at in [from, to), by channel and currency. */
  revenueByChannel(siteId: string, from: number, to: number): Promise<RevenueRow[]>;
  /**
   * Subscriptions with an amount and an interval that are `active` or
   * `past_due`, started at or before `at` and not ended by then, summed by
   * currency and interval.
   */
  mrrTotals(siteId: string, at: number): Promise<MrrRow[]>;
}
