/** Events, identity links, visitor salts and quota counters in MongoDB. */
import { type AnyBulkWriteOperation, MongoBulkWriteError } from "mongodb";
import { MAX_VISITORS_PER_USER, visitorToReplace } from "../identity-cap.js";
import type { EventGroup, EventGroupResult, IdentityLink, StoreEventsPart } from "../port.js";
import { type TouchCandidates, writeTouches } from "./attribution.js";
import type { IdentityDoc } from "./documents.js";
import {
  type BucketAppend,
  type EventUnit,
  eventFromDoc,
  NewestEvents,
  planAppends,
} from "./event-buckets.js";
import { createQuotaCounters, quotaId } from "./quota.js";
import { bulkUpsert, retryDuplicates } from "./retry.js";
import type { Collections } from "./schema.js";

/** How many buckets the cursor of listEvents fetches per round trip. */
const LIST_BATCH = 8;

export function createMongoEvents(c: Collections): StoreEventsPart {
  const quota = createQuotaCounters(c);

  /**
   * Reserves quota for every group. Groups of the same (account, month) go
   * one after the other, in order; different counters go at once, since
   * their order cannot be observed. On failure, what was reserved is given
   * back before rethrowing.
   */
  async function reserveAll(
    groups: readonly EventGroup[],
  ): Promise<{ results: EventGroupResult[]; reserved: boolean[] }> {
    const results: EventGroupResult[] = new Array(groups.length);
    const reserved: boolean[] = groups.map(() => false);
    const chains = new Map<string, Promise<void>>();
    groups.forEach((g, i) => {
      const key = quotaId(g.accountId, g.month);
      const step = async () => {
        if (g.countable <= 0) {
          const used = await quota.usage(g.accountId, g.month);
          results[i] = { ok: true, remaining: Math.max(0, g.ceiling - used) };
          return;
        }
        const r = await quota.reserve(g.accountId, g.month, g.countable, g.ceiling);
        reserved[i] = r.ok;
        const remaining = Math.max(0, g.ceiling - r.count);
        results[i] = r.ok
          ? { ok: true, remaining }
          : { ok: false, reason: "quota_exceeded", remaining };
      };
      // A failed step stops the rest of its chain (then() skips on rejection).
      chains.set(key, (chains.get(key) ?? Promise.resolve()).then(step));
    });
    const settled = await Promise.allSettled(chains.values());
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
    if (failed) {
      await releaseGroups(groups, reserved, new Set());
      throw failed.reason;
    }
    return { results, reserved };
  }

  /** Gives back the reservations of the groups not in `keep`. Best effort: the original error matters more. */
  async function releaseGroups(
    groups: readonly EventGroup[],
    reserved: readonly boolean[],
    keep: ReadonlySet<number>,
  ): Promise<void> {
    await Promise.allSettled(
      groups.map((g, i) =>
        reserved[i] && !keep.has(i)
          ? quota.release(g.accountId, g.month, g.countable)
          : Promise.resolve(),
      ),
    );
  }

  /**
   * Upserts identity links, keeping the earliest time of each (site, user,
   * visitor), within the cap on visitors per user id (identity-cap.ts). Runs
   * after the touches are written, so a new visitor's touch counts. The cap
   * is checked per call: concurrent writers may pass it by a few links.
   */
  async function writeLinks(links: readonly IdentityLink[]): Promise<void> {
    const earliest = new Map<string, IdentityLink>();
    for (const l of links) {
      const key = JSON.stringify([l.siteId, l.userId, l.visitorId]);
      const seen = earliest.get(key);
      if (!seen || l.ts < seen.ts) earliest.set(key, l);
    }
    if (earliest.size === 0) return;
    const kept = await withinCap([...earliest.values()]);
    const operations: AnyBulkWriteOperation<IdentityDoc>[] = kept.map((l) => ({
      updateOne: {
        filter: { site_id: l.siteId, user_id: l.userId, visitor_id: l.visitorId },
        // $min sets the field on insert and only lowers it afterwards, so the
        // operation commutes with any concurrent one.
        update: { $min: { ts: new Date(l.ts) } },
        upsert: true,
      },
    }));
    if (operations.length > 0) await bulkUpsert(c.identities, operations);
  }

  /** The links that fit the cap; unlinks the visitors they replace. Reads at most the cap per user. */
  async function withinCap(links: IdentityLink[]): Promise<IdentityLink[]> {
    const byUser = new Map<string, IdentityLink[]>();
    for (const l of links) {
      const key = JSON.stringify([l.siteId, l.userId]);
      byUser.set(key, [...(byUser.get(key) ?? []), l]);
    }
    const kept: IdentityLink[] = [];
    for (const group of byUser.values()) {
      const { siteId, userId } = group[0] as IdentityLink;
      const linked = new Set(
        (
          await c.identities
            .find({ site_id: siteId, user_id: userId }, { projection: { visitor_id: 1 } })
            .limit(MAX_VISITORS_PER_USER + group.length)
            .toArray()
        ).map((d) => d.visitor_id),
      );
      for (const l of group) {
        if (linked.has(l.visitorId) || linked.size < MAX_VISITORS_PER_USER) {
          linked.add(l.visitorId);
          kept.push(l);
          continue;
        }
        const ids = [...linked, l.visitorId];
        const touches = new Map(
          (await c.touches.find({ site_id: siteId, visitor_id: { $in: ids } }).toArray()).map(
            (t) => [t.visitor_id, { internal: t.internal, ts: t.ts.getTime() }],
          ),
        );
        const replaced = visitorToReplace(
          [...linked].map((visitorId) => ({ visitorId, touch: touches.get(visitorId) })),
          touches.get(l.visitorId),
        );
        if (replaced === undefined) continue;
        await c.identities.deleteOne({ site_id: siteId, user_id: userId, visitor_id: replaced });
        linked.delete(replaced);
        linked.add(l.visitorId);
        kept.push(l);
      }
    }
    return kept;
  }

  return {
    async getUsage(accountId, month) {
      return quota.usage(accountId, month);
    },

    async commitEvents(groups) {
      if (groups.length === 0) return [];
      const { results, reserved } = await reserveAll(groups);

      const accepted = groups.flatMap((_g, i) => (results[i]?.ok ? [i] : []));
      let appends: BucketAppend[] = [];
      let firstTouches = new Map<number, string[]>();
      let writingEvents = false;
      try {
        appends = planAppends(unitsOf(groups, accepted));
        const touches: TouchCandidates[] = accepted.flatMap((i) => {
          const t = groups[i]?.touches ?? [];
          return t.length > 0 ? [{ group: i, touches: t }] : [];
        });
        // Links and touches first: they are idempotent, so when the events
        // write then fails and the caller retries, having them already does
        // no harm (a touch the failed call set is then not reported again:
        // the customer is re-attributed at its next payment instead).
        // Touches before links: the cap on visitors per user id weighs a new visitor's touch.
        firstTouches = await writeTouches(c, touches);
        await writeLinks(accepted.flatMap((i) => groups[i]?.links ?? []));
        writingEvents = true;
        if (appends.length > 0) {
          // One ordered bulk write for the whole call: on a write error the
          // appends before it are known to be applied and the rest are not.
          await c.events.bulkWrite(
            appends.map((a) => a.operation),
            { ordered: true },
          );
        }
      } catch (err) {
        // Whatever failed (even building the documents), the quota reserved
        // for groups not known to be written is given back.
        const written = writingEvents ? writtenGroups(err, appends) : new Set<number>();
        await releaseGroups(groups, reserved, written);
        throw err;
      }
      return results.map((r, i) => {
        const visitors = firstTouches.get(i);
        return r.ok && visitors ? { ...r, firstTouches: visitors } : r;
      });
    },

    async listEvents(siteId, limit) {
      if (limit <= 0) return [];
      const newest = new NewestEvents(limit);
      const cursor = c.events
        .find({ site_id: siteId }, { projection: { max_q: 1, events: 1 } })
        .sort({ max_q: -1 })
        .batchSize(LIST_BATCH);
      try {
        for await (const bucket of cursor) {
          if (!newest.wants(bucket.max_q)) break;
          newest.add(bucket.events);
        }
      } finally {
        await cursor.close();
      }
      return newest.events.map((d) => eventFromDoc(siteId, d));
    },

    async findVisitorsByUser(siteId, userId) {
      const docs = await c.identities
        .find({ site_id: siteId, user_id: userId })
        .sort({ ts: 1, visitor_id: 1 })
        .toArray();
      return docs.map(
        (d): IdentityLink => ({
          siteId: d.site_id,
          userId: d.user_id,
          visitorId: d.visitor_id,
          ts: d.ts.getTime(),
        }),
      );
    },

    async ensureSalt(day, candidate) {
      // First writer wins: $setOnInsert does nothing to an existing day.
      await retryDuplicates(() =>
        c.salts.updateOne({ _id: day }, { $setOnInsert: { salt: candidate } }, { upsert: true }),
      );
      const d = await c.salts.findOne({ _id: day });
      if (!d) throw new Error(`salt of ${day} vanished after its upsert`);
      return d.salt;
    },

    async pruneSalts(day) {
      // Day strings (YYYY-MM-DD) sort as dates.
      await c.salts.deleteMany({ _id: { $lt: day } });
    },
  };
}

/**
 * The groups whose events are known to be written when the events write
 * failed with `err`: with an ordered bulk write that reports write errors
 * (and no write-concern error), the appends before the first failed one.
 * A group counts only when all its appends are among those. Anything else
 * (network error, write-concern error) leaves nothing known to be written.
 */
function writtenGroups(err: unknown, appends: readonly { groups: number[] }[]): Set<number> {
  const written = new Set<number>();
  if (!(err instanceof MongoBulkWriteError)) return written;
  const writeErrors = err.result.getWriteErrors();
  if (writeErrors.length === 0 || err.result.getWriteConcernError() !== undefined) return written;
  const firstFailed = Math.min(...writeErrors.map((e) => e.index));
  const failed = new Set<number>();
  appends.forEach((a, index) => {
    for (const g of a.groups) (index < firstFailed ? written : failed).add(g);
  });
  for (const g of failed) written.delete(g);
  return written;
}

/**
 * The events of the accepted groups as units of one group and one site, in
 * commit order. A request is for one site, but nothing in the port says so:
 * a group naming several sites gets one unit per site.
 */
function unitsOf(groups: readonly EventGroup[], accepted: readonly number[]): EventUnit[] {
  const units: EventUnit[] = [];
  for (const i of accepted) {
    const bySite = new Map<string, EventUnit>();
    for (const e of groups[i]?.events ?? []) {
      let unit = bySite.get(e.siteId);
      if (!unit) {
        unit = { group: i, siteId: e.siteId, events: [] };
        bySite.set(e.siteId, unit);
        units.push(unit);
      }
      unit.events.push(e);
    }
  }
  return units;
}
