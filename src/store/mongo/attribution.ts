/**
 * First touches, customer-visitor links, attribution and revenue reports in
 * MongoDB (docs/mongodb.md, "Attribution" and "Reports").
 *
 * The conditional writes are update pipelines: a stage's expressions all read
 * the document as it was before the stage, so "replace the stored touch only
 * when the candidate is better" or "keep the strongest link" is one
 * single-document, hence atomic, update, whatever runs at once.
 */
import { type AnyBulkWriteOperation, type Document, Long, type UpdateFilter } from "mongodb";
import {
  isBetterTouch,
  LINK_KINDS,
  linkRank,
  type TouchRank,
} from "../../domain/attribution/ranking.js";
import { RECURRING_STATUSES, UNATTRIBUTED } from "../../domain/vocabulary.js";
import type {
  Attribution,
  CustomerVisitorLink,
  MrrRow,
  StoreAttributionPart,
  VisitorTouch,
} from "../port.js";
import { noteChanges } from "./analytics-log.js";
import {
  attributionToDoc,
  type CustomerDoc,
  type CustomerVisitorDoc,
  opt,
  type PaymentDoc,
  toDate,
  type VisitorTouchDoc,
} from "./documents.js";
import { bulkUpsert, retryDuplicates } from "./retry.js";
import type { Collections } from "./schema.js";

/**
 * A value as a constant of an aggregation expression. Without `$literal`, a
 * string starting with `$` (a caller's utm_source, a landing page) would be
 * read as a field path.
 */
function lit(value: unknown): Document {
  return { $literal: value };
}

export { isBetterTouch, type TouchRank };

/** The stored form of a touch. */
export function touchToDoc(t: VisitorTouch): VisitorTouchDoc {
  const d: VisitorTouchDoc = {
    site_id: t.siteId,
    visitor_id: t.visitorId,
    ts: toDate(t.ts),
    internal: t.internal,
    channel: t.channel,
    landing_page: t.landingPage,
  };
  if (t.source !== undefined) d.source = t.source;
  if (t.medium !== undefined) d.medium = t.medium;
  if (t.campaign !== undefined) d.campaign = t.campaign;
  return d;
}

export function touchFromDoc(d: VisitorTouchDoc): VisitorTouch {
  return {
    siteId: d.site_id,
    visitorId: d.visitor_id,
    ts: d.ts.getTime(),
    internal: d.internal,
    channel: d.channel,
    source: opt(d.source),
    medium: opt(d.medium),
    campaign: opt(d.campaign),
    landingPage: d.landing_page,
  };
}

/** The fields of a touch that a better one replaces (optional ones removed when it lacks them). */
const TOUCH_FIELDS = ["ts", "internal", "channel", "source", "medium", "campaign", "landing_page"];

/**
 * The conditional upsert of a candidate first touch: one pipeline stage that
 * keeps every field as stored unless the candidate is better than the stored
 * touch (or there is none), in which case every field takes the candidate's
 * value. On insert the stage sees only `site_id` and `visitor_id` (from the
 * filter), so the candidate is written whole.
 */
export function touchUpdate(t: VisitorTouch): { filter: Document; update: Document[] } {
  const doc = touchToDoc(t);
  // Stored ts later than the candidate's (false when there is no stored touch).
  const storedLater = { $gt: ["$ts", lit(doc.ts)] };
  const storedInternal = { $eq: ["$internal", true] };
  const better = {
    $or: [
      { $eq: [{ $type: "$ts" }, "missing"] },
      t.internal
        ? // An internal candidate beats only an internal touch, and only an earlier one.
          { $and: [storedInternal, storedLater] }
        : // A non-internal one beats any internal touch, and a later non-internal one.
          { $or: [storedInternal, storedLater] },
    ],
  };
  const set: Document = {};
  for (const field of TOUCH_FIELDS) {
    const value = (doc as unknown as Record<string, unknown>)[field];
    // `$$REMOVE` drops the field; `"$field"` of a missing field leaves it missing.
    set[field] = { $cond: [better, value === undefined ? "$$REMOVE" : lit(value), `$${field}`] };
  }
  return { filter: { site_id: t.siteId, visitor_id: t.visitorId }, update: [{ $set: set }] };
}

/** The candidate touches of one accepted group, in the group's order. */
export interface TouchCandidates {
  group: number;
  touches: readonly VisitorTouch[];
}

/**
 * A batch's touches folded into one write per (site, visitor): the best
 * candidate, the first of equals (ties keep what came first). `changes`
 * then replays every candidate, in commit order, against the touch stored
 * before that write, which gives each group's visitors exactly as if the
 * candidates had been written one by one.
 */
export interface TouchPlan {
  writes: VisitorTouch[];
  /** `before[i]`: the stored touch just before `writes[i]` (undefined: none). Group index → visitor ids. */
  changes(before: readonly (TouchRank | undefined)[]): Map<number, string[]>;
}

export function planTouches(candidates: readonly TouchCandidates[]): TouchPlan {
  const visitors = new Map<string, { best: VisitorTouch; seen: [number, number][] }>();
  candidates.forEach((g, gi) => {
    g.touches.forEach((t, ti) => {
      const key = JSON.stringify([t.siteId, t.visitorId]);
      const v = visitors.get(key);
      if (!v) visitors.set(key, { best: t, seen: [[gi, ti]] });
      else {
        v.seen.push([gi, ti]);
        if (isBetterTouch(t, v.best)) v.best = t;
      }
    });
  });
  const entries = [...visitors.values()];
  return {
    writes: entries.map((v) => v.best),
    changes(before) {
      const changed = candidates.map((g) => g.touches.map(() => false));
      entries.forEach((v, i) => {
        let current = before[i];
        for (const [gi, ti] of v.seen) {
          const t = candidates[gi]?.touches[ti] as VisitorTouch;
          if (isBetterTouch(t, current)) {
            (changed[gi] as boolean[])[ti] = true;
            current = t;
          }
        }
      });
      const out = new Map<number, string[]>();
      candidates.forEach((g, gi) => {
        const ids = g.touches.filter((_t, ti) => changed[gi]?.[ti]).map((t) => t.visitorId);
        if (ids.length > 0) out.set(g.group, ids);
      });
      return out;
    },
  };
}

/**
 * Writes the candidate touches of accepted groups and returns, per group
 * index, the visitors whose stored touch the group set or improved. One
 * `findOneAndUpdate` per distinct visitor, all at once: the conditional
 * pipeline makes the write atomic, and the document it returns (as it was
 * before the write) tells exactly what the write changed.
 */
export async function writeTouches(
  c: Collections,
  candidates: readonly TouchCandidates[],
): Promise<Map<number, string[]>> {
  const plan = planTouches(candidates);
  if (plan.writes.length === 0) return new Map();
  const before = await Promise.all(
    plan.writes.map(async (t) => {
      const { filter, update } = touchUpdate(t);
      // Two first touches of one visitor inserting at once: the unique index
      // refuses one (E11000), which, run again, finds the winner's touch.
      const d = await retryDuplicates(() =>
        c.touches.findOneAndUpdate(filter, update, {
          upsert: true,
          returnDocument: "before",
          projection: {
            _id: 0,
            ts: 1,
            internal: 1,
            channel: 1,
            source: 1,
            campaign: 1,
            landing_page: 1,
          },
        }),
      );
      return d ? touchFromDoc({ ...d, site_id: t.siteId, visitor_id: t.visitorId }) : undefined;
    }),
  );
  return plan.changes(before);
}

/**
 * The upsert of a customer-visitor link: `linked_at` only ever lowers
 * (`$min` ignores the missing field of a new link) and `via` only ever
 * strengthens; both read the stored values in the same stage.
 */
export function linkUpsert(
  siteId: string,
  customerId: string,
  link: CustomerVisitorLink,
): AnyBulkWriteOperation<CustomerVisitorDoc> {
  const stored = { $ifNull: ["$via", lit(link.via)] };
  const rank = linkRank(link.via);
  return {
    updateOne: {
      filter: { site_id: siteId, customer_id: customerId, visitor_id: link.visitorId },
      update: [
        {
          $set: {
            linked_at: { $min: ["$linked_at", lit(toDate(link.linkedAt))] },
            via: {
              $cond: [
                { $lt: [lit(rank), { $indexOfArray: [lit(LINK_KINDS), stored] }] },
                lit(link.via),
                stored,
              ],
            },
          },
        },
      ],
      upsert: true,
    },
  };
}

/** Links of one call folded per visitor (earliest time, strongest kind), in first-seen order. */
export function foldLinks(links: readonly CustomerVisitorLink[]): CustomerVisitorLink[] {
  const byVisitor = new Map<string, CustomerVisitorLink>();
  for (const l of links) {
    const seen = byVisitor.get(l.visitorId);
    if (!seen) {
      byVisitor.set(l.visitorId, { visitorId: l.visitorId, via: l.via, linkedAt: l.linkedAt });
      continue;
    }
    seen.linkedAt = Math.min(seen.linkedAt, l.linkedAt);
    if (linkRank(l.via) < linkRank(seen.via)) seen.via = l.via;
  }
  return [...byVisitor.values()];
}

/**
 * The updates of `setAttribution`: the customer's attribution, and its
 * payments' with their channel; with `rank`, stored next to it
 * (`attribution_rank`) for the next writer's condition.
 */
export function attributionUpdates(
  attribution: Attribution | undefined,
  rank?: string,
): {
  customer: UpdateFilter<CustomerDoc>;
  payments: UpdateFilter<PaymentDoc>;
} {
  const ranked = rank === undefined ? {} : { attribution_rank: rank };
  if (attribution === undefined) {
    return {
      customer: {
        ...(rank === undefined ? {} : { $set: ranked }),
        $unset: { attribution: "" },
      } as UpdateFilter<CustomerDoc>,
      // `u`: the analytics feed's marker (src/store/mongo/analytics-feed.ts).
      payments: {
        $set: { channel: UNATTRIBUTED, ...ranked },
        $unset: { attribution: "" },
        $currentDate: { u: true },
      },
    };
  }
  const doc = attributionToDoc(attribution);
  return {
    customer: { $set: { attribution: doc, ...ranked } },
    payments: {
      $set: { attribution: doc, channel: attribution.channel, ...ranked },
      $currentDate: { u: true },
    },
  };
}

/**
 * The condition of a ranked write: the document has no rank yet (never
 * attributed, or attributed before ranks existed), or one that is not
 * better. Ranks are strings that sort like the rule (binary comparison).
 */
export function rankCondition(rank: string): Document {
  return { $or: [{ attribution_rank: null }, { attribution_rank: { $gte: rank } }] };
}

/**
 * Subscriptions of a site counted in MRR at `at`, by currency and interval.
 * The `$match` scans `site_status_started` (site, the two statuses, started
 * at or before `at`); `$ne: null` and `ended_at: null` mirror SQL's IS NOT
 * NULL / IS NULL (absent fields).
 */
export function mrrPipeline(siteId: string, at: number): Document[] {
  return [
    {
      $match: {
        site_id: siteId,
        status: { $in: [...RECURRING_STATUSES] },
        started_at: { $lte: toDate(at) },
        amount_minor: { $ne: null },
        interval: { $ne: null },
        $or: [{ ended_at: null }, { ended_at: { $gt: toDate(at) } }],
      },
    },
    {
      $group: {
        _id: { currency: "$currency", interval: "$interval" },
        amount: { $sum: "$amount_minor" },
        subscriptions: { $sum: 1 },
      },
    },
    {
      $project: {
        _id: 0,
        currency: "$_id.currency",
        interval: "$_id.interval",
        amount: 1,
        subscriptions: 1,
      },
    },
    { $sort: { currency: 1, interval: 1 } },
  ];
}

/**
 * An integer from an aggregation back to a bigint, exactly: a long (read
 * with `promoteLongs: false`, so never rounded through a double), an int32,
 * or a bigint. A double can only come from a `$sum` that overflowed int64,
 * which cannot be exact: refused.
 */
export function toBigInt(value: unknown): bigint {
  if (typeof value === "bigint") return value;
  if (value instanceof Long) return value.toBigInt();
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  throw new RangeError(`expected an exact integer sum, got ${String(value)}`);
}

/** A count from an aggregation (int32, or long for huge counts) to a number. */
function toCount(value: unknown): number {
  return Number(toBigInt(value));
}

/** A row of mrrPipeline to the port's. */
export function mrrRow(r: Document): MrrRow {
  return {
    currency: r.currency as string,
    interval: r.interval as MrrRow["interval"],
    amountMinor: toBigInt(r.amount),
    subscriptions: toCount(r.subscriptions),
  };
}

/** Aggregation options of the reports: longs stay longs, so sums past 2^53 stay exact. */
const EXACT = { promoteLongs: false } as const;

export function createMongoAttribution(c: Collections): StoreAttributionPart {
  return {
    async getFirstTouches(siteId, visitorIds) {
      const ids = [...new Set(visitorIds)];
      if (ids.length === 0) return [];
      const docs = await c.touches.find({ site_id: siteId, visitor_id: { $in: ids } }).toArray();
      return docs.map(touchFromDoc);
    },

    async linkCustomerVisitors(siteId, customerId, links) {
      const folded = foldLinks(links);
      if (folded.length === 0) return;
      await noteChanges(c, "links", siteId, [customerId]);
      await bulkUpsert(
        c.customerVisitors,
        folded.map((l) => linkUpsert(siteId, customerId, l)),
      );
    },

    async getCustomerVisitors(siteId, customerId) {
      const docs = await c.customerVisitors
        .find({ site_id: siteId, customer_id: customerId })
        .sort({ linked_at: 1, visitor_id: 1 })
        .toArray();
      return docs.map(
        (d): CustomerVisitorLink => ({
          visitorId: d.visitor_id,
          via: d.via,
          linkedAt: d.linked_at.getTime(),
        }),
      );
    },

    async findCustomersToReattribute(siteId, query) {
      const visitorIds = [...new Set(query.visitorIds)];
      const userIds = [...new Set(query.userIds)];
      const [byVisitor, byUser] = await Promise.all([
        visitorIds.length === 0
          ? []
          : c.customerVisitors.distinct("customer_id", {
              site_id: siteId,
              visitor_id: { $in: visitorIds },
            }),
        userIds.length === 0
          ? []
          : c.customers.distinct("customer_id", { site_id: siteId, user_id: { $in: userIds } }),
      ]);
      return [...new Set<string>([...byVisitor, ...byUser])].sort();
    },

    async setAttribution(siteId, customerId, attribution, rank) {
      const u = attributionUpdates(attribution, rank);
      // Conditional, per document and atomic: a writer that computed from
      // older links and touches (a worse rank) leaves a better stored
      // attribution alone, whatever the order in which processes write.
      const when = rank === undefined ? {} : rankCondition(rank);
      // Payments first, the customer last: both are idempotent, and a failure
      // in between is completed by the caller's retry (or the next payment).
      await c.payments.updateMany(
        { site_id: siteId, customer_id: customerId, ...when },
        u.payments,
      );
      await c.customers.updateOne(
        { site_id: siteId, customer_id: customerId, ...when },
        u.customer,
      );
    },

    async mrrTotals(siteId, at) {
      const rows = await c.subscriptions.aggregate(mrrPipeline(siteId, at), EXACT).toArray();
      return rows.map(mrrRow);
    },
  };
}
