/**
 * Checks of the MongoDB adapter that need no server: URL parsing, the shape
 * of the update documents it sends, and that the documents those updates
 * produce pass the collection validators. A small model of the server's
 * upsert rules (equality fields of the filter, $set, $setOnInsert, $unset,
 * $inc, $min, $max, $push/$each) applies the updates; the contract suite
 * (mongodb.test.ts) is the real check when MONGODB_URI is set.
 */
import { Long } from "mongodb";
import { describe, expect, it } from "vitest";
import { type EventDoc, fromPairs, toLong, toPairs } from "../../src/store/mongo/documents.js";
import {
  BUCKET_CAP,
  type EventUnit,
  eventFromDoc,
  eventToDoc,
  NewestEvents,
  nextQ,
  planAppends,
} from "../../src/store/mongo/event-buckets.js";
import { createMongoStore, dbNameFromUrl } from "../../src/store/mongo/mongo-store.js";
import {
  customerUpsert,
  paymentUpsert,
  subscriptionUpsert,
} from "../../src/store/mongo/payments.js";
import { COLLECTIONS } from "../../src/store/mongo/schema.js";
import type { EventRecord, PaymentRecord, SubscriptionPatch } from "../../src/store/port.js";

type Doc = Record<string, unknown>;

const T0 = Date.UTC(2025, 5, 1);

function isPlainObject(v: unknown): v is Doc {
  return typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

function compare(a: unknown, b: unknown): number {
  const n = (v: unknown) => (v instanceof Date ? v.getTime() : Number(v));
  return n(a) - n(b);
}

/** What the server does with one upsert, on `existing` (or on insert when undefined). */
function applyUpsert(existing: Doc | undefined, filter: Doc, update: Doc): Doc {
  const doc: Doc = existing ? { ...existing } : {};
  if (!existing) {
    for (const [k, v] of Object.entries(filter)) {
      if (!(isPlainObject(v) && Object.keys(v).some((key) => key.startsWith("$")))) doc[k] = v;
    }
  }
  const touched = new Set<string>();
  for (const [op, fields] of Object.entries(update)) {
    for (const [k, v] of Object.entries(fields as Doc)) {
      // The server refuses one path in two operators ("would create a conflict").
      if (touched.has(k)) throw new Error(`conflict on ${k}`);
      touched.add(k);
      if (k.startsWith("$") || k.includes(".")) throw new Error(`bad field ${k}`);
      if (v === undefined) throw new Error(`undefined value for ${k}`);
      switch (op) {
        case "$set":
          doc[k] = v;
          break;
        case "$setOnInsert":
          if (!existing) doc[k] = v;
          break;
        case "$unset":
          delete doc[k];
          break;
        case "$inc":
          doc[k] = ((doc[k] as number | undefined) ?? 0) + (v as number);
          break;
        case "$min":
          if (doc[k] === undefined || compare(v, doc[k]) < 0) doc[k] = v;
          break;
        case "$max":
          if (doc[k] === undefined || compare(v, doc[k]) > 0) doc[k] = v;
          break;
        case "$push":
          doc[k] = [
            ...((doc[k] as unknown[] | undefined) ?? []),
            ...(v as { $each: unknown[] }).$each,
          ];
          break;
        default:
          throw new Error(`operator ${op} not modelled`);
      }
    }
  }
  return doc;
}

function bsonTypeOf(v: unknown): string[] {
  if (typeof v === "string") return ["string"];
  if (typeof v === "boolean") return ["bool"];
  if (v instanceof Date) return ["date"];
  if (v instanceof Long) return ["long", "number"];
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
  const doc = applyUpsert(existing, updateOne.filter, updateOne.update);
  expect(validate(schemaOf(collection), doc)).toEqual([]);
  return doc;
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

  it("fails fast when no server answers", async () => {
    const started = Date.now();
    await expect(createMongoStore("mongodb://127.0.0.1:9/ingest")).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(15_000);
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
      "events",
      "identities",
      "salts",
      "customers",
      "subscriptions",
      "payments",
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
      "identities.site_user_visitor_unique",
      "customers.site_customer_unique",
      "subscriptions.site_subscription_unique",
      "payments.site_payment_unique",
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

    it("takes strictly increasing sequence numbers", () => {
      const qs = Array.from({ length: 1000 }, () => nextQ());
      for (let i = 1; i < qs.length; i++) expect(qs[i]).toBeGreaterThan(qs[i - 1] as number);
      expect(Number.isSafeInteger(qs.at(-1))).toBe(true);
    });

    it("plans one append per site and chunk, never splitting a group", () => {
      const ev = (siteId: string, name: string): EventRecord => ({ ...full, siteId, name });
      const unit = (group: number, siteId: string, count: number): EventUnit => ({
        group,
        siteId,
        events: Array.from({ length: count }, (_, i) => ev(siteId, `${group}-${i}`)),
      });
      const now = Date.UTC(2025, 5, 1, 13, 45);
      const appends = planAppends(
        [unit(0, "a", 150), unit(1, "b", 10), unit(2, "a", 40), unit(3, "a", 20), unit(4, "a", 0)],
        now,
      );
      expect(appends.map((a) => a.groups)).toEqual([[0, 2], [3], [1]]);
      const ops = appends.map(
        (a) => (a.operation as { updateOne: { filter: Doc; update: Doc } }).updateOne,
      );
      expect(ops[0]?.filter).toEqual({
        site_id: "a",
        hour: new Date(Date.UTC(2025, 5, 1, 13)),
        n: { $lte: BUCKET_CAP - 190 },
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
      expect([...qs].sort((x, y) => x - y)).toEqual(qs);
      expect(ops[0]?.update.$min).toEqual({ min_q: qs[0] });
      expect(ops[0]?.update.$max).toEqual({ max_q: qs.at(-1) });
      expect(ops[0]?.update.$inc).toEqual({ n: 190 });
      expect(pushed(ops[1])[0]?.q).toBeGreaterThan(qs.at(-1) as number);

      // The buckets these appends make pass the validator, and fill up to the cap.
      const bucket = run("events", undefined, appends[0]?.operation);
      expect(bucket.n).toBe(190);
      const next = planAppends([unit(5, "a", 10)], now)[0]?.operation;
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
});
