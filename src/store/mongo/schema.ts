/**
 * Collections, JSON-schema validators and indexes of the MongoDB adapter:
 * created by `admin store migrate`, verified by the server at start
 * (docs/mongodb.md explains each choice).
 */

import {
  type Collection,
  type Db,
  type Document,
  type IndexDescription,
  MongoServerError,
} from "mongodb";
import { MAX_COLLECT_PER_MINUTE } from "../../domain/collect-limits.js";
import { EVENT_FIELD_TABLE } from "../../domain/store/event-fields.js";
import {
  LINK_KINDS,
  MAX_RETENTION_DAYS,
  PAYMENT_KINDS,
  PAYMENT_STATUSES,
  PLANS,
  PROVIDERS,
  ROLES,
  SCOPES,
  SUBSCRIPTION_INTERVALS,
  SUBSCRIPTION_STATUSES,
} from "../../domain/vocabulary.js";
import type { ConnectorDoc, ConnectorEventDoc, ConnectorObjectDoc } from "./connectors.js";
import type {
  AccountDoc,
  AnalyticsFeedStateDoc,
  AnalyticsLeaseDoc,
  AnalyticsNoticeDoc,
  ApiKeyDoc,
  CustomerDoc,
  CustomerVisitorDoc,
  DirectoryDoc,
  EventBucketDoc,
  IdentityDoc,
  MembershipDoc,
  PaymentDoc,
  QuotaDoc,
  SaltDoc,
  SequenceDoc,
  SettingDoc,
  SetupTokenDoc,
  SiteDoc,
  SubscriptionDoc,
  UserDoc,
  VisitorStitchDoc,
  VisitorTouchDoc,
} from "./documents.js";
import { withTimeLimit } from "./time-limit.js";

/** A validator's `enum`: the vocabulary's list (a copy: the driver may keep what it is given). */
const oneOf = (values: readonly string[]) => ({ enum: [...values] });

const str = { bsonType: "string" };
const date = { bsonType: "date" };
/** Counters and small integers the driver writes as int32 (or long past 2^31). */
const integer = { bsonType: ["int", "long"] };
/** Money: always written as a long by the adapter, so a double is refused. */
const money = { bsonType: "long" };
const pairs = {
  bsonType: "array",
  items: {
    bsonType: "object",
    required: ["k", "v"],
    additionalProperties: false,
    properties: { k: str, v: str },
  },
};

/** The attribution embedded in customers and payments. */
const attribution = {
  bsonType: "object",
  required: ["channel", "landing_page", "visitor_id", "via", "touched_at"],
  properties: {
    channel: str,
    source: str,
    medium: str,
    campaign: str,
    landing_page: str,
    visitor_id: str,
    via: oneOf(LINK_KINDS),
    touched_at: date,
  },
};

/** A `$jsonSchema` for an object with `required` fields (extra fields stay allowed, for evolution). */
function object(required: string[], properties: Record<string, Document>): Document {
  return { bsonType: "object", required, properties };
}

interface CollectionSpec {
  name: string;
  schema: Document;
  indexes: IndexDescription[];
}

/**
 * The payment fields the revenue reads use, in the order of the index
 * site_status_paid_at_revenue after (site_id, status): paid_at first (the
 * range), then the rest, so a `$project` of these covers the read.
 */
export const REVENUE_FIELDS = {
  paid_at: 1,
  kind: 1,
  currency: 1,
  channel: 1,
  "attribution.source": 1,
  "attribution.campaign": 1,
  "attribution.landing_page": 1,
  amount_minor: 1,
  customer_id: 1,
} as const;

/** Every collection of the adapter. */
export const COLLECTIONS: readonly CollectionSpec[] = [
  {
    name: "accounts",
    schema: object(["_id", "name", "plan", "created_at"], {
      _id: str,
      name: str,
      plan: oneOf(PLANS),
      created_at: date,
    }),
    indexes: [],
  },
  {
    name: "users",
    schema: object(["_id", "email", "created_at"], { _id: str, email: str, created_at: date }),
    indexes: [{ key: { email: 1 }, name: "email_unique", unique: true }],
  },
  {
    name: "memberships",
    schema: object(["account_id", "user_id", "role"], {
      account_id: str,
      user_id: str,
      role: oneOf(ROLES),
    }),
    indexes: [{ key: { account_id: 1, user_id: 1 }, name: "account_user_unique", unique: true }],
  },
  {
    name: "sites",
    schema: object(["_id", "account_id", "hostnames", "created_at"], {
      _id: str,
      account_id: str,
      hostnames: { bsonType: "array", items: str },
      created_at: date,
      // Absent: the site keeps its raw events (src/domain/retention.ts).
      events_retention_days: {
        ...integer,
        minimum: 1,
        maximum: MAX_RETENTION_DAYS,
      },
      // Absent: the plan's default ceiling (src/domain/collect-limits.ts).
      collect_per_minute: { ...integer, minimum: 1, maximum: MAX_COLLECT_PER_MINUTE },
      // Absent: no name, and UTC (src/domain/site-settings.ts checks the zone).
      name: str,
      time_zone: str,
    }),
    indexes: [],
  },
  {
    name: "api_keys",
    schema: object(
      [
        "_id",
        "site_id",
        "account_id",
        "name",
        "scopes",
        "hash",
        "prefix",
        "created_by",
        "created_at",
      ],
      {
        _id: str,
        site_id: str,
        account_id: str,
        name: str,
        scopes: { bsonType: "array", items: oneOf(SCOPES) },
        hash: str,
        prefix: str,
        created_by: str,
        created_at: date,
        last_used_at: date,
      },
    ),
    indexes: [
      { key: { hash: 1 }, name: "hash_unique", unique: true },
      { key: { site_id: 1, created_at: 1 }, name: "site_created" },
    ],
  },
  {
    name: "quota_usage",
    schema: object(["_id", "account_id", "month", "count"], {
      _id: str,
      account_id: str,
      month: { bsonType: "string", pattern: "^[0-9]{4}-[0-9]{2}$" },
      count: { ...integer, minimum: 0 },
    }),
    indexes: [],
  },
  {
    // Server-side counters: `event_q` numbers events in insertion order.
    name: "sequences",
    schema: object(["_id", "n"], { _id: str, n: { bsonType: "number" } }),
    indexes: [],
  },
  {
    name: "events",
    // The bucket's own fields are checked in full; each event only for its
    // required fields, since every append re-validates the whole bucket.
    schema: object(["site_id", "hour", "n", "min_q", "max_q", "events"], {
      site_id: str,
      hour: date,
      n: { ...integer, minimum: 1 },
      min_q: { bsonType: "number" },
      max_q: { bsonType: "number" },
      u: date,
      events: {
        bsonType: "array",
        minItems: 1,
        items: {
          bsonType: "object",
          required: ["q", ...EVENT_FIELD_TABLE.flatMap((f) => ("required" in f ? [f.stored] : []))],
        },
      },
    }),
    indexes: [
      // Finds the hour's bucket that still has room.
      { key: { site_id: 1, hour: 1, n: 1 }, name: "site_hour_n" },
      // Reads a site's newest buckets first.
      { key: { site_id: 1, max_q: -1 }, name: "site_recent" },
      // One receipt per request, in one bucket only: makes appends
      // idempotent. Sparse: buckets of earlier versions have none.
      { key: { g: 1 }, name: "receipts_unique", unique: true, sparse: true },
      // The analytics feed: buckets changed since its watermark, in order.
      { key: { u: 1, _id: 1 }, name: "feed_u" },
    ],
  },
  {
    name: "identities",
    schema: object(["site_id", "user_id", "visitor_id", "ts"], {
      site_id: str,
      user_id: str,
      visitor_id: str,
      ts: date,
    }),
    indexes: [
      {
        key: { site_id: 1, user_id: 1, visitor_id: 1 },
        name: "site_user_visitor_unique",
        unique: true,
      },
    ],
  },
  {
    name: "salts",
    schema: object(["_id", "salt"], {
      _id: { bsonType: "string", pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$" },
      salt: str,
    }),
    indexes: [],
  },
  {
    name: "customers",
    schema: object(["site_id", "customer_id", "metadata", "created_at", "updated_at"], {
      site_id: str,
      customer_id: str,
      email: str,
      user_id: str,
      name: str,
      country: str,
      visitor_id: str,
      metadata: pairs,
      created_at: date,
      updated_at: date,
      attribution,
    }),
    indexes: [
      { key: { site_id: 1, customer_id: 1 }, name: "site_customer_unique", unique: true },
      { key: { site_id: 1, user_id: 1 }, name: "site_user" },
    ],
  },
  {
    name: "subscriptions",
    schema: object(
      [
        "site_id",
        "subscription_id",
        "customer_id",
        "currency",
        "status",
        "started_at",
        "created_at",
        "updated_at",
      ],
      {
        site_id: str,
        subscription_id: str,
        customer_id: str,
        currency: str,
        plan: str,
        interval: oneOf(SUBSCRIPTION_INTERVALS),
        status: oneOf(SUBSCRIPTION_STATUSES),
        amount_minor: money,
        started_at: date,
        current_period_end: date,
        canceled_at: date,
        ended_at: date,
        created_at: date,
        updated_at: date,
      },
    ),
    indexes: [
      { key: { site_id: 1, subscription_id: 1 }, name: "site_subscription_unique", unique: true },
      // mrrTotals: equality on the site, the two statuses, started_at up to a time.
      { key: { site_id: 1, status: 1, started_at: 1 }, name: "site_status_started" },
    ],
  },
  {
    name: "payments",
    schema: object(
      [
        "site_id",
        "payment_id",
        "customer_id",
        "currency",
        "amount_minor",
        "kind",
        "status",
        "paid_at",
        "metadata",
        "created_at",
        "updated_at",
      ],
      {
        site_id: str,
        payment_id: str,
        customer_id: str,
        currency: str,
        amount_minor: money,
        fee_minor: money,
        kind: oneOf(PAYMENT_KINDS),
        status: oneOf(PAYMENT_STATUSES),
        paid_at: date,
        metadata: pairs,
        subscription_id: str,
        created_at: date,
        updated_at: date,
        attribution,
        // Not required: payments written before attribution existed have none.
        channel: str,
        u: date,
      },
    ),
    indexes: [
      { key: { site_id: 1, payment_id: 1 }, name: "site_payment_unique", unique: true },
      // A customer's payments; setAttribution's updateMany.
      { key: { site_id: 1, customer_id: 1 }, name: "site_customer" },
      // pagePayments (ExportPayments): the range and the page order in one index.
      { key: { site_id: 1, paid_at: 1, payment_id: 1 }, name: "site_paid_at_payment" },
      // The analytics feed: payments changed since its watermark, in order.
      { key: { u: 1, _id: 1 }, name: "feed_u" },
    ],
  },
  {
    // Notices for the analytics feed (src/store/mongo/analytics-log.ts).
    name: "analytics_log",
    schema: object(["at", "kind", "site_id", "keys"], {
      at: date,
      kind: oneOf(["bucket", "links", "stitches"]),
      site_id: str,
      keys: { bsonType: "array", items: str },
    }),
    indexes: [{ key: { at: 1, _id: 1 }, name: "at" }],
  },
  {
    // How far the analytics feed trimmed the notice log (analytics-feed.ts): one document.
    name: "analytics_feed_state",
    schema: object(["_id", "trimmed_before"], { _id: str, trimmed_before: date }),
    indexes: [],
  },
  {
    // The analytics owner's lease (src/store/mongo/analytics-lease.ts): one document.
    name: "analytics_lease",
    schema: object(["_id", "holder", "acquired_at", "expires_at"], {
      _id: str,
      holder: str,
      acquired_at: date,
      expires_at: date,
    }),
    indexes: [],
  },
  {
    name: "visitor_touches",
    schema: object(["site_id", "visitor_id", "ts", "internal", "channel", "landing_page"], {
      site_id: str,
      visitor_id: str,
      ts: date,
      internal: { bsonType: "bool" },
      channel: str,
      source: str,
      medium: str,
      campaign: str,
      landing_page: str,
    }),
    indexes: [
      // One first touch per visitor: the key of the conditional upsert and of getFirstTouches.
      { key: { site_id: 1, visitor_id: 1 }, name: "site_visitor_unique", unique: true },
    ],
  },
  {
    name: "customer_visitors",
    schema: object(["site_id", "customer_id", "visitor_id", "via", "linked_at"], {
      site_id: str,
      customer_id: str,
      visitor_id: str,
      via: oneOf(LINK_KINDS),
      linked_at: date,
    }),
    indexes: [
      // The upsert key; a customer's visitors (getCustomerVisitors).
      {
        key: { site_id: 1, customer_id: 1, visitor_id: 1 },
        name: "site_customer_visitor_unique",
        unique: true,
      },
      // The customers of some visitors (findCustomersToReattribute), covered by the index.
      { key: { site_id: 1, visitor_id: 1, customer_id: 1 }, name: "site_visitor_customer" },
    ],
  },
  {
    name: "visitor_stitches",
    schema: object(["site_id", "visitor_id", "persistent_id", "ts"], {
      site_id: str,
      visitor_id: str,
      persistent_id: str,
      ts: date,
    }),
    indexes: [
      // One persistent id per daily id: the first stitch's upsert key.
      { key: { site_id: 1, visitor_id: 1 }, name: "site_visitor_unique", unique: true },
      // A persistent visitor's daily ids (attribution, the cap).
      { key: { site_id: 1, persistent_id: 1 }, name: "site_persistent" },
    ],
  },
  {
    name: "connectors",
    schema: object(["_id", "site_id", "provider", "secret", "created_by", "created_at"], {
      _id: str,
      site_id: str,
      provider: oneOf(PROVIDERS),
      secret: str,
      created_by: str,
      created_at: date,
    }),
    indexes: [{ key: { site_id: 1, created_at: 1 }, name: "site_created" }],
  },
  {
    // Each provider event applied at most once per connector.
    name: "connector_events",
    schema: object(["connector_id", "event_id", "applied_at"], {
      connector_id: str,
      event_id: str,
      applied_at: date,
    }),
    indexes: [
      { key: { connector_id: 1, event_id: 1 }, name: "connector_event_unique", unique: true },
    ],
  },
  {
    // The provider's version of each object's stored state: older deliveries are skipped.
    name: "connector_objects",
    schema: object(["site_id", "object", "version"], {
      site_id: str,
      object: str,
      version: { bsonType: ["int", "long", "double"] },
    }),
    indexes: [{ key: { site_id: 1, object: 1 }, name: "site_object_unique", unique: true }],
  },
  {
    // One document, raised by every account, site or key change (directory-cache.ts).
    name: "directory",
    schema: object(["_id", "version"], { _id: str, version: integer }),
    indexes: [],
  },
  {
    // The installation's secrets by name, made by their first reader: `erasure_audit`
    // keys the HMAC of the erased id in the erasure audit line (erasure.ts).
    name: "settings",
    schema: object(["_id", "secret"], { _id: str, secret: { bsonType: "binData" } }),
    indexes: [],
  },
  {
    // The first run's setup token (setup.ts): one document, `_id: "first_run"`, hash only.
    name: "setup_tokens",
    schema: object(["_id", "hash", "created_at", "expires_at"], {
      _id: str,
      hash: str,
      created_at: date,
      expires_at: date,
      used_at: date,
    }),
    indexes: [],
  },
];

/**
 * Indexes earlier versions created and nothing queries any more; `store
 * migrate` drops them (each costs a write on every insert and update).
 */
export const OBSOLETE_INDEXES: readonly { collection: string; name: string }[] = [
  { collection: "sites", name: "account" },
  { collection: "identities", name: "site_visitor" },
  { collection: "subscriptions", name: "site_customer" },
  { collection: "payments", name: "site_paid_at" },
  // Its prefix: site_status_paid_at_revenue answered every read it did.
  { collection: "payments", name: "site_status_paid_at" },
  // The revenue reads it covered (RevenueByChannel, SiteOverview's revenue) are the
  // analytics engine's plans (src/domain/analytics/fixed-reports.ts).
  { collection: "payments", name: "site_status_paid_at_revenue" },
  // The new visitors of a period: a plan of the query layer too.
  { collection: "visitor_touches", name: "site_ts" },
];

/**
 * Collections earlier versions created and nothing reads any more; `store
 * migrate` drops them. The daily rollups (traffic_days, visitor_days,
 * new_visitor_days) served SiteOverview's fixed cuts, now the analytics
 * engine's plans; visitor_days held visitor ids, which leave with it.
 */
export const OBSOLETE_COLLECTIONS: readonly string[] = [
  "traffic_days",
  "visitor_days",
  "new_visitor_days",
];

/** The server's code for "collection already exists". */
const NAMESPACE_EXISTS = 48;

/** What a migration did: each entry names a collection, a validator or an index. */
export interface MigrationReport {
  created: string[];
  updated: string[];
  dropped: string[];
}

/** The validator options a collection is created or updated with. */
function validation(spec: CollectionSpec): Document {
  return {
    validator: { $jsonSchema: spec.schema },
    validationLevel: "strict",
    validationAction: "error",
  };
}

/** Whether a stored validator is the spec's (BSON keeps key order, so JSON compares exactly). */
function sameValidator(stored: unknown, spec: CollectionSpec): boolean {
  return JSON.stringify(stored) === JSON.stringify({ $jsonSchema: spec.schema });
}

/** The collections as the server describes them: name → stored validator. */
async function describeCollections(db: Db): Promise<Map<string, unknown>> {
  const infos = await db.listCollections({}).toArray();
  return new Map(infos.map((c) => [c.name, (c as { options?: Document }).options?.validator]));
}

async function indexNames(db: Db, name: string): Promise<Set<string>> {
  const indexes = await db.collection(name).listIndexes().toArray();
  return new Set(indexes.map((i) => String(i.name)));
}

/**
 * `admin store migrate`: creates what is missing (collections with their
 * validators, named indexes) and brings validators up to date with `collMod`,
 * only where they differ. Idempotent: a second run changes nothing and
 * reports nothing. Needs a role that may create collections and indexes and
 * run `collMod` (dbAdmin), which the service itself never needs. Safe to run
 * from several processes at once.
 */
export async function migrateSchema(db: Db): Promise<MigrationReport> {
  const report: MigrationReport = { created: [], updated: [], dropped: [] };
  const existing = await describeCollections(db);
  for (const spec of COLLECTIONS) {
    if (!existing.has(spec.name)) {
      try {
        await db.createCollection(spec.name, validation(spec));
        report.created.push(`collection ${spec.name}`);
      } catch (err) {
        // Another migration created it since listCollections: bring its validator up to date.
        if (!(err instanceof MongoServerError && err.code === NAMESPACE_EXISTS)) throw err;
        await db.command({ collMod: spec.name, ...validation(spec) });
      }
    } else if (!sameValidator(existing.get(spec.name), spec)) {
      await db.command({ collMod: spec.name, ...validation(spec) });
      report.updated.push(`validator ${spec.name}`);
    }
    const have = await indexNames(db, spec.name);
    const missing = spec.indexes.filter((i) => !have.has(i.name as string));
    if (missing.length > 0) {
      // Identical definitions are a no-op on the server, so a race is harmless.
      await db.collection(spec.name).createIndexes(missing);
      for (const i of missing) report.created.push(`index ${spec.name}.${i.name}`);
    }
    for (const old of OBSOLETE_INDEXES.filter((o) => o.collection === spec.name)) {
      if (!have.has(old.name)) continue;
      await db.collection(spec.name).dropIndex(old.name);
      report.dropped.push(`index ${spec.name}.${old.name}`);
    }
  }
  for (const name of OBSOLETE_COLLECTIONS) {
    if (!existing.has(name)) continue;
    // Another migration may have dropped it since listCollections: then it is gone.
    if (
      await db
        .collection(name)
        .drop()
        .catch(() => false)
    ) {
      report.dropped.push(`collection ${name}`);
    }
  }
  return report;
}

/**
 * What the server checks at start instead of migrating: every collection,
 * up-to-date validator and named index the adapter needs. Returns what is
 * missing (empty: all there). Only reads (`listCollections`, `listIndexes`),
 * which a least-privilege `readWrite` user may do.
 */
export async function verifySchema(db: Db): Promise<string[]> {
  const existing = await describeCollections(db);
  const missing: string[] = [];
  for (const spec of COLLECTIONS) {
    if (!existing.has(spec.name)) {
      missing.push(`collection ${spec.name}`);
      continue;
    }
    if (!sameValidator(existing.get(spec.name), spec)) missing.push(`validator ${spec.name}`);
    const have = await indexNames(db, spec.name);
    for (const i of spec.indexes) {
      if (!have.has(i.name as string)) missing.push(`index ${spec.name}.${i.name}`);
    }
  }
  return missing;
}

/** The start-up error when the schema is not there: names what is missing and how to fix it. */
export class SchemaMissingError extends Error {
  override readonly name = "SchemaMissingError";

  constructor(readonly missing: readonly string[]) {
    super(
      `the MongoDB schema is not up to date (missing: ${missing.join(", ")}); ` +
        "run `npm run admin -- store migrate` with a user allowed to create collections and indexes",
    );
  }
}

/** Typed handles on the adapter's collections. */
export interface Collections {
  accounts: Collection<AccountDoc>;
  users: Collection<UserDoc>;
  memberships: Collection<MembershipDoc>;
  sites: Collection<SiteDoc>;
  apiKeys: Collection<ApiKeyDoc>;
  quota: Collection<QuotaDoc>;
  sequences: Collection<SequenceDoc>;
  events: Collection<EventBucketDoc>;
  identities: Collection<IdentityDoc>;
  salts: Collection<SaltDoc>;
  directory: Collection<DirectoryDoc>;
  setupTokens: Collection<SetupTokenDoc>;
  customers: Collection<CustomerDoc>;
  subscriptions: Collection<SubscriptionDoc>;
  payments: Collection<PaymentDoc>;
  touches: Collection<VisitorTouchDoc>;
  customerVisitors: Collection<CustomerVisitorDoc>;
  stitches: Collection<VisitorStitchDoc>;
  connectors: Collection<ConnectorDoc>;
  connectorEvents: Collection<ConnectorEventDoc>;
  connectorObjects: Collection<ConnectorObjectDoc>;
  settings: Collection<SettingDoc>;
  analyticsLog: Collection<AnalyticsNoticeDoc>;
  analyticsLease: Collection<AnalyticsLeaseDoc>;
  analyticsFeedState: Collection<AnalyticsFeedStateDoc>;
}

/**
 * The adapter's collections. With `maxTimeMS`, every read and write carries
 * it, so the server abandons what runs longer (src/store/mongo/time-limit.ts).
 */
export function collections(db: Db, options: { maxTimeMS?: number } = {}): Collections {
  const { maxTimeMS } = options;
  const get = <T extends Document>(name: string): Collection<T> => {
    const c = db.collection<T>(name);
    return maxTimeMS === undefined ? c : withTimeLimit(c, maxTimeMS);
  };
  return {
    accounts: get<AccountDoc>("accounts"),
    users: get<UserDoc>("users"),
    memberships: get<MembershipDoc>("memberships"),
    sites: get<SiteDoc>("sites"),
    apiKeys: get<ApiKeyDoc>("api_keys"),
    quota: get<QuotaDoc>("quota_usage"),
    sequences: get<SequenceDoc>("sequences"),
    events: get<EventBucketDoc>("events"),
    identities: get<IdentityDoc>("identities"),
    salts: get<SaltDoc>("salts"),
    directory: get<DirectoryDoc>("directory"),
    setupTokens: get<SetupTokenDoc>("setup_tokens"),
    customers: get<CustomerDoc>("customers"),
    subscriptions: get<SubscriptionDoc>("subscriptions"),
    payments: get<PaymentDoc>("payments"),
    touches: get<VisitorTouchDoc>("visitor_touches"),
    customerVisitors: get<CustomerVisitorDoc>("customer_visitors"),
    stitches: get<VisitorStitchDoc>("visitor_stitches"),
    connectors: get<ConnectorDoc>("connectors"),
    connectorEvents: get<ConnectorEventDoc>("connector_events"),
    connectorObjects: get<ConnectorObjectDoc>("connector_objects"),
    settings: get<SettingDoc>("settings"),
    analyticsLog: get<AnalyticsNoticeDoc>("analytics_log"),
    analyticsLease: get<AnalyticsLeaseDoc>("analytics_lease"),
    analyticsFeedState: get<AnalyticsFeedStateDoc>("analytics_feed_state"),
  };
}
