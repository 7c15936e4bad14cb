/**
 * Daily rollups in MongoDB (docs/mongodb.md, "Daily rollups"): traffic per
 * (site, UTC day of ts) and new visitors per (site, UTC day of the first
 * touch's ts, channel, source, campaign, landing page), written by the
 * events' commit right after the writes they count, and their reads.
 *
 * No double count on a retried write: a visitor counts once a day because
 * only the `visitor_days` documents the server actually inserted count (a
 * second insert of the same key fails with E11000); a first touch counts
 * only when its conditional upsert changed the stored touch, which a second
 * run of the same candidate does not; the `$inc` upserts are sent once (the
 * driver's retryable writes, which the server de-duplicates, are the only
 * resend). The window that remains, a count lost when a rollup write fails
 * after the events landed, is documented in docs/mongodb.md.
 */
import { type AnyBulkWriteOperation, type Db, MongoBulkWriteError, type ObjectId } from "mongodb";
import { utcDay } from "../../domain/overview-traffic.js";
import type { DailyTraffic, EventRecord, NewVisitorCount } from "../port.js";
import { bulkUpsert, DUPLICATE_KEY } from "./retry.js";
import type { Collections } from "./schema.js";

/** Visitors and pageviews of one site and UTC day. */
export interface TrafficDayDoc {
  _id?: ObjectId;
  site_id: string;
  /** YYYY-MM-DD (UTC). */
  day: string;
  visitors: number;
  pageviews: number;
}

/** A visitor counted on a day: one document per (site, day, visitor). */
export interface VisitorDayDoc {
  _id?: ObjectId;
  site_id: string;
  day: string;
  visitor_id: string;
}

/** First touches of one site, day and first-touch dimensions; '' for an absent source or campaign. */
export interface NewVisitorDayDoc {
  _id?: ObjectId;
  site_id: string;
  day: string;
  channel: string;
  source: string;
  campaign: string;
  landing_page: string;
  visitors: number;
}

/** The first-touch fields a new-visitor count is keyed by. */
export interface TouchDimensions {
  siteId: string;
  ts: number;
  channel: string;
  source?: string;
  campaign?: string;
  landingPage: string;
}

/** Sums come back as Long past 2^31, never as doubles. */
const EXACT = { promoteLongs: false } as const;
/** A count (int32 or Long) as a number. */
const count = (v: unknown) => (typeof v === "number" ? v : Number(String(v)));

/**
 * Adds landed events to the traffic rollup: the batch's distinct (site, day,
 * visitor) go to `visitor_days` in one unordered insert, and each (site, day)
 * gains the pageviews and the visitors whose insert the server accepted.
 */
export async function rollUpTraffic(c: Collections, events: readonly EventRecord[]): Promise<void> {
  if (events.length === 0) return;
  const days = new Map<
    string,
    { site_id: string; day: string; visitors: number; pageviews: number }
  >();
  const visitorDays = new Map<string, VisitorDayDoc>();
  for (const e of events) {
    const day = utcDay(e.ts);
    const key = JSON.stringify([e.siteId, day]);
    let d = days.get(key);
    if (!d) {
      d = { site_id: e.siteId, day, visitors: 0, pageviews: 0 };
      days.set(key, d);
    }
    if (e.name === "pageview") d.pageviews += 1;
    visitorDays.set(JSON.stringify([e.siteId, day, e.visitorId]), {
      site_id: e.siteId,
      day,
      visitor_id: e.visitorId,
    });
  }
  const docs = [...visitorDays.values()];
  for (const i of await insertedOf(c, docs)) {
    const v = docs[i] as VisitorDayDoc;
    (days.get(JSON.stringify([v.site_id, v.day])) as { visitors: number }).visitors += 1;
  }
  const operations: AnyBulkWriteOperation<TrafficDayDoc>[] = [...days.values()].map((d) => ({
    updateOne: {
      filter: { site_id: d.site_id, day: d.day },
      update: { $inc: { visitors: d.visitors, pageviews: d.pageviews } },
      upsert: true,
    },
  }));
  await bulkUpsert(c.trafficDays, operations);
}

/**
 * Inserts the documents unordered and returns the indexes of those the
 * server inserted: an E11000 is a visitor already counted that day. Any other
 * failure is thrown, after nothing counted, the undercount side.
 */
async function insertedOf(c: Collections, docs: VisitorDayDoc[]): Promise<number[]> {
  const all = docs.map((_d, i) => i);
  try {
    // Copies: the driver adds an _id to the documents it is given.
    await c.visitorDays.insertMany(
      docs.map((d) => ({ ...d })),
      { ordered: false },
    );
    return all;
  } catch (err) {
    if (!(err instanceof MongoBulkWriteError)) throw err;
    const errors = err.result.getWriteErrors();
    if (errors.some((e) => e.code !== DUPLICATE_KEY)) throw err;
    const taken = new Set(errors.map((e) => e.index));
    return all.filter((i) => !taken.has(i));
  }
}

/** The rollup key of a first touch. */
function dimensionsKey(t: TouchDimensions) {
  return {
    site_id: t.siteId,
    day: utcDay(t.ts),
    channel: t.channel,
    source: t.source ?? "",
    campaign: t.campaign ?? "",
    landing_page: t.landingPage,
  };
}

/**
 * Applies the changes of stored first touches to the new-visitor rollup:
 * `added` touches count +1 on their day and dimensions, `removed` ones (the
 * touches a better one replaced) −1 on theirs. One unordered bulk of upserts.
 */
export async function countNewVisitors(
  c: Collections,
  added: readonly TouchDimensions[],
  removed: readonly TouchDimensions[],
): Promise<void> {
  const deltas = new Map<string, { key: ReturnType<typeof dimensionsKey>; n: number }>();
  const add = (t: TouchDimensions, n: number) => {
    const key = dimensionsKey(t);
    const id = JSON.stringify(Object.values(key));
    const d = deltas.get(id);
    if (d) d.n += n;
    else deltas.set(id, { key, n });
  };
  for (const t of added) add(t, 1);
  for (const t of removed) add(t, -1);
  const operations: AnyBulkWriteOperation<NewVisitorDayDoc>[] = [...deltas.values()]
    .filter((d) => d.n !== 0)
    .map((d) => ({
      updateOne: { filter: d.key, update: { $inc: { visitors: d.n } }, upsert: true },
    }));
  if (operations.length > 0) await bulkUpsert(c.newVisitorDays, operations);
}

/** Visitors and pageviews of the days [fromDay, toDay), oldest first. */
export async function readTrafficRollup(
  c: Collections,
  siteId: string,
  fromDay: string,
  toDay: string,
): Promise<DailyTraffic[]> {
  const docs = await c.trafficDays
    .find({ site_id: siteId, day: { $gte: fromDay, $lt: toDay } })
    .sort({ day: 1 })
    .toArray();
  return docs.map((d) => ({
    day: d.day,
    visitors: Number(d.visitors),
    pageviews: Number(d.pageviews),
  }));
}

/** The `$group` key of new-visitor counts: a first touch's dimensions, as touches and the rollup store them. */
export const BY_TOUCH_DIMENSIONS = {
  channel: "$channel",
  source: "$source",
  campaign: "$campaign",
  landing_page: "$landing_page",
} as const;

/** New visitors of the days [fromDay, toDay) by first-touch dimensions; groups at 0 are left out. */
export async function readNewVisitorRollup(
  c: Collections,
  siteId: string,
  fromDay: string,
  toDay: string,
): Promise<NewVisitorCount[]> {
  const rows = await c.newVisitorDays
    .aggregate(
      [
        { $match: { site_id: siteId, day: { $gte: fromDay, $lt: toDay } } },
        {
          $group: {
            _id: BY_TOUCH_DIMENSIONS,
            visitors: { $sum: "$visitors" },
          },
        },
        { $match: { visitors: { $gt: 0 } } },
      ],
      EXACT,
    )
    .toArray();
  return rows.map((r) => {
    const k = r._id as { channel: string; source: string; campaign: string; landing_page: string };
    return {
      channel: k.channel,
      source: k.source === "" ? undefined : k.source,
      campaign: k.campaign === "" ? undefined : k.campaign,
      landingPage: k.landing_page,
      visitors: count(r.visitors),
    };
  });
}

/** `$dateToString` of a date field as the rollups' day. */
const dayOf = (field: string) => ({ $dateToString: { format: "%Y-%m-%d", date: field } });

/**
 * Builds the rollups from the stored events and first touches, for a
 * database that had them before the rollups existed (`admin store migrate`
 * runs it when it creates `traffic_days`). Server-side: `$merge` into the
 * rollup collections, on their unique keys.
 */
export async function backfillRollups(db: Db): Promise<void> {
  await db
    .collection("events")
    .aggregate([
      { $unwind: "$events" },
      {
        $group: {
          _id: { site_id: "$site_id", day: dayOf("$events.ts"), visitor_id: "$events.visitor_id" },
        },
      },
      { $replaceWith: "$_id" },
      {
        $merge: {
          into: "visitor_days",
          on: ["site_id", "day", "visitor_id"],
          whenMatched: "keepExisting",
          whenNotMatched: "insert",
        },
      },
    ])
    .toArray();
  await db
    .collection("events")
    .aggregate([
      { $unwind: "$events" },
      {
        $group: {
          _id: { site_id: "$site_id", day: dayOf("$events.ts"), visitor_id: "$events.visitor_id" },
          pageviews: { $sum: { $cond: [{ $eq: ["$events.name", "pageview"] }, 1, 0] } },
        },
      },
      {
        $group: {
          _id: { site_id: "$_id.site_id", day: "$_id.day" },
          visitors: { $sum: 1 },
          pageviews: { $sum: "$pageviews" },
        },
      },
      {
        $project: {
          _id: 0,
          site_id: "$_id.site_id",
          day: "$_id.day",
          visitors: 1,
          pageviews: 1,
        },
      },
      {
        $merge: {
          into: "traffic_days",
          on: ["site_id", "day"],
          whenMatched: "replace",
          whenNotMatched: "insert",
        },
      },
    ])
    .toArray();
  await db
    .collection("visitor_touches")
    .aggregate([
      {
        $group: {
          _id: {
            site_id: "$site_id",
            day: dayOf("$ts"),
            channel: "$channel",
            source: { $ifNull: ["$source", ""] },
            campaign: { $ifNull: ["$campaign", ""] },
            landing_page: "$landing_page",
          },
          visitors: { $sum: 1 },
        },
      },
      {
        $project: {
          _id: 0,
          site_id: "$_id.site_id",
          day: "$_id.day",
          channel: "$_id.channel",
          source: "$_id.source",
          campaign: "$_id.campaign",
          landing_page: "$_id.landing_page",
          visitors: 1,
        },
      },
      {
        $merge: {
          into: "new_visitor_days",
          on: ["site_id", "day", "channel", "source", "campaign", "landing_page"],
          whenMatched: "replace",
          whenNotMatched: "insert",
        },
      },
    ])
    .toArray();
}
