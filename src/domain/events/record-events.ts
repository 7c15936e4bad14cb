/**
 * The events application: check, filter, enrich, count and durably store
 * events sent from customers' servers (`record`: REST and Connect, with a
 * key) and from browsers (`collect`: the public collect endpoint, no key).
 * Every door calls it, so every rule lives here once.
 *
 * A request goes through, in this order (the spec's order of errors; the
 * doors have already answered 401/403 scope, 413 and `invalid JSON`):
 *  1. site: unknown → 404, another site than the key's → 403 (`record`), an
 *     `Origin` that is not one of the site's hosts → 400 (`collect`);
 *  2. fields → 400 naming every problem;
 *  3. bot filter: automated user agents are dropped (not stored, not counted);
 *  4. enrichment: visitor id, country, browser/OS/device, referrer host, UTM, click ids;
 *  5. quota: refused at once when the store's counter is already too close
 *     to the ceiling (read only when this process's lower bound of it, learnt
 *     from its own commits, does not show that the request fits); otherwise
 *     the group commit's store transaction raises the counter only when the
 *     request fits whole, which is what guarantees the ceiling across
 *     requests and processes;
 *  6. group commit: the request is one EventGroup in a bounded queue; the
 *     promise resolves after its batch is durably written. A full queue
 *     answers 503 at once.
 */
import { createGroupCommit, QueueFullError, type QueueSettings } from "../../lib/group-commit.js";
import type { Attributor } from "../attribution/attribute.js";
import { createKnownTouches } from "../attribution/known-touches.js";
import { touchesOf } from "../attribution/touches.js";
import type { Clock } from "../clock.js";
import { errors, storeError } from "../errors.js";
import { ALLOWANCES, secondsUntilNextMonth, utcMonth } from "../plans.js";
import type {
  EventGroup,
  EventGroupResult,
  EventRecord,
  IdentityLink,
  SiteRecord,
  Store,
} from "../store/store.js";
import { isAutomatedUserAgent } from "./bot-filter.js";
import type { ClientInfo, EventsApp, EventsResult } from "./events-app.js";
import { type Geo, openGeo } from "./geo.js";
import { checkOrigin } from "./origin.js";
import { createPersistentVisitors, publicVisitorId } from "./persistent-visitor.js";
import { urlParts } from "./url-parts.js";
import { describeUserAgent, type UserAgentParts } from "./user-agent.js";
import { siteIdOf, type ValidEvent, validateEvents } from "./validate-events.js";
import { canonicalIp, createVisitorIds, type VisitorIds } from "./visitor-id.js";

export interface EventsDeps {
  store: Store;
  clock: Clock;
  /**
   * The ingest queue: `capacity` events waiting or being written at once
   * (INGEST_QUEUE_CAPACITY), at most `batchMax` requests per store write
   * (INGEST_BATCH_MAX), and `flushMs` a lone request waits for company
   * (INGEST_FLUSH_MS).
   */
  queue: QueueSettings;
  /** A GeoLite2/GeoIP2 MMDB file; the bundled DB-IP country file when unset. */
  geoipDb?: string;
  /** Re-attributes customers after new identity links and first touches are stored. */
  attribution?: Attributor;
}

/** The identify event: links a visitor to the caller's user id; never counted. */
const IDENTIFY = "$identify";

/**
 * Store failures become 503 `unavailable` (retry later) rather than 500: both
 * adapters guarantee that a write reported unavailable did not happen (SQLite
 * by its transaction, MongoDB by answering per request: a request whose
 * events landed is acknowledged even when others of its batch failed), so a
 * retry is safe and right. A store's refusal (StoreFailureError: a validator,
 * a value out of range) is a 500 with its cause logged, never retried.
 */
async function fromStore<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    throw storeError(err);
  }
}

/**
 * Builds the events application. Resolves once the GeoIP database is open;
 * rejects when GEOIP_DB names a file that is not an MMDB database.
 */
export async function createEventsApp(deps: EventsDeps): Promise<EventsApp> {
  const { store, clock, queue } = deps;
  const geo = await openGeo(deps.geoipDb);
  const visitors = createVisitorIds(store);
  const knownTouches = createKnownTouches();
  const persistentVisitors = createPersistentVisitors();
  // A lower bound of each (account, month) counter, learnt from this
  // process's own commits (the count each raise left). While it says a
  // request fits, the counter is not read; the commit's conditional raise
  // stays the authority on the ceiling, so another process's events are
  // still counted (docs/performance.md, "Quota").
  const usedAtLeast = new Map<string, number>();
  const noteUsed = (key: string, used: number) => {
    if (usedAtLeast.size >= 10_000 && !usedAtLeast.has(key)) usedAtLeast.clear();
    usedAtLeast.set(key, Math.max(used, usedAtLeast.get(key) ?? 0));
  };
  const pipeline = createGroupCommit<EventGroup, EventGroupResult>({
    ...queue,
    async commit(groups) {
      const results = await store.commitEvents(groups);
      // The events are durable now; attribution catches up on the next trigger if this fails.
      await deps.attribution?.afterEvents(groups, results).catch(() => {});
      return results;
    },
  });

  /**
   * Steps 3 to 6 for checked events of a known site, whichever door they came
   * through: the one copy of the bot filter, enrichment, quota and write.
   */
  async function ingest(
    site: SiteRecord,
    accountId: string,
    events: ValidEvent[],
    client: ClientInfo,
    now: number,
  ): Promise<EventsResult> {
    // 3. Bots: by the effective user agent, event by event (a batch may mix visitors).
    const clientIp = client.ip === undefined ? undefined : canonicalIp(client.ip);
    const kept: { ev: ValidEvent; ip: string; ua: string }[] = [];
    for (const ev of events) {
      const ua = ev.ua ?? client.userAgent ?? "";
      if (isAutomatedUserAgent(ua)) continue;
      kept.push({ ev, ip: ev.ip ?? clientIp ?? "", ua });
    }
    const dropped = events.length - kept.length;

    const account = await fromStore(store.getAccount(accountId));
    if (!account) throw errors.internal("the site's account does not exist");
    const { ceiling } = ALLOWANCES[account.plan];
    const month = utcMonth(now);

    // Nothing left to store: no write at all, and the allowance is unchanged.
    if (kept.length === 0) {
      const used = await fromStore(store.getUsage(account.id, month));
      return {
        accepted: 0,
        dropped,
        quotaRemaining: Math.max(0, ceiling - used),
        tsReplaced: 0,
      };
    }

    const countable = kept.filter((k) => k.ev.name !== IDENTIFY).length;
    // 5a. Cheap early refusal. The bound only ever answers "it fits": a
    // refusal is decided on the store's own count, read here, so it is as
    // right as reading on every request (a MongoDB reservation given back
    // after a failed write can leave a bound high for a while).
    const usageKey = `${account.id}\u0000${month}`;
    if (countable > 0) {
      const known = usedAtLeast.get(usageKey);
      if (known === undefined || known + countable > ceiling) {
        const used = await fromStore(store.getUsage(account.id, month));
        if (used + countable > ceiling) throw errors.quotaExceeded(secondsUntilNextMonth(now));
      }
    }

    // 4. Enrichment.
    const records = await enrichAll(kept, site.id, now, geo, visitors);
    // Events with a vid go to their persistent visitor; their daily ids are stitched to it.
    const stitches = persistentVisitors.apply(
      records,
      kept.map((k) => k.ev.vid),
    );
    const links: IdentityLink[] = records
      .filter((r) => r.name === IDENTIFY && r.userId !== undefined)
      .map((r) => ({
        siteId: site.id,
        visitorId: r.visitorId,
        userId: r.userId as string,
        ts: r.ts,
      }));

    // 5b + 6. One group per request, written with other requests' groups.
    const group: EventGroup = {
      accountId: account.id,
      month,
      ceiling,
      countable,
      events: records,
      links,
      // Only touches that may improve what is stored: most pageviews are of visitors who have one.
      touches: knownTouches.filter(touchesOf(records, site.hostnames)),
      ...(stitches.length > 0 ? { stitches } : {}),
    };
    let result: EventGroupResult;
    try {
      // Weight = events, so capacity bounds memory in events; a request larger
      // than the whole capacity still goes through when the queue is empty.
      result = await pipeline.submit(group, Math.min(records.length, queue.capacity));
    } catch (err) {
      if (err instanceof QueueFullError) throw errors.queueFull();
      throw storeError(err);
    }
    // This request's own outcome: others of its batch may have landed or failed.
    if (!result.ok && result.reason === "failed") throw storeError(result.error);
    // remaining = max(0, ceiling − used): ceiling − remaining is at most the count.
    noteUsed(usageKey, ceiling - result.remaining);
    if (!result.ok) throw errors.quotaExceeded(secondsUntilNextMonth(now));
    if (group.touches) knownTouches.remember(group.touches);
    if (group.stitches) persistentVisitors.remember(group.stitches);
    const out: EventsResult = {
      accepted: records.length,
      dropped,
      quotaRemaining: result.remaining,
      tsReplaced: kept.filter((k) => k.ev.tsReplaced).length,
    };
    const first = records[0];
    if (first) out.visitorId = publicVisitorId(first.visitorId);
    return out;
  }

  /** Step 1 for both doors: the site a body names. No `s`: field errors only. */
  async function siteOf(body: Record<string, unknown>, now: number): Promise<SiteRecord> {
    const siteId = siteIdOf(body);
    if (siteId === undefined) validateEvents(body, undefined, now); // always throws
    const site = await fromStore(store.getSite(siteId as string));
    if (!site) throw errors.unknownSite();
    return site;
  }

  return {
    async record(principal, body, client) {
      const now = clock.now();
      // 1. The site, before any field rule (the spec's order).
      const site = await siteOf(body, now);
      if (site.id !== principal.siteId) throw errors.foreignSite();
      // 2. Fields.
      const { events } = validateEvents(body, site.hostnames, now);
      return ingest(site, principal.accountId, events, client, now);
    },

    async collect(body, client) {
      const now = clock.now();
      // 1. The site is the credential: unknown → 404; a page of another host → 400.
      const site = await siteOf(body, now);
      if (client.origin !== undefined) checkOrigin(client.origin, site.hostnames);
      // 2. Fields; the visitor is the connection's, never the body's.
      const { events } = validateEvents(body, site.hostnames, now, { connectionOnly: true });
      return ingest(site, site.accountId, events, client, now);
    },

    drain() {
      return pipeline.drain();
    },
  };
}

/** What an event's client (ip, user agent) and UTC day give it. */
interface ClientParts {
  visitorId: string;
  country: string | undefined;
  ua: UserAgentParts;
}

const DAY_MS = 86_400_000;

/**
 * Enriches a request's events. The events of a request share their client
 * and almost always their day, so what depends only on those (visitor id,
 * country, user-agent parts) is derived once per run of equal (ip, ua, day)
 * rather than once per event: per event that was a hash of the joined
 * inputs in each cache and an await (docs/performance.md, third pass).
 */
async function enrichAll(
  kept: readonly { ev: ValidEvent; ip: string; ua: string }[],
  siteId: string,
  receivedAt: number,
  geo: Geo,
  visitors: VisitorIds,
): Promise<EventRecord[]> {
  const records: EventRecord[] = [];
  let client: ClientParts | undefined;
  let ip = "";
  let ua = "";
  let dayStart = 0;
  for (const k of kept) {
    const ts = k.ev.ts;
    if (
      client === undefined ||
      k.ip !== ip ||
      k.ua !== ua ||
      ts < dayStart ||
      ts >= dayStart + DAY_MS
    ) {
      ip = k.ip;
      ua = k.ua;
      dayStart = ts - (((ts % DAY_MS) + DAY_MS) % DAY_MS);
      client = {
        // The salt of the day the event happened: late events of yesterday keep yesterday's id.
        visitorId: await visitors.visitorId(siteId, ip, ua, ts),
        country: ip === "" ? undefined : geo.country(ip),
        ua: describeUserAgent(ua),
      };
    }
    records.push(enrich(k.ev, siteId, receivedAt, client));
  }
  return records;
}

/**
 * An event as stored: the checked fields plus everything derived from its
 * client and URLs. The port says optional fields are absent when unknown,
 * never present-but-undefined (MongoDB would keep explicit nulls): they are
 * only set when known, rather than deleted afterwards, which would turn
 * every record into a slow dictionary-mode object.
 */
function enrich(
  ev: ValidEvent,
  siteId: string,
  receivedAt: number,
  client: ClientParts,
): EventRecord {
  const r: EventRecord = {
    siteId,
    name: ev.name,
    url: ev.url,
    ts: ev.ts,
    receivedAt,
    visitorId: client.visitorId,
  };
  if (ev.referrer !== undefined) r.referrer = ev.referrer;
  if (ev.title !== undefined) r.title = ev.title;
  if (ev.width !== undefined) r.width = ev.width;
  if (ev.language !== undefined) r.language = ev.language;
  if (ev.props !== undefined) r.props = ev.props;
  if (ev.userId !== undefined) r.userId = ev.userId;
  if (client.country !== undefined) r.country = client.country;
  const { browser, os, device } = client.ua;
  if (browser !== undefined) r.browser = browser;
  if (os !== undefined) r.os = os;
  if (device !== undefined) r.device = device;
  const u = urlParts(ev.url, ev.referrer);
  if (u.referrerHost !== undefined) r.referrerHost = u.referrerHost;
  if (u.utmSource !== undefined) r.utmSource = u.utmSource;
  if (u.utmMedium !== undefined) r.utmMedium = u.utmMedium;
  if (u.utmCampaign !== undefined) r.utmCampaign = u.utmCampaign;
  if (u.utmTerm !== undefined) r.utmTerm = u.utmTerm;
  if (u.utmContent !== undefined) r.utmContent = u.utmContent;
  if (u.clickIds !== undefined) r.clickIds = u.clickIds;
  return r;
}
