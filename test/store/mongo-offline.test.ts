/**
 * Checks of the MongoDB adapter that need no server: URL parsing, the shape
 * of the update documents it sends, and that the documents those updates
 * produce pass the collection validators. The model of the server in
 * test/helpers/mongo/ applies the updates (memory-collections.ts
 * `applyUpdate`: equality fields of the filter, $set, $setOnInsert, $unset,
 * $inc, $min, $max, $push/$each, update pipelines) and stands for the
 * collections the attribution and erasure code read (MemoryCollection, each
 * stored document checked against its validator); the contract suite
 * (mongodb.test.ts) is the real check when MONGODB_URI is set.
 */
import { Binary, Long, MongoServerSelectionError, ObjectId } from "mongodb";
import { describe, expect, it } from "vitest";
import { attributionRank, UNATTRIBUTED_RANK } from "../../src/domain/attribution/ranking.js";
import { createMongoAccounts } from "../../src/store/mongo/accounts.js";
import {
  attributionUpdates,
  createMongoAttribution,
  foldLinks,
  isBetterTouch,
  linkUpsert,
  mrrRow,
  planTouches,
  type TouchCandidates,
  toBigInt,
  touchUpdate,
  writeTouches,
} from "../../src/store/mongo/attribution.js";
import {
  attributionFromDoc,
  attributionToDoc,
  type EventDoc,
  fromPairs,
  toLong,
  toPairs,
} from "../../src/store/mongo/documents.js";
import { createMongoErasure, removeBucketEvents } from "../../src/store/mongo/erasure.js";
import {
  BUCKET_CAP,
  type EventUnit,
  eventFromDoc,
  eventToDoc,
  NewestEvents,
  planAppends,
} from "../../src/store/mongo/event-buckets.js";
import { createMongoStore, dbNameFromUrl } from "../../src/store/mongo/mongo-store.js";
import {
  createMongoPayments,
  customerUpsert,
  paymentUpsert,
  subscriptionUpsert,
} from "../../src/store/mongo/payments.js";
import { COLLECTIONS, type Collections } from "../../src/store/mongo/schema.js";
import type {
  Attribution,
  EventRecord,
  LinkKind,
  PaymentRecord,
  SubscriptionPatch,
  VisitorTouch,
} from "../../src/store/port.js";
import { applyUpdate, MemoryCollection } from "../helpers/mongo/memory-collections.js";
import { type Doc, isPlainObject } from "../helpers/mongo/model.js";
import { fakeAnalyticsLog } from "../helpers/mongo/notices.js";

const T0 = Date.UTC(2025, 5, 1);
/** The model server's clock (`$currentDate`): T0. */
const SERVER_CLOCK = { now: T0 };

function compare(a: unknown, b: unknown): number {
  const n = (v: unknown) => (v instanceof Date ? v.getTime() : Number(v));
  return n(a) - n(b);
}

function bsonTypeOf(v: unknown): string[] {
  if (typeof v === "string") return ["string"];
  if (typeof v === "boolean") return ["bool"];
  if (v instanceof Date) return ["date"];
  if (v instanceof Long) return ["long", "number"];
  if (v instanceof Binary) return ["binData"];
  if (typeof v === "number") {
    // How the driver serializes a JS number.
    const int32 = Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31;
    return int32 ? ["int", "number"] : ["double", "number"];
  }
  if (Array.isArray(v)) return ["array"];
  if (v === null) return ["null"];
  if (isPlainObject(v)) return ["object"];
  return ["unknown"];
}

/** The subset of $jsonSchema the adapter's validators use; returns what fails. */
function validate(schema: Doc, v: unknown, path = "$"): string[] {
  const errors: string[] = [];
  if (schema.bsonType !== undefined) {
    const allowed = ([] as string[]).concat(schema.bsonType as string | string[]);
    if (!bsonTypeOf(v).some((t) => allowed.includes(t))) {
      return [`${path}: ${bsonTypeOf(v).join("/")} is not ${allowed.join("|")}`];
    }
  }
  if (schema.enum && !(schema.enum as unknown[]).includes(v)) errors.push(`${path}: not in enum`);
  if (typeof schema.pattern === "string" && !new RegExp(schema.pattern).test(v as string)) {
    errors.push(`${path}: does not match ${schema.pattern}`);
  }
  if (typeof schema.minimum === "number" && compare(v, schema.minimum) < 0) {
    errors.push(`${path}: below minimum`);
  }
  if (Array.isArray(v)) {
    if (typeof schema.minItems === "number" && v.length < schema.minItems) {
      errors.push(`${path}: too few items`);
    }
    if (schema.items) {
      for (const [i, item] of v.entries()) {
        errors.push(...validate(schema.items as Doc, item, `${path}[${i}]`));
      }
    }
  }
  if (isPlainObject(v)) {
    for (const r of (schema.required as string[] | undefined) ?? []) {
      if (v[r] === undefined) errors.push(`${path}.${r}: required`);
    }
    const properties = (schema.properties as Record<string, Doc> | undefined) ?? {};
    for (const [k, value] of Object.entries(v)) {
      if (value === undefined) errors.push(`${path}.${k}: undefined stored`);
      const p = properties[k];
      if (p) errors.push(...validate(p, value, `${path}.${k}`));
      else if (schema.additionalProperties === false) errors.push(`${path}.${k}: not allowed`);
    }
  }
  return errors;
}

function schemaOf(collection: string): Doc {
  const spec = COLLECTIONS.find((c) => c.name === collection);
  if (!spec) throw new Error(`no collection ${collection}`);
  return spec.schema;
}

/** Applies a bulk `updateOne` operation to `existing` and checks the result against the validator. */
function run(collection: string, existing: Doc | undefined, operation: unknown): Doc {
  const { updateOne } = operation as { updateOne: { filter: Doc; update: Doc; upsert: boolean } };
  expect(updateOne.upsert).toBe(true);
  const doc = applyUpdate(existing, updateOne.filter, updateOne.update, SERVER_CLOCK);
  expect(validate(schemaOf(collection), doc)).toEqual([]);
  return doc;
}

/** A check that a document about to be stored in `collection` passes its validator. */
const passesValidator = (collection: string) => (doc: Doc) => {
  expect(validate(schemaOf(collection), doc), collection).toEqual([]);
};

/**
 * A collection of the model (test/helpers/mongo/memory-collections.ts) whose
 * server clock is T0, holding `docs`, that checks every document it stores
 * against the collection's validator.
 */
function checkedCollection(collection: string, docs: Doc[] = []): MemoryCollection {
  const c = new MemoryCollection(SERVER_CLOCK, { check: passesValidator(collection) });
  c.docs = docs;
  return c;
}

describe("mongodb adapter without a server", () => {
  it("takes the database from the URL path, else `ingest`", () => {
    expect(dbNameFromUrl("mongodb://localhost:27017")).toBe("ingest");
    expect(dbNameFromUrl("mongodb://localhost:27017/")).toBe("ingest");
    expect(dbNameFromUrl("mongodb://localhost/?replicaSet=rs0")).toBe("ingest");
    expect(dbNameFromUrl("mongodb://localhost?directConnection=true")).toBe("ingest");
    expect(dbNameFromUrl("mongodb://u:p%2F@h1:1,h2:2/analytics?replicaSet=rs")).toBe("analytics");
    expect(dbNameFromUrl("mongodb+srv://cluster0.example.net/prod_ingest?retryWrites=true")).toBe(
      "prod_ingest",
    );
  });

  it("fails within STORE_TIMEOUT_MS when no server answers (the driver's server selection)", async () => {
    const started = performance.now();
    await expect(
      createMongoStore("mongodb://127.0.0.1:9/ingest", { timeoutMs: 300 }),
    ).rejects.toBeInstanceOf(MongoServerSelectionError);
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it("stores a site's time zone and name as fields its validator types, and patches only what is given", async () => {
    const inserted: Doc[] = [];
    const updates: unknown[][] = [];
    let stored: Doc | undefined;
    const c = {
      sites: {
        insertOne: async (d: Doc) => {
          inserted.push(d);
          stored = d;
        },
        findOneAndUpdate: async (filter: Doc, update: { $set: Doc }, options: Doc) => {
          updates.push([filter, update, options]);
          stored = { ...stored, ...update.$set };
          return stored;
        },
      },
      directory: { updateOne: async () => ({ matchedCount: 1 }) },
    } as unknown as Collections;
    const accounts = createMongoAccounts(c);
    const createdAt = Date.UTC(2026, 2, 1);
    await accounts.createSite({
      id: "site_1",
      accountId: "acct_1",
      hostnames: ["a.test"],
      createdAt,
      timeZone: "Europe/Paris",
    });
    // Absent, never null, when not given (the validator types a field only when present).
    expect(inserted).toEqual([
      {
        _id: "site_1",
        account_id: "acct_1",
        hostnames: ["a.test"],
        created_at: new Date(createdAt),
        time_zone: "Europe/Paris",
      },
    ]);
    expect(validate(schemaOf("sites"), inserted[0])).toEqual([]);
    expect(validate(schemaOf("sites"), { ...inserted[0], time_zone: null })).not.toEqual([]);
    const site = await accounts.updateSite("site_1", { name: "Shop" });
    expect(updates).toEqual([
      [{ _id: "site_1" }, { $set: { name: "Shop" } }, { returnDocument: "after" }],
    ]);
    expect(validate(schemaOf("sites"), stored)).toEqual([]);
    expect(site).toEqual({
      id: "site_1",
      accountId: "acct_1",
      hostnames: ["a.test"],
      createdAt,
      name: "Shop",
      timeZone: "Europe/Paris",
    });
  });

  it("declares a valid validator and named indexes for every collection", () => {
    const names = COLLECTIONS.map((c) => c.name);
    expect(names).toEqual([
      "accounts",
      "users",
      "memberships",
      "sites",
      "api_keys",
      "quota_usage",
      "sequences",
      "events",
      "identities",
      "salts",
      "customers",
      "subscriptions",
      "payments",
      "analytics_log",
      "analytics_feed_state",
      "analytics_lease",
      "visitor_touches",
      "customer_visitors",
      "visitor_stitches",
      "connectors",
      "connector_events",
      "connector_objects",
      "directory",
      "settings",
      "setup_tokens",
    ]);
    for (const c of COLLECTIONS) {
      expect(c.schema.bsonType).toBe("object");
      for (const index of c.indexes) expect(index.name).toBeTruthy();
    }
    const unique = COLLECTIONS.flatMap((c) =>
      c.indexes.filter((i) => i.unique).map((i) => `${c.name}.${i.name}`),
    );
    expect(unique).toEqual([
      "users.email_unique",
      "memberships.account_user_unique",
      "api_keys.hash_unique",
      "events.receipts_unique",
      "identities.site_user_visitor_unique",
      "customers.site_customer_unique",
      "subscriptions.site_subscription_unique",
      "payments.site_payment_unique",
      "visitor_touches.site_visitor_unique",
      "customer_visitors.site_customer_visitor_unique",
      "visitor_stitches.site_visitor_unique",
      "connector_events.connector_event_unique",
      "connector_objects.site_object_unique",
    ]);
  });

  it("keeps money as longs and refuses fractions", () => {
    expect(toLong(9007199254740991).toString()).toBe("9007199254740991");
    expect(() => toLong(19.99)).toThrow(RangeError);
    expect(() => toLong(2 ** 53)).toThrow(RangeError);
  });

  it("stores string maps as pairs, whatever the keys", () => {
    const map = { plain: "1", $dollar: "2", "dot.ted": "3", __proto__x: "4" };
    expect(toPairs(map)).toEqual([
      { k: "plain", v: "1" },
      { k: "$dollar", v: "2" },
      { k: "dot.ted", v: "3" },
      { k: "__proto__x", v: "4" },
    ]);
    expect(fromPairs(toPairs(map))).toEqual(map);
    const proto = fromPairs([{ k: "__proto__", v: "x" }]);
    expect(Object.keys(proto)).toEqual(["__proto__"]);
    expect(fromPairs(undefined)).toEqual({});
  });

  it("keeps the erasure audit key in one settings document: made by the first call, read by every later one", async () => {
    let stored: Doc | undefined;
    const writes: Doc[] = [];
    const settings = {
      async updateOne(filter: Doc, update: Doc, options: Doc) {
        expect(filter).toEqual({ _id: "erasure_audit" });
        expect(options).toEqual({ upsert: true });
        writes.push(update);
        // $setOnInsert: only the insert writes the secret.
        stored = stored ?? applyUpdate(undefined, filter, update, SERVER_CLOCK);
        expect(validate(schemaOf("settings"), stored)).toEqual([]);
      },
      async findOne(filter: Doc) {
        expect(filter).toEqual({ _id: "erasure_audit" });
        return stored ? { ...stored } : null;
      },
    };
    const erasure = createMongoErasure({ settings } as unknown as Collections);
    const first = await erasure.auditKey();
    const second = await erasure.auditKey();
    expect(first).toHaveLength(32);
    expect(Buffer.from(second).equals(Buffer.from(first))).toBe(true);
    expect(writes.map((w) => Object.keys(w))).toEqual([["$setOnInsert"], ["$setOnInsert"]]);
  });

  it("erasing visitors deletes their first touches, after telling the analytics feed of their stitches", async () => {
    const EMAIL = "ada@example.com";
    const day = new Date(T0);
    const touches = checkedCollection("visitor_touches", [
      {
        site_id: "site_1",
        visitor_id: "v_ada",
        ts: day,
        internal: false,
        channel: "Email",
        source: EMAIL,
        campaign: `c-${EMAIL}`,
        landing_page: `https://example.com/${EMAIL}`,
      },
      {
        site_id: "site_1",
        visitor_id: "v_bob",
        ts: day,
        internal: false,
        channel: "Email",
        landing_page: "https://example.com/shared",
      },
    ]);
    const c = {
      touches,
      customerVisitors: checkedCollection("customer_visitors"),
      events: checkedCollection("events"),
      identities: checkedCollection("identities"),
      stitches: checkedCollection("visitor_stitches"),
      customers: checkedCollection("customers"),
      payments: checkedCollection("payments"),
      analyticsLog: fakeAnalyticsLog(),
    };
    const erasure = createMongoErasure(c as unknown as Collections);
    expect(await erasure.eraseVisitors("site_1", ["v_ada"], ["v_ada"])).toMatchObject({
      touches: 1,
    });
    expect(touches.docs.map((t) => t.visitor_id)).toEqual(["v_bob"]);
    expect(JSON.stringify(touches.docs)).not.toContain(EMAIL);
    // The analytics feed was told which stitches would change before they did (no
    // customer was linked, so no links notice).
    expect(c.analyticsLog.docs.map((d) => [d.kind, d.site_id, d.keys])).toEqual([
      ["stitches", "site_1", ["v_ada"]],
    ]);
  });

  it("erasing events names the buckets it deletes to the analytics feed first, and marks the ones it filters", async () => {
    const order: string[] = [];
    const doomed = new ObjectId();
    const log = fakeAnalyticsLog(() => T0);
    const updates: unknown[] = [];
    const c = {
      events: {
        aggregate: () => ({ toArray: async () => [{ n: 3 }] }),
        find: (filter: Doc, options: Doc) => ({
          toArray: async () => {
            expect(options).toEqual({ projection: { _id: 1 } });
            expect(filter).toEqual({
              site_id: "site_1",
              events: { $not: { $elemMatch: { visitor_id: { $nin: ["v_ada"] } } } },
            });
            return [{ _id: doomed }];
          },
        }),
        async deleteMany(filter: Doc) {
          order.push("deleteMany");
          expect(filter).toMatchObject({ _id: { $in: [doomed] } });
          return { deletedCount: 1 };
        },
        async updateMany(_filter: Doc, update: unknown) {
          order.push("updateMany");
          updates.push(update);
          return { modifiedCount: 1 };
        },
      },
      analyticsLog: {
        ...log,
        async updateOne(filter: Doc, update: Doc, options: Doc) {
          order.push(`notice ${(update.$set as Doc).kind}`);
          return log.updateOne(filter, update, options);
        },
      },
    };
    expect(
      await removeBucketEvents(c as unknown as Collections, "site_1", {
        query: { visitor_id: { $in: ["v_ada"] } },
        keep: { visitor_id: { $nin: ["v_ada"] } },
        expr: { $in: ["$$this.visitor_id", { $literal: ["v_ada"] }] },
      }),
    ).toBe(3);
    expect(order).toEqual(["notice bucket", "deleteMany", "updateMany"]);
    expect(log.docs.map((d) => [d.kind, d.site_id, d.keys, d.at])).toEqual([
      ["bucket", "site_1", [doomed.toHexString()], new Date(T0)],
    ]);
    // The filtered buckets carry the server's time of the change ($$NOW): the feed's marker.
    expect(updates).toEqual([
      [
        {
          $set: {
            events: {
              $filter: {
                input: "$events",
                cond: { $not: [{ $in: ["$$this.visitor_id", { $literal: ["v_ada"] }] }] },
              },
            },
          },
        },
        { $set: { n: { $size: "$events" }, u: "$$NOW" } },
      ],
    ]);
  });

  it("finds a customer's refunds of a charge by its metadata pair, failed ones excepted", async () => {
    const docs: Doc[] = [];
    const pay = (id: string, over: Partial<PaymentRecord>) => ({
      _id: id,
      ...run(
        "payments",
        undefined,
        paymentUpsert([
          {
            siteId: "site_1",
            paymentId: id,
            customerId: "cus_1",
            currency: "USD",
            amountMinor: 100,
            kind: "refund",
            status: "succeeded",
            paidAt: T0,
            metadata: { stripe_charge: "ch_1" },
            createdAt: T0,
            updatedAt: T0,
            ...over,
          },
        ]),
      ),
    });
    docs.push(
      pay("re_1", {}),
      pay("dp_1", { kind: "chargeback", status: "pending" }),
      pay("re_failed", { status: "failed" }),
      pay("re_cus_2", { customerId: "cus_2" }),
      pay("ch_1", { kind: "charge", metadata: {} }),
      pay("re_key", { metadata: { polar_order: "ch_1" } }),
      pay("re_value", { metadata: { stripe_charge: "ch_2" } }),
    );
    const payments = checkedCollection("payments", docs);
    const store = createMongoPayments({ payments } as unknown as Collections);
    const found = await store.refundsOfCharge("site_1", "cus_1", "stripe_charge", "ch_1");
    expect(found.map((p) => p.paymentId).sort()).toEqual(["dp_1", "re_1"]);
  });

  describe("events", () => {
    const full: EventRecord = {
      siteId: "site_1",
      name: "signup",
      url: "https://example.com/?gclid=1",
      referrer: "https://ref.example.org/",
      title: "T",
      width: 1280,
      language: "en",
      props: { a: 1, $b: { "c.d": [null, 2.5] } },
      ts: T0,
      receivedAt: T0 + 1,
      visitorId: "v",
      userId: "u",
      country: "FR",
      browser: "Firefox",
      os: "Linux",
      device: "desktop",
      referrerHost: "ref.example.org",
      utmSource: "s",
      utmMedium: "m",
      utmCampaign: "c",
      utmTerm: "t",
      utmContent: "x",
      clickIds: { gclid: "1" },
    };

    it("maps an event to a document and back, storing no undefined", () => {
      const doc = eventToDoc(full, 42);
      expect(doc.q).toBe(42);
      expect(doc.ts).toEqual(new Date(T0));
      expect(eventFromDoc("site_1", doc)).toEqual(full);
      const minimal = eventToDoc(
        { siteId: "s", name: "n", url: "u", ts: T0, receivedAt: T0, visitorId: "v", clickIds: {} },
        1,
      );
      expect(Object.keys(minimal).sort()).toEqual(
        ["q", "name", "url", "ts", "received_at", "visitor_id"].sort(),
      );
      const back = eventFromDoc("s", minimal);
      expect(back.clickIds).toBeUndefined();
      expect(back.props).toBeUndefined();
    });

    it("plans one append per site and chunk, never splitting a group", () => {
      const ev = (siteId: string, name: string): EventRecord => ({ ...full, siteId, name });
      const receipts = Array.from({ length: 6 }, () => new ObjectId());
      const unit = (group: number, siteId: string, count: number): EventUnit => ({
        group,
        receipt: receipts[group] as ObjectId,
        siteId,
        events: Array.from({ length: count }, (_, i) => ev(siteId, `${group}-${i}`)),
      });
      const now = Date.UTC(2025, 5, 1, 13, 45);
      const appends = planAppends(
        [unit(0, "a", 150), unit(1, "b", 10), unit(2, "a", 40), unit(3, "a", 20), unit(4, "a", 0)],
        now,
        1_000,
      );
      expect(appends.map((a) => a.groups)).toEqual([[0, 2], [3], [1]]);
      const ops = appends.map(
        (a) => (a.operation as { updateOne: { filter: Doc; update: Doc } }).updateOne,
      );
      expect(ops[0]?.filter).toEqual({
        site_id: "a",
        hour: new Date(Date.UTC(2025, 5, 1, 13)),
        n: { $lte: BUCKET_CAP - 190 },
        // Not a bucket that already holds one of these requests (idempotent re-send).
        g: { $nin: [receipts[0], receipts[2]] },
      });
      expect((ops[0]?.update.$push as Doc | undefined)?.g).toEqual({
        $each: [receipts[0], receipts[2]],
      });
      expect(ops[1]?.filter).toMatchObject({ site_id: "a", n: { $lte: BUCKET_CAP - 20 } });
      expect(ops[2]?.filter).toMatchObject({ site_id: "b", n: { $lte: BUCKET_CAP - 10 } });
      const pushed = (op: { update: Doc } | undefined) => {
        if (!op) throw new Error("no operation");
        return ((op.update.$push as Doc).events as { $each: EventDoc[] }).$each;
      };
      expect(pushed(ops[0]).map((e) => e.name)).toEqual([
        ...Array.from({ length: 150 }, (_, i) => `0-${i}`),
        ...Array.from({ length: 40 }, (_, i) => `2-${i}`),
      ]);
      // Sequence numbers follow commit order within a site.
      const qs = pushed(ops[0]).map((e) => e.q);
      // Numbered from the block the counter handed out, in commit order.
      expect(qs[0]).toBe(1_000);
      expect([...qs].sort((x, y) => x - y)).toEqual(qs);
      expect(ops[0]?.update.$min).toEqual({ min_q: qs[0] });
      expect(ops[0]?.update.$max).toEqual({ max_q: qs.at(-1) });
      expect(ops[0]?.update.$inc).toEqual({ n: 190 });
      expect(pushed(ops[1])[0]?.q).toBeGreaterThan(qs.at(-1) as number);

      // The buckets these appends make pass the validator, and fill up to the cap.
      const bucket = run("events", undefined, appends[0]?.operation);
      expect(bucket.n).toBe(190);
      const next = planAppends([unit(5, "a", 10)], now, 2_000)[0]?.operation;
      const filled = run("events", bucket, next);
      expect(filled.n).toBe(200);
      expect((filled.events as unknown[]).length).toBe(200);
      expect(filled.max_q).toBeGreaterThan(bucket.max_q as number);
      expect(filled.min_q).toBe(bucket.min_q);
    });

    it("keeps the newest events across buckets and stops at older ones", () => {
      const doc = (q: number) => ({ ...eventToDoc(full, q) });
      const newest = new NewestEvents(3);
      expect(newest.wants(100)).toBe(true);
      newest.add([doc(90), doc(100)]);
      expect(newest.wants(95)).toBe(true);
      // An overlapping bucket (written at the same time) still counts.
      newest.add([doc(80), doc(95), doc(85)]);
      expect(newest.events.map((e) => e.q)).toEqual([100, 95, 90]);
      expect(newest.wants(89)).toBe(false);
      expect(newest.wants(91)).toBe(true);
    });
  });

  describe("payments", () => {
    const payment: PaymentRecord = {
      siteId: "site_1",
      paymentId: "pay_1",
      customerId: "cus_1",
      currency: "USD",
      amountMinor: 9007199254740991,
      feeMinor: 30,
      kind: "charge",
      status: "succeeded",
      paidAt: T0,
      metadata: { "a.b": "1", $c: "2" },
      subscriptionId: "sub_1",
      createdAt: T0 + 1,
      updatedAt: T0 + 1,
    };

    it("upserts a payment, then replaces it but keeps createdAt and drops absent options", () => {
      const inserted = run("payments", undefined, paymentUpsert([payment]));
      expect(inserted).toEqual({
        site_id: "site_1",
        payment_id: "pay_1",
        customer_id: "cus_1",
        currency: "USD",
        amount_minor: Long.fromNumber(9007199254740991),
        fee_minor: Long.fromNumber(30),
        kind: "charge",
        status: "succeeded",
        paid_at: new Date(T0),
        metadata: [
          { k: "a.b", v: "1" },
          { k: "$c", v: "2" },
        ],
        subscription_id: "sub_1",
        created_at: new Date(T0 + 1),
        updated_at: new Date(T0 + 1),
        channel: "unattributed",
        // The analytics feed's marker: the server's time of the write.
        u: new Date(T0),
      });
      const { feeMinor: _fee, subscriptionId: _sub, ...rest } = payment;
      const resent: PaymentRecord = {
        ...rest,
        amountMinor: 500,
        status: "failed",
        metadata: {},
        createdAt: T0 + 9,
        updatedAt: T0 + 9,
      };
      const replaced = run("payments", inserted, paymentUpsert([resent]));
      expect(replaced.fee_minor).toBeUndefined();
      expect(replaced.subscription_id).toBeUndefined();
      expect(replaced.amount_minor).toEqual(Long.fromNumber(500));
      expect(replaced.created_at).toEqual(new Date(T0 + 1));
      expect(replaced.updated_at).toEqual(new Date(T0 + 9));
      // Two writes in one batch: the last wins, createdAt from the first.
      const folded = run("payments", undefined, paymentUpsert([payment, resent]));
      expect(folded.amount_minor).toEqual(Long.fromNumber(500));
      expect(folded.created_at).toEqual(new Date(T0 + 1));
      expect(() => paymentUpsert([{ ...payment, amountMinor: 19.99 }])).toThrow(RangeError);
    });

    it("patches customers: present fields set, absent kept, metadata only on insert when absent", () => {
      const base = { siteId: "site_1", customerId: "cus_1" };
      const inserted = run(
        "customers",
        undefined,
        customerUpsert([{ ...base, email: "a@example.com", at: T0 }]),
      );
      expect(inserted).toEqual({
        site_id: "site_1",
        customer_id: "cus_1",
        email: "a@example.com",
        metadata: [],
        created_at: new Date(T0),
        updated_at: new Date(T0),
      });
      const patched = run(
        "customers",
        inserted,
        customerUpsert([
          { ...base, name: "Ada", metadata: { tier: "gold" }, at: T0 + 1 },
          { ...base, country: "GB", visitorId: "v", userId: "u", at: T0 + 2 },
        ]),
      );
      expect(patched).toEqual({
        site_id: "site_1",
        customer_id: "cus_1",
        email: "a@example.com",
        name: "Ada",
        country: "GB",
        visitor_id: "v",
        user_id: "u",
        metadata: [{ k: "tier", v: "gold" }],
        created_at: new Date(T0),
        updated_at: new Date(T0 + 2),
      });
      const kept = run("customers", patched, customerUpsert([{ ...base, at: T0 + 3 }]));
      expect(kept.metadata).toEqual([{ k: "tier", v: "gold" }]);
    });

    it("applies subscription defaults only on insert", () => {
      const patch = (over: Partial<SubscriptionPatch>): SubscriptionPatch => ({
        siteId: "site_1",
        subscriptionId: "sub_1",
        customerId: "cus_1",
        currency: "USD",
        defaults: { status: "active", startedAt: T0 },
        at: T0,
        ...over,
      });
      const inserted = run(
        "subscriptions",
        undefined,
        subscriptionUpsert([patch({ amountMinor: 4900, interval: "month" })]),
      );
      expect(inserted).toEqual({
        site_id: "site_1",
        subscription_id: "sub_1",
        customer_id: "cus_1",
        currency: "USD",
        interval: "month",
        status: "active",
        amount_minor: Long.fromNumber(4900),
        started_at: new Date(T0),
        created_at: new Date(T0),
        updated_at: new Date(T0),
      });
      const updated = run(
        "subscriptions",
        { ...inserted, status: "canceled" },
        subscriptionUpsert([
          patch({
            defaults: { status: "trialing", startedAt: T0 + 5 },
            endedAt: T0 + 7,
            at: T0 + 6,
          }),
        ]),
      );
      expect(updated.status).toBe("canceled");
      expect(updated.started_at).toEqual(new Date(T0));
      expect(updated.ended_at).toEqual(new Date(T0 + 7));
      expect(updated.interval).toBe("month");
      // Given values win over defaults, and a later patch's status over an earlier one's.
      const given = run(
        "subscriptions",
        undefined,
        subscriptionUpsert([
          patch({ status: "trialing", startedAt: T0 - 1 }),
          patch({ status: "past_due", at: T0 + 1 }),
        ]),
      );
      expect(given.status).toBe("past_due");
      expect(given.started_at).toEqual(new Date(T0 - 1));
      expect(given.created_at).toEqual(new Date(T0));
    });
  });

  describe("attribution", () => {
    /** A succeeded charge of 1 USD on site_1 at T0. */
    const pay = (paymentId: string, customerId = "cus_1"): PaymentRecord => ({
      siteId: "site_1",
      paymentId,
      customerId,
      currency: "USD",
      amountMinor: 100,
      kind: "charge",
      status: "succeeded",
      paidAt: T0,
      metadata: {},
      createdAt: T0,
      updatedAt: T0,
    });

    /**
     * A collection of the model at T0 checked against its validator
     * (passesValidator), and how the attribution code calls it: every
     * bulk write an upsert, findOneAndUpdate an upsert answering the
     * document before, aggregations keeping longs.
     */
    class FakeCollection extends MemoryCollection {
      constructor(name: string) {
        super(SERVER_CLOCK, { check: passesValidator(name) });
      }

      override async findOneAndUpdate(
        filter: Doc,
        update: Doc | Doc[],
        options: { upsert?: boolean; returnDocument?: "before" | "after"; projection?: Doc } = {},
      ) {
        expect(options).toMatchObject({ upsert: true, returnDocument: "before" });
        return super.findOneAndUpdate(filter, update, options);
      }

      override async bulkWrite(
        ops: { updateOne: { filter: Doc; update: Doc | Doc[]; upsert?: boolean } }[],
      ) {
        for (const { updateOne } of ops) expect(updateOne.upsert).toBe(true);
        return super.bulkWrite(ops);
      }

      override aggregate(pipeline: Doc[], options: Doc = {}) {
        expect(options).toEqual({ promoteLongs: false });
        return super.aggregate(pipeline, options);
      }
    }

    function fakeCollections() {
      const f = {
        touches: new FakeCollection("visitor_touches"),
        customerVisitors: new FakeCollection("customer_visitors"),
        customers: new FakeCollection("customers"),
        payments: new FakeCollection("payments"),
        subscriptions: new FakeCollection("subscriptions"),
        analyticsLog: fakeAnalyticsLog(),
      };
      return { f, c: f as unknown as Collections };
    }

    const touch = (visitorId: string, over: Partial<VisitorTouch> = {}): VisitorTouch => ({
      siteId: "site_1",
      visitorId,
      ts: T0,
      internal: false,
      channel: "Organic Search",
      source: "google",
      medium: "organic",
      campaign: "c",
      landingPage: "https://example.com/",
      ...over,
    });

    it("the touch pipeline replaces the stored touch only with a better one", async () => {
      const { f, c } = fakeCollections();
      const store = createMongoAttribution(c);
      const put = async (t: VisitorTouch) =>
        (await writeTouches(c, [{ group: 0, touches: [t] }])).get(0) ?? [];
      const stored = async () => store.getFirstTouches("site_1", ["v"]);

      const internal = touch("v", { ts: T0 + 100, internal: true, channel: "Direct" });
      expect(await put(internal)).toEqual(["v"]);
      expect(f.touches.docs).toHaveLength(1);
      // The fields the pipeline writes, and the `_id` the server gives an upserted document.
      expect(Object.keys(f.touches.docs[0] ?? {}).sort()).toEqual(
        [
          "_id",
          "site_id",
          "visitor_id",
          "ts",
          "internal",
          "channel",
          "source",
          "medium",
          "campaign",
          "landing_page",
        ].sort(),
      );
      expect(await put({ ...internal, ts: T0 + 200 })).toEqual([]);
      expect(await put({ ...internal, channel: "tie" })).toEqual([]);
      expect(await put({ ...internal, ts: T0 + 50 })).toEqual(["v"]);
      const organic = touch("v", { ts: T0 + 300 });
      expect(await put(organic)).toEqual(["v"]);
      expect(await put({ ...internal, ts: T0 })).toEqual([]);
      expect(await put(touch("v", { ts: T0 + 300, channel: "tie" }))).toEqual([]);
      expect(await put(touch("v", { ts: T0 + 301 }))).toEqual([]);
      expect(await stored()).toEqual([organic]);
      // A better touch without optional fields removes the stored ones.
      const bare: VisitorTouch = {
        siteId: "site_1",
        visitorId: "v",
        ts: T0 + 250,
        internal: false,
        channel: "$channel",
        landingPage: "$$REMOVE",
      };
      expect(await put(bare)).toEqual(["v"]);
      expect(f.touches.docs[0]).not.toHaveProperty("source");
      expect(f.touches.docs[0]).not.toHaveProperty("campaign");
      expect(await stored()).toEqual([bare]);
      // Strings that look like field paths or variables are constants.
      const dollars = touch("v", { ts: T0 + 1, source: "$ts", medium: "$$ROOT", campaign: "$x" });
      expect(await put(dollars)).toEqual(["v"]);
      expect(await stored()).toEqual([dollars]);
      expect(f.touches.docs).toHaveLength(1);
    });

    it("plans one write per visitor and reports each group's changes as if written in order", () => {
      const candidates: TouchCandidates[] = [
        { group: 0, touches: [touch("a", { ts: T0 + 5, internal: true }), touch("b")] },
        { group: 2, touches: [touch("a", { ts: T0 + 9 })] },
        { group: 3, touches: [touch("a", { ts: T0 + 3 }), touch("b", { ts: T0 + 1 })] },
        { group: 5, touches: [touch("a", { ts: T0 + 3, channel: "tie" })] },
      ];
      const plan = planTouches(candidates);
      expect(plan.writes).toEqual([touch("a", { ts: T0 + 3 }), touch("b")]);
      expect([...plan.changes([undefined, undefined])]).toEqual([
        [0, ["a", "b"]],
        [2, ["a"]],
        [3, ["a"]],
      ]);
      // Stored before: a non-internal at T0 + 4 (only group 3 improves a), b at T0 - 1.
      expect([
        ...plan.changes([
          { internal: false, ts: T0 + 4 },
          { internal: false, ts: T0 - 1 },
        ]),
      ]).toEqual([[3, ["a"]]]);
      expect([
        ...plan.changes([
          { internal: false, ts: T0 },
          { internal: true, ts: T0 - 1 },
        ]),
      ]).toEqual([[0, ["b"]]]);
      expect(planTouches([]).writes).toEqual([]);
      // Same visitor id on two sites: two writes.
      expect(
        planTouches([{ group: 0, touches: [touch("a"), { ...touch("a"), siteId: "site_2" }] }])
          .writes,
      ).toHaveLength(2);
    });

    it("writeTouches folds a batch and returns each group's visitors", async () => {
      const { f, c } = fakeCollections();
      await writeTouches(c, [{ group: 0, touches: [touch("a", { ts: T0 + 4 })] }]);
      const changes = await writeTouches(c, [
        { group: 1, touches: [touch("a", { ts: T0 + 9 }), touch("b", { internal: true })] },
        { group: 4, touches: [touch("a", { ts: T0 + 2 }), touch("b", { ts: T0 + 7 })] },
        { group: 6, touches: [touch("b", { ts: T0 + 8 })] },
      ]);
      expect([...changes]).toEqual([
        [1, ["b"]],
        [4, ["a", "b"]],
      ]);
      expect(f.touches.docs.map((d) => [d.visitor_id, (d.ts as Date).getTime() - T0])).toEqual([
        ["a", 2],
        ["b", 7],
      ]);
    });

    it("links keep the earliest time and the strongest kind", async () => {
      const { f, c } = fakeCollections();
      const store = createMongoAttribution(c);
      const link = (visitorId: string, via: LinkKind, at: number) =>
        store.linkCustomerVisitors("site_1", "cus_1", [{ visitorId, via, linkedAt: T0 + at }]);
      await link("v1", "customer", 100);
      await link("v1", "user_id", 200);
      await link("v1", "visitor_id", 10);
      await link("v2", "visitor_id", 10);
      await link("v2", "customer", 5);
      await store.linkCustomerVisitors("site_1", "cus_1", [
        { visitorId: "v3", via: "customer", linkedAt: T0 + 30 },
        { visitorId: "v3", via: "visitor_id", linkedAt: T0 + 40 },
      ]);
      await store.linkCustomerVisitors("site_1", "cus_2", [
        { visitorId: "v1", via: "customer", linkedAt: T0 },
      ]);
      await store.linkCustomerVisitors("site_1", "cus_2", []);
      // Each write of links was named to the analytics feed first (none for an empty one).
      expect(f.analyticsLog.docs.map((d) => [d.kind, d.keys])).toEqual([
        ...Array.from({ length: 6 }, () => ["links", ["cus_1"]]),
        ["links", ["cus_2"]],
      ]);
      expect(await store.getCustomerVisitors("site_1", "cus_1")).toEqual([
        { visitorId: "v2", via: "visitor_id", linkedAt: T0 + 5 },
        { visitorId: "v1", via: "user_id", linkedAt: T0 + 10 },
        { visitorId: "v3", via: "visitor_id", linkedAt: T0 + 30 },
      ]);
      expect(f.customerVisitors.docs).toHaveLength(4);
      expect(foldLinks([])).toEqual([]);
      // A link's via constant is a literal, and the rank list too.
      const op = linkUpsert("s", "c", { visitorId: "v", via: "customer", linkedAt: T0 });
      expect(JSON.stringify(op)).toContain('"$literal":["user_id","visitor_id","customer"]');
    });

    it("sets and clears the attribution of a customer and its payments; re-sends keep it", async () => {
      const { f, c } = fakeCollections();
      const store = createMongoAttribution(c);
      f.payments.docs = [
        run("payments", undefined, paymentUpsert([pay("p1", "cus_1")])),
        run("payments", undefined, paymentUpsert([pay("p2", "cus_1")])),
        run("payments", undefined, paymentUpsert([pay("p3", "cus_2")])),
      ];
      f.customers.docs = [
        run(
          "customers",
          undefined,
          customerUpsert([{ siteId: "site_1", customerId: "cus_1", at: T0 }]),
        ),
      ];
      const attribution: Attribution = {
        channel: "Email",
        source: "$newsletter",
        landingPage: "https://example.com/",
        visitorId: "v",
        via: "visitor_id",
        touchedAt: T0 - 1,
      };
      await store.setAttribution("site_1", "cus_1", attribution);
      const stored = attributionToDoc(attribution);
      expect(stored).toEqual({
        channel: "Email",
        source: "$newsletter",
        landing_page: "https://example.com/",
        visitor_id: "v",
        via: "visitor_id",
        touched_at: new Date(T0 - 1),
      });
      expect(f.customers.docs[0]?.attribution).toEqual(stored);
      expect(f.payments.docs.map((d) => [d.payment_id, d.channel, d.attribution])).toEqual([
        ["p1", "Email", stored],
        ["p2", "Email", stored],
        ["p3", "unattributed", undefined],
      ]);
      expect(attributionFromDoc(f.customers.docs[0]?.attribution as never)).toEqual(attribution);
      // A re-send of p1 leaves attribution and channel alone.
      const resent = run("payments", f.payments.docs[0], paymentUpsert([pay("p1", "cus_1")]));
      expect(resent.attribution).toEqual(stored);
      expect(resent.channel).toBe("Email");
      await store.setAttribution("site_1", "cus_1", undefined);
      expect(f.customers.docs[0]).not.toHaveProperty("attribution");
      expect(f.payments.docs.map((d) => [d.channel, "attribution" in d])).toEqual([
        ["unattributed", false],
        ["unattributed", false],
        ["unattributed", false],
      ]);
      expect(attributionFromDoc(undefined)).toBeUndefined();
      expect(attributionUpdates(undefined)).toEqual({
        customer: { $unset: { attribution: "" } },
        payments: {
          $set: { channel: "unattributed" },
          $unset: { attribution: "" },
          $currentDate: { u: true },
        },
      });
    });

    it("a stale writer cannot replace a better attribution (conditional on rank, per document)", async () => {
      const { f, c } = fakeCollections();
      const store = createMongoAttribution(c);
      f.payments.docs = [run("payments", undefined, paymentUpsert([pay("p1")]))];
      f.customers.docs = [
        run(
          "customers",
          undefined,
          customerUpsert([{ siteId: "site_1", customerId: "cus_1", at: T0 }]),
        ),
      ];
      const touch = (visitorId: string, ts: number, internal: boolean, via: LinkKind) => ({
        attribution: {
          channel: internal ? "Direct" : "Email",
          landingPage: "https://example.com/",
          visitorId,
          via,
          touchedAt: ts,
        } satisfies Attribution,
        rank: attributionRank({ ts, internal }, via, visitorId),
      });
      const visitorOf = (d: Doc | undefined) => (d?.attribution as Doc | undefined)?.visitor_id;
      const stored = () => [visitorOf(f.customers.docs[0]), visitorOf(f.payments.docs[0])];
      // Process A read the newer data (an earlier touch) and wrote first.
      const newer = touch("v_early", T0 - 10_000, false, "user_id");
      await store.setAttribution("site_1", "cus_1", newer.attribution, newer.rank);
      expect(stored()).toEqual(["v_early", "v_early"]);
      // Process B had read before that touch arrived and writes last: kept out.
      const stale = touch("v_late", T0, false, "user_id");
      await store.setAttribution("site_1", "cus_1", stale.attribution, stale.rank);
      expect(stored()).toEqual(["v_early", "v_early"]);
      // Nor can a stale "unattributed", nor an internal touch, however early.
      await store.setAttribution("site_1", "cus_1", undefined, UNATTRIBUTED_RANK);
      const internal = touch("v_internal", T0 - 99_000, true, "user_id");
      await store.setAttribution("site_1", "cus_1", internal.attribution, internal.rank);
      expect(stored()).toEqual(["v_early", "v_early"]);
      // The same attribution again is written (idempotent); a better one replaces it.
      await store.setAttribution("site_1", "cus_1", newer.attribution, newer.rank);
      const better = touch("v_earliest", T0 - 20_000, false, "customer");
      await store.setAttribution("site_1", "cus_1", better.attribution, better.rank);
      expect(stored()).toEqual(["v_earliest", "v_earliest"]);
      expect(f.customers.docs[0]?.attribution_rank).toBe(better.rank);
      expect(f.payments.docs[0]?.channel).toBe("Email");
    });

    it("ranks sort like the rule: non-internal first, then earlier, then stronger link, then visitor id", () => {
      const r = (internal: boolean, ts: number, via: LinkKind, v = "v") =>
        attributionRank({ internal, ts }, via, v);
      const ordered = [
        r(false, 5, "user_id", "a"),
        r(false, 5, "user_id", "b"),
        r(false, 5, "visitor_id", "a"),
        r(false, 5, "customer", "a"),
        r(false, 1_700_000_000_000, "user_id"),
        r(true, 1, "user_id"),
        r(true, 2, "user_id"),
        UNATTRIBUTED_RANK,
      ];
      expect([...ordered].reverse().sort()).toEqual(ordered);
    });

    it("finds customers to re-attribute by linked visitor and by user id", async () => {
      const { f, c } = fakeCollections();
      const store = createMongoAttribution(c);
      f.customers.docs = [
        run(
          "customers",
          undefined,
          customerUpsert([{ siteId: "site_1", customerId: "c_b", userId: "u1", at: T0 }]),
        ),
        run(
          "customers",
          undefined,
          customerUpsert([{ siteId: "site_2", customerId: "c_x", userId: "u1", at: T0 }]),
        ),
      ];
      await store.linkCustomerVisitors("site_1", "c_c", [
        { visitorId: "v1", via: "customer", linkedAt: T0 },
      ]);
      await store.linkCustomerVisitors("site_1", "c_a", [
        { visitorId: "v1", via: "customer", linkedAt: T0 },
      ]);
      const find = (visitorIds: string[], userIds: string[]) =>
        store.findCustomersToReattribute("site_1", { visitorIds, userIds });
      expect(await find(["v1"], [])).toEqual(["c_a", "c_c"]);
      expect(await find([], ["u1"])).toEqual(["c_b"]);
      expect(await find(["v1", "v1"], ["u1", "u2"])).toEqual(["c_a", "c_b", "c_c"]);
      expect(await find([], [])).toEqual([]);
    });

    it("MRR: running active and past_due subscriptions with amount and interval, exact sums", async () => {
      const { f, c } = fakeCollections();
      const store = createMongoAttribution(c);
      const at = T0 + 100;
      let n = 0;
      const s = (over: Partial<SubscriptionPatch>) =>
        run(
          "subscriptions",
          undefined,
          subscriptionUpsert([
            {
              siteId: "site_1",
              subscriptionId: `s${n++}`,
              customerId: "cus_1",
              currency: "USD",
              interval: "month",
              amountMinor: 1000,
              status: "active",
              startedAt: T0,
              defaults: { status: "active", startedAt: T0 },
              at: T0,
              ...over,
            },
          ]),
        );
      f.subscriptions.docs = [
        s({}),
        s({ status: "past_due", startedAt: at, amountMinor: 1 }),
        s({ endedAt: at + 1, amountMinor: 2 }),
        s({ interval: "week", amountMinor: 9_000_000_000_000_001 }),
        s({ interval: "week", amountMinor: 9_000_000_000_000_003 }),
        s({ currency: "EUR" }),
        s({ status: "trialing" }),
        s({ status: "canceled" }),
        s({ startedAt: at + 1 }),
        s({ endedAt: at }),
        s({ amountMinor: undefined }),
        s({ interval: undefined }),
        s({ siteId: "site_2" }),
      ];
      expect(await store.mrrTotals("site_1", at)).toEqual([
        { currency: "EUR", interval: "month", amountMinor: 1000n, subscriptions: 1 },
        { currency: "USD", interval: "month", amountMinor: 1003n, subscriptions: 3 },
        {
          currency: "USD",
          interval: "week",
          amountMinor: 18_000_000_000_000_004n,
          subscriptions: 2,
        },
      ]);
      expect(mrrRow({ currency: "USD", interval: "day", amount: 0, subscriptions: 0 })).toEqual({
        currency: "USD",
        interval: "day",
        amountMinor: 0n,
        subscriptions: 0,
      });
    });

    it("converts sums to bigint exactly and refuses what cannot be exact", () => {
      expect(toBigInt(Long.fromString("10000000000000045"))).toBe(10_000_000_000_000_045n);
      expect(toBigInt(Long.fromString("-9223372036854775808"))).toBe(-(2n ** 63n));
      expect(toBigInt(42)).toBe(42n);
      expect(toBigInt(7n)).toBe(7n);
      expect(() => toBigInt(2 ** 64)).toThrow(RangeError);
      expect(() => toBigInt(1.5)).toThrow(RangeError);
      expect(() => toBigInt(null)).toThrow(RangeError);
    });

    it("touch precedence matches the rule: non-internal first, then earlier, ties keep", () => {
      expect(isBetterTouch({ internal: false, ts: 9 }, { internal: true, ts: 1 })).toBe(true);
      expect(isBetterTouch({ internal: true, ts: 1 }, { internal: false, ts: 9 })).toBe(false);
      expect(isBetterTouch({ internal: true, ts: 1 }, { internal: true, ts: 2 })).toBe(true);
      expect(isBetterTouch({ internal: false, ts: 2 }, { internal: false, ts: 2 })).toBe(false);
      expect(isBetterTouch({ internal: true, ts: 2 }, undefined)).toBe(true);
      const { update } = touchUpdate(touch("v"));
      expect(update).toHaveLength(1);
    });
  });
});
