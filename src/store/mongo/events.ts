/** Events, identity links, visitor salts and quota counters in MongoDB. */
import { type AnyBulkWriteOperation, MongoBulkWriteError, ObjectId } from "mongodb";
import {
  type LinkPlan,
  linksByUser,
  MAX_VISITORS_PER_USER,
  planLinks,
} from "../../domain/attribution/identity-cap.js";
import type {
  EventGroup,
  EventGroupResult,
  IdentityLink,
  StoreEventsPart,
  VisitorStitch,
} from "../port.js";
import { type TouchCandidates, writeTouches } from "./attribution.js";
import type { IdentityDoc } from "./documents.js";
import { classify, classifyWriteError } from "./errors.js";
import {
  type BucketAppend,
  type EventUnit,
  eventFromDoc,
  NewestEvents,
  planAppends,
  RECEIPT_TAKEN,
} from "./event-buckets.js";
import { writeStitches } from "./persistent-visitors.js";
import { createQuotaCounters, quotaId } from "./quota.js";
import { bulkUpsert, retryDuplicates } from "./retry.js";
import type { Collections } from "./schema.js";

/** How many buckets the cursor of listEvents fetches per round trip. */
const LIST_BATCH = 8;

/** The counter that numbers events (sequences collection). */
export const EVENT_Q = "event_q";

/** How many times an append whose outcome is unknown is sent in all. */
const APPEND_ATTEMPTS = 2;

/** Most batches of links and touches kept for a later try after their write failed. */
const PENDING_MAX = 1000;

export interface MongoEventsOptions {
  /**
   * STORE_TIMEOUT_MS: a commit sends an append again after an unknown
   * outcome only within this budget.
   */
  timeoutMs?: number;
}

/** What a commit learned about one append: landed, or failed with this error. */
type AppendOutcome = true | Error;

/** Identity links and candidate touches of landed groups: derived from their events. */
interface Projection {
  links: IdentityLink[];
  touches: TouchCandidates[];
  stitches?: VisitorStitch[];
}

export function createMongoEvents(
  c: Collections,
  options: MongoEventsOptions = {},
): StoreEventsPart {
  const quota = createQuotaCounters(c);
  /** Links and touches whose write failed after their events landed; tried again first thing. */
  let pending: Projection[] = [];

  /**
   * Reserves quota for every group: one atomic round trip per (account,
   * month) counter, all counters at once, each replaying its groups in
   * commit order (a group that does not fit is refused, the next ones are
   * still tried). A failed round trip fails the groups of its counter only.
   */
  async function reserveAll(
    groups: readonly EventGroup[],
  ): Promise<{ results: EventGroupResult[]; reserved: boolean[] }> {
    const results: EventGroupResult[] = new Array(groups.length);
    const reserved: boolean[] = groups.map(() => false);
    const counters = new Map<string, number[]>();
    groups.forEach((g, i) => {
      const key = quotaId(g.accountId, g.month);
      counters.set(key, [...(counters.get(key) ?? []), i]);
    });
    await Promise.all(
      [...counters.values()].map(async (members) => {
        const first = groups[members[0] as number] as EventGroup;
        try {
          const outcomes = await quota.reserveMany(
            first.accountId,
            first.month,
            members.map((i) => {
              const g = groups[i] as EventGroup;
              return { n: Math.max(0, g.countable), ceiling: g.ceiling };
            }),
          );
          members.forEach((i, k) => {
            const g = groups[i] as EventGroup;
            const o = outcomes[k] as { ok: boolean; count: number };
            const remaining = Math.max(0, g.ceiling - o.count);
            reserved[i] = o.ok && g.countable > 0;
            results[i] = o.ok
              ? { ok: true, remaining }
              : { ok: false, reason: "quota_exceeded", remaining };
          });
        } catch (err) {
          const error = classify(err);
          for (const i of members) results[i] = { ok: false, reason: "failed", error };
        }
      }),
    );
    return { results, reserved };
  }

  /**
   * Sends the appends as one unordered bulk write and learns each one's
   * outcome. The server's answer settles the appends it names (a write error:
   * failed; none: landed). What the answer leaves unknown (network error,
   * timeout, write-concern error) is sent again within the time budget: each
   * append carries its groups' receipts, so a second send either lands or
   * fails with E11000 because the first had landed. Only what stays unknown
   * fails, as unavailable.
   */
  async function writeAppends(appends: readonly BucketAppend[]): Promise<AppendOutcome[]> {
    const outcomes: (AppendOutcome | undefined)[] = appends.map(() => undefined);
    const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
    let todo = appends.map((_a, i) => i);
    let lastError: unknown;
    for (let attempt = 1; todo.length > 0 && attempt <= APPEND_ATTEMPTS; attempt++) {
      const left = deadline === undefined ? undefined : deadline - Date.now();
      if (attempt > 1 && left !== undefined && left <= 0) break;
      const ops = todo.map((i) => (appends[i] as BucketAppend).operation);
      try {
        // Unordered: a failed append does not hold back the others; order
        // comes from each event's sequence number, not from the write order.
        await c.events.bulkWrite(ops, {
          ordered: false,
          // The re-send gets what is left of the budget as the server's limit.
          ...(attempt > 1 && left !== undefined ? { maxTimeMS: left } : {}),
        });
        for (const i of todo) outcomes[i] = true;
        todo = [];
      } catch (err) {
        lastError = err;
        const known = appendOutcomes(err, todo.length, attempt > 1);
        const unknown: number[] = [];
        todo.forEach((appendIndex, opIndex) => {
          const o = known[opIndex];
          if (o === undefined) unknown.push(appendIndex);
          else outcomes[appendIndex] = o;
        });
        todo = unknown;
      }
    }
    const unknownError = classify(lastError);
    return outcomes.map((o) => o ?? unknownError);
  }

  /**
   * Reserves `k` consecutive event numbers from the server's counter in one
   * atomic update and returns the first. The order of events is the
   * counter's, the same for every process, not each host's clock. The
   * counter never falls below this host's clock in microseconds: numbers
   * stay above those of earlier versions (which used the clock), and a host
   * whose clock runs ahead only moves the counter forward.
   */
  async function allocateQ(k: number): Promise<number> {
    if (k === 0) return 0;
    const floor = Date.now() * 1000;
    const d = await retryDuplicates(() =>
      c.sequences.findOneAndUpdate(
        { _id: EVENT_Q },
        [{ $set: { n: { $add: [{ $max: [{ $ifNull: ["$n", 0] }, { $literal: floor }] }, k] } } }],
        { upsert: true, returnDocument: "after", projection: { n: 1 } },
      ),
    );
    if (!d) throw new Error("the event counter returned nothing");
    return d.n - k + 1;
  }

  /**
   * Writes touches, then links (the cap on visitors per user id weighs a new
   * visitor's touch); returns each group's improved first touches.
   */
  async function project(p: Projection): Promise<Map<number, string[]>> {
    const touched = await writeTouches(c, p.touches);
    // After the touches (a daily id's landing counts at the cap); kept for a later try alone.
    if (p.stitches && p.stitches.length > 0) {
      const stitches = p.stitches;
      await writeStitches(c, stitches).catch(() =>
        keepPending([{ links: [], touches: [], stitches }]),
      );
    }
    // The touches are written: when only the links fail, they alone are tried again.
    if (p.links.length > 0) {
      await writeLinks(p.links).catch(() => keepPending([{ links: p.links, touches: [] }]));
    }
    return touched;
  }

  /** Tries again the links and touches of earlier commits whose write failed. */
  async function flushPending(): Promise<void> {
    const todo = pending;
    pending = [];
    const failed: Projection[] = [];
    await Promise.all(todo.map((p) => project(p).catch(() => failed.push(p))));
    keepPending(failed);
  }

  function keepPending(more: Projection[]): void {
    pending = [...pending, ...more];
    // Bounded memory while the database is down: the oldest are dropped
    // (their customers are re-attributed at their next payment instead).
    if (pending.length > PENDING_MAX) pending = pending.slice(pending.length - PENDING_MAX);
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

  /** The links that fit the cap (identity-cap.ts plans them); unlinks the visitors they replace. Reads at most the cap per user. */
  async function withinCap(links: IdentityLink[]): Promise<IdentityLink[]> {
    const kept: IdentityLink[] = [];
    for (const group of linksByUser(links)) {
      const { siteId, userId } = group[0] as IdentityLink;
      const candidates = group.map((l) => l.visitorId);
      const linked = (
        await c.identities
          .find({ site_id: siteId, user_id: userId }, { projection: { visitor_id: 1 } })
          .limit(MAX_VISITORS_PER_USER + group.length)
          .toArray()
      ).map((d) => d.visitor_id);
      let plan = planLinks(linked, candidates);
      if (plan === undefined) {
        // A new visitor past the cap: the plan weighs first touches.
        const ids = [...new Set([...linked, ...candidates])];
        const touches = new Map(
          (await c.touches.find({ site_id: siteId, visitor_id: { $in: ids } }).toArray()).map(
            (t) => [t.visitor_id, { internal: t.internal, ts: t.ts.getTime() }],
          ),
        );
        plan = planLinks(linked, candidates, (v) => touches.get(v)) as LinkPlan;
      }
      for (const replaced of plan.unlink) {
        await c.identities.deleteOne({ site_id: siteId, user_id: userId, visitor_id: replaced });
      }
      const keep = new Set(plan.link);
      kept.push(...group.filter((l) => keep.has(l.visitorId)));
    }
    return kept;
  }

  return {
    async getUsage(accountId, month) {
      return quota.usage(accountId, month);
    },

    async commitEvents(groups) {
      if (groups.length === 0) return [];
      if (pending.length > 0) await flushPending();
      // Numbers for every event of the call, in parallel with the quota: no
      // extra wait (numbers of refused requests are simply not used).
      const total = groups.reduce((n, g) => n + g.events.length, 0);
      const [{ results, reserved }, firstQ] = await Promise.all([
        reserveAll(groups),
        allocateQ(total).catch((err: unknown) => ({ failed: err })),
      ]);

      // 1. The events, each group in one single-document append (atomic).
      const accepted = groups.flatMap((_g, i) => (results[i]?.ok ? [i] : []));
      const receipts = groups.map(() => new ObjectId());
      let failure = new Map<number, Error>();
      try {
        if (typeof firstQ !== "number") throw firstQ.failed;
        const appends = planAppends(unitsOf(groups, accepted, receipts), Date.now(), firstQ);
        const outcomes = await writeAppends(appends);
        appends.forEach((a, k) => {
          const o = outcomes[k];
          if (o === true || o === undefined) return;
          for (const g of a.groups) if (!failure.has(g)) failure.set(g, o);
        });
      } catch (err) {
        // No sequence numbers, or building the documents failed (a
        // RangeError, say): nothing was sent.
        const error = classify(err);
        failure = new Map(accepted.map((i) => [i, error]));
      }
      // Quota goes back for the groups that did not land (one update per
      // counter), and they alone fail. A failed release leaves the counter
      // high, the safe direction.
      const giveBack = new Map<string, { g: EventGroup; n: number }>();
      for (const i of failure.keys()) {
        const g = groups[i] as EventGroup;
        if (!reserved[i]) continue;
        const key = quotaId(g.accountId, g.month);
        giveBack.set(key, { g, n: (giveBack.get(key)?.n ?? 0) + g.countable });
      }
      await Promise.allSettled(
        [...giveBack.values()].map(({ g, n }) => quota.release(g.accountId, g.month, n)),
      );
      for (const [i, error] of failure) results[i] = { ok: false, reason: "failed", error };

      const landed = accepted.filter((i) => !failure.has(i));

      // 2. Links and touches of the groups that landed, only after their
      // events: they are derived from the events, so a request that fails
      // leaves none behind. Idempotent; when their write fails, the events
      // stay acknowledged and the write is tried again at the next commit.
      const projection: Projection = {
        links: landed.flatMap((i) => groups[i]?.links ?? []),
        touches: landed.flatMap((i) => {
          const t = groups[i]?.touches ?? [];
          return t.length > 0 ? [{ group: i, touches: t }] : [];
        }),
        stitches: landed.flatMap((i) => groups[i]?.stitches ?? []),
      };
      let firstTouches = new Map<number, string[]>();
      try {
        firstTouches = await project(projection);
      } catch {
        keepPending([projection]);
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

    async pageEvents(siteId, q) {
      const newest = new NewestEvents(q.limit + 1);
      const before = q.before ?? Number.MAX_SAFE_INTEGER;
      // Buckets by decreasing max_q (site_recent); a bucket's events are filtered here, as
      // its range of q may straddle `before` and its events' times are not indexed.
      const cursor = c.events
        .find({ site_id: siteId, min_q: { $lt: before } }, { projection: { max_q: 1, events: 1 } })
        .sort({ max_q: -1 })
        .batchSize(LIST_BATCH);
      try {
        for await (const bucket of cursor) {
          if (!newest.wants(bucket.max_q)) break;
          newest.add(
            bucket.events.filter((e) => {
              const ts = e.ts.getTime();
              return e.q < before && ts >= q.from && ts < q.to;
            }),
          );
        }
      } finally {
        await cursor.close();
      }
      const kept = newest.events;
      const page = kept.slice(0, q.limit);
      return {
        events: page.map((d) => eventFromDoc(siteId, d)),
        ...(kept.length > q.limit ? { next: (page.at(-1) as { q: number }).q } : {}),
      };
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
 * What the error of a bulk write of `n` appends says about each: landed
 * (`true`), failed (an Error), or unknown (`undefined`). Only a server answer
 * with write errors settles anything: an append without a write error landed
 * unless the write concern failed (then it may not be on a majority: unknown);
 * E11000 on a re-send means its receipt is stored, so it had landed; another
 * write error means it did not land. Anything else (network, timeout) leaves
 * every append unknown.
 */
export function appendOutcomes(
  err: unknown,
  n: number,
  resend: boolean,
): (AppendOutcome | undefined)[] {
  const out: (AppendOutcome | undefined)[] = new Array(n).fill(undefined);
  if (!(err instanceof MongoBulkWriteError) || err.errorResponse instanceof Error) return out;
  const concernFailed = err.result.getWriteConcernError() !== undefined;
  const errorsByIndex = new Map(err.result.getWriteErrors().map((e) => [e.index, e]));
  for (let i = 0; i < n; i++) {
    const we = errorsByIndex.get(i);
    if (!we) out[i] = concernFailed ? undefined : true;
    else if (we.code === RECEIPT_TAKEN && resend) out[i] = concernFailed ? undefined : true;
    else out[i] = classifyWriteError(we);
  }
  return out;
}

/**
 * The events of the accepted groups as units of one group and one site, in
 * commit order. A request is for one site, but nothing in the port says so:
 * a group naming several sites gets one unit per site.
 */
function unitsOf(
  groups: readonly EventGroup[],
  accepted: readonly number[],
  receipts: readonly ObjectId[],
): EventUnit[] {
  const units: EventUnit[] = [];
  for (const i of accepted) {
    const bySite = new Map<string, EventUnit>();
    for (const e of groups[i]?.events ?? []) {
      let unit = bySite.get(e.siteId);
      if (!unit) {
        unit = { group: i, receipt: receipts[i] as ObjectId, siteId: e.siteId, events: [] };
        bySite.set(e.siteId, unit);
        units.push(unit);
      }
      unit.events.push(e);
    }
  }
  return units;
}
