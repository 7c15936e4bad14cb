/**
 * Document shapes of the MongoDB adapter and the conversions between them and
 * the port's records.
 *
 * Conventions (see docs/mongodb.md):
 * - Field names are snake_case, like the SQLite columns, so both schemas read alike.
 * - Times are BSON dates (millisecond precision, like the port's Unix ms).
 * - Money is BSON long (integer minor units); never a double.
 * - Optional fields are absent, never null or undefined.
 * - String maps whose keys come from callers (metadata, click ids) are stored
 *   as arrays of `{k, v}` pairs: any key is safe (`$`-prefixed and dotted keys
 *   are not valid in update operators) and the pairs can be indexed.
 */
import { type Binary, Long, type ObjectId } from "mongodb";
import type { Plan } from "../../domain/plans.js";
import type { StoredEventFields } from "../../domain/store/event-fields.js";
import type {
  Attribution,
  LinkKind,
  PaymentKind,
  PaymentStatus,
  Role,
  Scope,
  SubscriptionInterval,
  SubscriptionStatus,
} from "../port.js";

/** One entry of a string map stored as a pair. */
export interface Pair {
  k: string;
  v: string;
}

export interface AccountDoc {
  _id: string;
  name: string;
  plan: Plan;
  created_at: Date;
}

export interface UserDoc {
  _id: string;
  email: string;
  created_at: Date;
}

export interface MembershipDoc {
  _id?: ObjectId;
  account_id: string;
  user_id: string;
  role: Role;
}

export interface SiteDoc {
  _id: string;
  account_id: string;
  hostnames: string[];
  created_at: Date;
  /** Days of raw events kept; absent: kept forever. */
  events_retention_days?: number;
  /** Events a minute the public collect door accepts; absent: the plan's default. */
  collect_per_minute?: number;
  /** Absent: no name. */
  name?: string;
  /** IANA time zone; absent: UTC. */
  time_zone?: string;
}

export interface ApiKeyDoc {
  _id: string;
  site_id: string;
  /** The site's account, copied at insert: sites never change account, and it saves a join on every request. */
  account_id: string;
  name: string;
  scopes: Scope[];
  hash: string;
  prefix: string;
  created_by: string;
  created_at: Date;
  last_used_at?: Date;
}

export interface QuotaDoc {
  /** `<account>:<YYYY-MM>`: one document per counter, so the conditional `$inc` is a single-document atomic write. */
  _id: string;
  account_id: string;
  month: string;
  count: number;
}

/** The one directory-version document (`_id: "version"`), raised by every account, site or key change. */
/** The first run's setup token (setup.ts): only its SHA-256. */
export interface SetupTokenDoc {
  _id: string;
  hash: string;
  created_at: Date;
  expires_at: Date;
  used_at?: Date;
}

export interface DirectoryDoc {
  _id: string;
  version: number;
}

/** One of the installation's secrets, by name (`erasure_audit`). */
export interface SettingDoc {
  _id: string;
  secret: Binary;
}

export interface SaltDoc {
  /** The UTC day, `YYYY-MM-DD`. */
  _id: string;
  salt: string;
}

/** How MongoDB stores each kind of event field (event-fields.ts). */
export interface EventDocKinds {
  text: string;
  integer: number;
  time: Date;
  /** The props object as JSON text: free-form caller JSON kept exactly. */
  json: string;
  map: Pair[];
}

/**
 * One event inside a bucket: its insertion sequence (orders `listEvents`,
 * see events.ts) and the event-field table's fields by their stored names;
 * the site is the bucket's.
 */
export type EventDoc = { q: number } & StoredEventFields<EventDocKinds>;

/** A bucket of a site's events inserted in one UTC hour. */
/** A server-side counter. */
export interface SequenceDoc {
  _id: string;
  /** The last number handed out. */
  n: number;
}

export interface EventBucketDoc {
  _id?: ObjectId;
  site_id: string;
  /** Start of the UTC hour the events were inserted in. */
  hour: Date;
  /** Number of events in `events`. */
  n: number;
  /** Lowest and highest `q` of the bucket's events. */
  min_q: number;
  max_q: number;
  events: EventDoc[];
  /**
   * Receipts: one id per request whose events this bucket holds. A unique
   * (sparse, multikey) index makes an append idempotent: run again, it fails
   * with E11000 instead of storing the events twice.
   */
  g?: ObjectId[];
  /**
   * The server's time of the bucket's last change (an append, an erasure):
   * the analytics feed reads buckets changed since its watermark by it
   * (src/store/mongo/analytics-feed.ts). Absent on buckets of earlier versions.
   */
  u?: Date;
}

/**
 * A notice for the analytics feed, written BEFORE a change it cannot see
 * from a marker: a bucket deleted (erasure, retention), a customer's links
 * or a visitor's stitches written or deleted. The feed re-reads the named
 * keys' current documents (src/store/mongo/analytics-log.ts).
 */
export interface AnalyticsNoticeDoc {
  _id?: ObjectId;
  /** The server's time of the notice. */
  at: Date;
  kind: "bucket" | "links" | "stitches";
  site_id: string;
  /** Bucket ids (hex), customer ids or visitor ids, by kind. */
  keys: string[];
}

/** The analytics owner's lease (src/store/mongo/analytics-lease.ts): one document. */
export interface AnalyticsLeaseDoc {
  _id: string;
  /** The holding process (host, pid and a random part). */
  holder: string;
  /** The server's time the holder took it. */
  acquired_at: Date;
  /** The server's time it lapses unless renewed. */
  expires_at: Date;
}

/**
 * The analytics feed's state shared by every server of a deployment
 * (src/store/mongo/analytics-feed.ts): `_id: "notices"`, how far the notice
 * log was trimmed, so that a server taking the lease over with an older file
 * of its own rebuilds it rather than miss the trimmed notices.
 */
export interface AnalyticsFeedStateDoc {
  _id: string;
  /** The notices before this time (the server's) are gone. */
  trimmed_before: Date;
}

export interface IdentityDoc {
  _id?: ObjectId;
  site_id: string;
  user_id: string;
  visitor_id: string;
  ts: Date;
}

/** A daily visitor id stitched to a persistent one: one document per (site, daily id), the first wins. */
export interface VisitorStitchDoc {
  _id?: ObjectId;
  site_id: string;
  visitor_id: string;
  persistent_id: string;
  ts: Date;
}

/** A visitor's first touch: one document per (site, visitor), replaced only by a better touch. */
export interface VisitorTouchDoc {
  _id?: ObjectId;
  site_id: string;
  visitor_id: string;
  ts: Date;
  internal: boolean;
  channel: string;
  source?: string;
  medium?: string;
  campaign?: string;
  landing_page: string;
}

/** A link from a customer to a visitor: one document per (site, customer, visitor). */
export interface CustomerVisitorDoc {
  _id?: ObjectId;
  site_id: string;
  customer_id: string;
  visitor_id: string;
  via: LinkKind;
  linked_at: Date;
}

/** The first touch credited to a customer and its payments, embedded in both. */
export interface AttributionDoc {
  channel: string;
  source?: string;
  medium?: string;
  campaign?: string;
  landing_page: string;
  visitor_id: string;
  via: LinkKind;
  touched_at: Date;
}

export interface CustomerDoc {
  _id?: ObjectId;
  site_id: string;
  customer_id: string;
  email?: string;
  user_id?: string;
  name?: string;
  country?: string;
  visitor_id?: string;
  metadata: Pair[];
  created_at: Date;
  updated_at: Date;
  /** Absent when unattributed. */
  attribution?: AttributionDoc;
  /** The attribution's rank (domain's attributionRank): a stale writer's condition. */
  attribution_rank?: string;
}

export interface SubscriptionDoc {
  _id?: ObjectId;
  site_id: string;
  subscription_id: string;
  customer_id: string;
  currency: string;
  plan?: string;
  interval?: SubscriptionInterval;
  status: SubscriptionStatus;
  amount_minor?: Long | number;
  started_at: Date;
  current_period_end?: Date;
  canceled_at?: Date;
  ended_at?: Date;
  created_at: Date;
  updated_at: Date;
}

export interface PaymentDoc {
  _id?: ObjectId;
  site_id: string;
  payment_id: string;
  customer_id: string;
  currency: string;
  amount_minor: Long | number;
  fee_minor?: Long | number;
  kind: PaymentKind;
  status: PaymentStatus;
  paid_at: Date;
  metadata: Pair[];
  subscription_id?: string;
  created_at: Date;
  updated_at: Date;
  /** Absent when unattributed. Written by setAttribution only. */
  attribution?: AttributionDoc;
  attribution_rank?: string;
  /**
   * The attribution's channel, or `unattributed`: what the revenue report
   * groups by. Set on insert and by setAttribution only; absent on payments
   * written before attribution existed (read as `unattributed`).
   */
  channel?: string;
  /** The server's time of the payment's last change (the analytics feed's marker). */
  u?: Date;
}

/** Unix ms to a BSON date. */
export function toDate(ms: number): Date {
  return new Date(ms);
}

/** An optional Unix ms to an optional BSON date. */
export function optDate(ms: number | undefined): Date | undefined {
  return ms === undefined ? undefined : new Date(ms);
}

/** An optional BSON date back to Unix ms; null (never written, but possible by hand) reads as absent. */
export function optMs(d: Date | null | undefined): number | undefined {
  return d === undefined || d === null ? undefined : d.getTime();
}

/**
 * Integer minor units to a BSON long. A fraction or an unsafe integer is a bug
 * upstream: refusing it keeps a float from ever being stored as money.
 */
export function toLong(minor: number): Long {
  if (!Number.isSafeInteger(minor)) {
    throw new RangeError(`money must be a safe integer of minor units, got ${minor}`);
  }
  return Long.fromNumber(minor);
}

/** A stored integer back to a number (the driver already promotes longs that fit). */
export function toNumber(value: Long | number): number {
  return typeof value === "number" ? value : value.toNumber();
}

/** An optional stored integer back to an optional number. */
export function optNumber(value: Long | number | null | undefined): number | undefined {
  return value === undefined || value === null ? undefined : toNumber(value);
}

/** A nullable stored value back to the port's optional. */
export function opt<T>(value: T | null | undefined): T | undefined {
  return value === null ? undefined : value;
}

/** The stored form of an attribution (no undefined fields). */
export function attributionToDoc(a: Attribution): AttributionDoc {
  return compact<AttributionDoc>({
    channel: a.channel,
    source: a.source,
    medium: a.medium,
    campaign: a.campaign,
    landing_page: a.landingPage,
    visitor_id: a.visitorId,
    via: a.via,
    touched_at: toDate(a.touchedAt),
  });
}

/** A stored attribution back to the port's; absent (or null, by hand) is unattributed. */
export function attributionFromDoc(d: AttributionDoc | null | undefined): Attribution | undefined {
  if (d === undefined || d === null) return undefined;
  return {
    channel: d.channel,
    source: opt(d.source),
    medium: opt(d.medium),
    campaign: opt(d.campaign),
    landingPage: d.landing_page,
    visitorId: d.visitor_id,
    via: d.via,
    touchedAt: d.touched_at.getTime(),
  };
}

/** A string map to pairs, keeping its order. */
export function toPairs(map: Record<string, string>): Pair[] {
  return Object.entries(map).map(([k, v]) => ({ k, v }));
}

/** Pairs back to a string map (own properties only, whatever the keys). */
export function fromPairs(pairs: readonly Pair[] | null | undefined): Record<string, string> {
  return Object.fromEntries((pairs ?? []).map((p) => [p.k, p.v]));
}

/**
 * A copy of `doc` without its undefined fields. The client also sets
 * `ignoreUndefined`, but documents are built clean so nothing depends on it.
 */
export function compact<T extends object>(doc: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(doc)) if (v !== undefined) out[k] = v;
  return out as T;
}
