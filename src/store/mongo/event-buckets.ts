/**
 * Event bucketing: a site's events are appended to bucket documents of at
 * most BUCKET_CAP events, one series of buckets per UTC hour of insertion.
 * A bucket keeps `min_q`/`max_q`, the range of its events' insertion
 * sequence, so the newest events are found from an index on
 * (site_id, max_q) without unpacking old buckets. docs/mongodb.md weighs this
 * against native time-series collections.
 */
import type { AnyBulkWriteOperation, ObjectId } from "mongodb";
import { EVENT_FIELD_TABLE, type EventFieldKind } from "../../domain/store/event-fields.js";
import type { EventRecord } from "../port.js";
import {
  type EventBucketDoc,
  type EventDoc,
  fromPairs,
  type Pair,
  toDate,
  toPairs,
} from "./documents.js";

/**
 * Most events in one bucket. Events are at most ~8 KB (the API's body limit),
 * so a full bucket stays far below the 16 MB document limit, and a bucket is
 * small enough that appending to it (which rewrites it) stays cheap.
 */
export const BUCKET_CAP = 200;

const HOUR_MS = 3_600_000;

/** A record's value as stored, by kind (undefined: not stored). */
const TO_DOC: Record<EventFieldKind, (v: never) => unknown> = {
  text: (v: string) => v,
  integer: (v: number) => v,
  time: (v: number) => toDate(v),
  json: (v: Record<string, unknown>) => JSON.stringify(v),
  // An empty map is stored as nothing, as in SQLite.
  map: (v: Record<string, string>) => (Object.keys(v).length > 0 ? toPairs(v) : undefined),
};

/** A stored value back to the record's, by kind; null (by hand) reads as absent. */
const FROM_DOC: Record<EventFieldKind, (v: never) => unknown> = {
  text: (v: string) => v,
  integer: (v: number) => v,
  time: (v: Date) => v.getTime(),
  json: (v: string) => JSON.parse(v),
  map: (v: Pair[]) => fromPairs(v),
};

/** The stored form of an event, tagged with its insertion sequence (fields from event-fields.ts). */
export function eventToDoc(e: EventRecord, q: number): EventDoc {
  const doc: Record<string, unknown> = { q };
  const record = e as unknown as Record<string, unknown>;
  for (const f of EVENT_FIELD_TABLE) {
    const v = record[f.field];
    if (v === undefined) continue;
    const stored = TO_DOC[f.kind](v as never);
    if (stored !== undefined) doc[f.stored] = stored;
  }
  return doc as EventDoc;
}

/** An event of a bucket of `siteId` back to the port's record. */
export function eventFromDoc(siteId: string, d: EventDoc): EventRecord {
  const e: Record<string, unknown> = { siteId };
  const doc = d as unknown as Record<string, unknown>;
  for (const f of EVENT_FIELD_TABLE) {
    const v = doc[f.stored];
    e[f.field] = v === undefined || v === null ? undefined : FROM_DOC[f.kind](v as never);
  }
  return e as EventRecord;
}

/** The events of one accepted group for one site. */
export interface EventUnit {
  /** Index of the group in the commitEvents call. */
  group: number;
  /** The group's receipt: the same for all units of one group. */
  receipt: ObjectId;
  siteId: string;
  events: EventRecord[];
}

/** One append to a bucket, with the groups whose events it carries. */
export interface BucketAppend {
  operation: AnyBulkWriteOperation<EventBucketDoc>;
  groups: number[];
}

/** The server's duplicate-key error code (an append whose receipt is already stored). */
export const RECEIPT_TAKEN = 11000;

/**
 * Turns units (in commit order) into bucket appends: per site, consecutive
 * units share one append of at most BUCKET_CAP events, and a unit is never
 * split, so each group's events for a site land in one single-document
 * (hence atomic) update. Events are numbered from `firstQ` (a block the
 * server's counter handed out) in commit order.
 */
export function planAppends(
  units: readonly EventUnit[],
  now: number,
  firstQ: number,
): BucketAppend[] {
  let q = firstQ;
  const hour = new Date(Math.floor(now / HOUR_MS) * HOUR_MS);
  const bySite = new Map<string, EventUnit[][]>();
  for (const unit of units) {
    if (unit.events.length === 0) continue;
    let chunks = bySite.get(unit.siteId);
    if (!chunks) {
      chunks = [];
      bySite.set(unit.siteId, chunks);
    }
    const last = chunks.at(-1);
    const size = last ? last.reduce((n, u) => n + u.events.length, 0) : 0;
    if (last && size + unit.events.length <= BUCKET_CAP) last.push(unit);
    else chunks.push([unit]);
  }
  const appends: BucketAppend[] = [];
  for (const [siteId, chunks] of bySite) {
    for (const chunk of chunks) {
      const docs = chunk.flatMap((u) => u.events.map((e) => eventToDoc(e, q++)));
      const k = docs.length;
      const receipts = [...new Set(chunk.map((u) => u.receipt))];
      appends.push({
        groups: [...new Set(chunk.map((u) => u.group))],
        operation: {
          updateOne: {
            // A bucket of this site and hour with room for all k events; when
            // there is none, the upsert opens a new bucket (site_id and hour
            // come from the filter's equalities, _id is a new ObjectId). No
            // unique index on the bucket key, so racing writers may at worst
            // open two buckets for the hour. The receipts' unique index makes
            // the append idempotent: run again after an unknown outcome, it
            // either lands now or fails with E11000 because it already had
            // (into this bucket, which the filter then skips, or another).
            filter: { site_id: siteId, hour, n: { $lte: BUCKET_CAP - k }, g: { $nin: receipts } },
            update: {
              $push: { events: { $each: docs }, g: { $each: receipts } },
              $inc: { n: k },
              $min: { min_q: docs[0]?.q ?? 0 },
              $max: { max_q: docs[k - 1]?.q ?? 0 },
              // The analytics feed's marker: the server's time of this append.
              $currentDate: { u: true },
            },
            upsert: true,
          },
        },
      });
    }
  }
  return appends;
}

/**
 * Keeps the `limit` newest events among the buckets read so far, and says
 * whether a bucket can still hold one of them. Buckets come in decreasing
 * `max_q`; once `limit` events are kept, a bucket whose `max_q` is below the
 * oldest kept one holds only older events, and so does every later bucket.
 */
export class NewestEvents {
  private kept: EventDoc[] = [];

  constructor(private readonly limit: number) {}

  /** Whether a bucket with this `max_q` may hold one of the newest events. */
  wants(maxQ: number): boolean {
    const oldest = this.kept[this.limit - 1];
    return oldest === undefined || maxQ > oldest.q;
  }

  add(events: readonly EventDoc[]): void {
    this.kept.push(...events);
    this.kept.sort((a, b) => b.q - a.q);
    if (this.kept.length > this.limit) this.kept.length = this.limit;
  }

  /** The kept events, newest first. */
  get events(): readonly EventDoc[] {
    return this.kept;
  }
}
