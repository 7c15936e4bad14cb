/**
 * Erasure in MongoDB. Events live in buckets (event-buckets.ts): erased
 * events are filtered out of their buckets, and a bucket left with none is
 * deleted (the validator wants at least one event). MongoDB has no
 * transaction here, so each erasure is ordered to be safe to run again: what
 * points at a record goes before the record itself.
 */
import { randomBytes } from "node:crypto";
import { Binary, type Document, type Filter } from "mongodb";
import { UNATTRIBUTED } from "../../domain/vocabulary.js";
import type { StoreErasurePart } from "../port.js";
import { noteChanges } from "./analytics-log.js";
import type { EventBucketDoc } from "./documents.js";
import { retryDuplicates } from "./retry.js";
import type { Collections } from "./schema.js";

/**
 * Which events to remove: as a query on an event, its complement (an event
 * to keep, written out with `$nin`/`$ne`/`$or`, which `$elemMatch` takes in
 * every server version), and as an aggregation expression on `$$this`.
 */
interface EventMatch {
  query: Document;
  keep: Document;
  expr: Document;
}

/**
 * Removes a site's events matching `m` from their buckets; returns how many.
 * Buckets are found by the site's prefix of `site_recent`, then filtered on
 * the server: an erasure reads the site's buckets, never ships them.
 */
export async function removeBucketEvents(
  c: Collections,
  siteId: string,
  m: EventMatch,
): Promise<number> {
  const holding: Filter<EventBucketDoc> = { site_id: siteId, events: { $elemMatch: m.query } };
  const [counted] = await c.events
    .aggregate<{ n: number }>([
      { $match: holding },
      { $unwind: "$events" },
      { $replaceRoot: { newRoot: "$events" } },
      { $match: m.query },
      { $count: "n" },
    ])
    .toArray();
  const n = counted?.n ?? 0;
  if (n === 0) return 0;
  // Buckets holding only matching events go whole; the others lose those events.
  // Each document's condition is evaluated as it is deleted: a bucket that an append
  // gave an event to keep meanwhile is not deleted, and the update below filters it.
  const whole = { site_id: siteId, events: { $not: { $elemMatch: m.keep } } };
  const doomed = await c.events
    .find(whole as Filter<EventBucketDoc>, { projection: { _id: 1 } })
    .toArray();
  // The analytics feed learns of the deletions first (a deleted bucket leaves no marker).
  await noteChanges(
    c,
    "bucket",
    siteId,
    doomed.flatMap((b) => (b._id ? [b._id.toHexString()] : [])),
  );
  if (doomed.length > 0) {
    await c.events.deleteMany({
      ...whole,
      _id: { $in: doomed.map((b) => b._id) },
    } as Filter<EventBucketDoc>);
  }
  await c.events.updateMany(holding, [
    { $set: { events: { $filter: { input: "$events", cond: { $not: [m.expr] } } } } },
    // `u`: the analytics feed's marker, the server's time of this change.
    { $set: { n: { $size: "$events" }, u: "$$NOW" } },
  ]);
  return n;
}

export function createMongoErasure(c: Collections): StoreErasurePart {
  return {
    async eraseCustomer(siteId, customerId, pseudonym) {
      const who = { site_id: siteId, customer_id: customerId };
      const subscriptions = (
        await c.subscriptions.updateMany(who, { $set: { customer_id: pseudonym } })
      ).modifiedCount;
      // The channel stays, so revenue by channel does not change.
      const payments = (
        await c.payments.updateMany(who, {
          $set: { customer_id: pseudonym, metadata: [] },
          $unset: { attribution: "", attribution_rank: "" },
          $currentDate: { u: true },
        })
      ).modifiedCount;
      await noteChanges(c, "links", siteId, [customerId]);
      const customerLinks = (await c.customerVisitors.deleteMany(who)).deletedCount;
      const customers = (await c.customers.deleteOne(who)).deletedCount;
      return { customers, payments, subscriptions, customerLinks };
    },

    async eraseUserLinks(siteId, userId) {
      const events = await removeBucketEvents(c, siteId, {
        query: { user_id: userId, name: "$identify" },
        keep: { $or: [{ user_id: { $ne: userId } }, { name: { $ne: "$identify" } }] },
        // $literal: in an expression a string starting with "$" is a field path.
        expr: {
          $and: [
            { $eq: ["$$this.user_id", { $literal: userId }] },
            { $eq: ["$$this.name", { $literal: "$identify" }] },
          ],
        },
      });
      const identityLinks = (await c.identities.deleteMany({ site_id: siteId, user_id: userId }))
        .deletedCount;
      const customers = (
        await c.customers
          .find({ site_id: siteId, user_id: userId }, { projection: { customer_id: 1 } })
          .sort({ customer_id: 1 })
          .toArray()
      ).map((d) => d.customer_id);
      return { identityLinks, events, customers };
    },

    async eraseVisitors(siteId, visitorIds, names) {
      const ids = [...new Set(visitorIds)];
      const inIds = { $in: ids };
      const customers = (
        (await c.customerVisitors.distinct("customer_id", {
          site_id: siteId,
          visitor_id: inIds,
        })) as string[]
      ).sort();
      const events = await removeBucketEvents(c, siteId, {
        query: { visitor_id: inIds },
        keep: { visitor_id: { $nin: ids } },
        expr: { $in: ["$$this.visitor_id", { $literal: ids }] },
      });
      const site = { site_id: siteId };
      const touches = (await c.touches.deleteMany({ ...site, visitor_id: inIds })).deletedCount;
      const identityLinks = (await c.identities.deleteMany({ ...site, visitor_id: inIds }))
        .deletedCount;
      // The analytics feed learns of the links and stitches about to go first.
      await noteChanges(c, "links", siteId, customers);
      await noteChanges(c, "stitches", siteId, ids);
      const customerLinks = (await c.customerVisitors.deleteMany({ ...site, visitor_id: inIds }))
        .deletedCount;
      const stitches = (
        await c.stitches.deleteMany({
          ...site,
          $or: [{ visitor_id: inIds }, { persistent_id: inIds }],
        })
      ).deletedCount;
      await c.customers.updateMany(
        { ...site, visitor_id: { $in: [...new Set(names)] } },
        { $unset: { visitor_id: "" } },
      );
      if (customers.length > 0) {
        // The rank goes too: the attribution computed again from what remains may rank lower.
        const theirs = { ...site, customer_id: { $in: customers } };
        await c.payments.updateMany(theirs, {
          $set: { channel: UNATTRIBUTED },
          $unset: { attribution: "", attribution_rank: "" },
          $currentDate: { u: true },
        });
        await c.customers.updateMany(theirs, { $unset: { attribution: "", attribution_rank: "" } });
      }
      return { events, touches, identityLinks, customerLinks, stitches, customers };
    },

    async auditKey() {
      const key = { _id: "erasure_audit" };
      // The first writer's random key wins ($setOnInsert); a concurrent first
      // upsert that loses the race on _id (E11000) is run again and reads it.
      await retryDuplicates(() =>
        c.settings.updateOne(
          key,
          { $setOnInsert: { secret: new Binary(randomBytes(32)) } },
          { upsert: true },
        ),
      );
      const doc = await c.settings.findOne(key);
      if (!doc) throw new Error("the erasure audit key was not stored");
      return new Uint8Array(doc.secret.buffer);
    },
  };
}
