/**
 * The events application: what every door (REST, Connect, the public
 * collect endpoint) calls to check, filter, enrich, count and durably store
 * events sent from customers' servers (`record`: REST and Connect, with a
 * key) and from browsers (`collect`: no key). Every rule lives here once;
 * each step of a request is in a file of its own, and `ingest` reads them in
 * order.
 *
 * A request goes through, in this order (the spec's order of errors; the
 * doors have already answered 401/403 scope, 413 and `invalid JSON`):
 *  1. site: unknown → 404, another site than the key's → 403 (`record`), an
 *     `Origin` that is not one of the site's hosts → 400 (`collect`);
 *  2. fields → 400 naming every problem (validate-events.ts);
 *  3. bot filter: automated user agents are dropped, not stored, not counted
 *     (bot-filter.ts);
 *  4. enrichment: visitor id, country, browser/OS/device, referrer host, UTM,
 *     click ids (enrich-events.ts), and the identity links of `$identify`
 *     (identity-links.ts);
 *  5. the public door's per-site ceiling (`collect` only): events a minute
 *     for the site, counted across WORKERS (collect-limits.ts) → 429;
 *     quota: refused at once when the store's counter is already too close
 *     to the ceiling (quota-gate.ts); otherwise the group commit's store
 *     transaction raises the counter only when the request fits whole,
 *     which is what guarantees the ceiling across requests and processes;
 *  6. group commit: the request is one EventGroup in a bounded queue; the
 *     promise resolves after its batch is durably written. A full queue
 *     answers 503 at once (event-queue.ts).
 */
import type { QueueSettings } from "../../lib/group-commit.js";
import type { Attributor } from "../attribution/attribute.js";
import { createKnownTouches } from "../attribution/known-touches.js";
import { touchesOf } from "../attribution/touches.js";
import type { Clock } from "../clock.js";
import { type CollectAllowance, collectPerMinuteOf } from "../collect-limits.js";
import { errors } from "../errors.js";
import { ALLOWANCES, secondsUntilNextMonth, utcMonth } from "../plans.js";
import type { EventGroup, KeyPrincipal, SiteRecord, Store } from "../store/store.js";
import { withoutBots } from "./bot-filter.js";
import { enrichEvents } from "./enrich-events.js";
import { createEventQueue } from "./event-queue.js";
import { fromStore } from "./from-store.js";
import { openGeo } from "./geo.js";
import { IDENTIFY, identityLinksOf } from "./identity-links.js";
import { checkOrigin } from "./origin.js";
import { createPersistentVisitors, publicVisitorId } from "./persistent-visitor.js";
import { createQuotaGate } from "./quota-gate.js";
import { siteIdOf, type ValidEvent, validateEvents } from "./validate-events.js";
import { canonicalIp, createVisitorIds } from "./visitor-id.js";

/** What the door knows of the HTTP client that sent the request. */
export interface ClientInfo {
  /** The caller's address (X-Forwarded-For only from trusted proxies). */
  ip: string | undefined;
  /** The caller's User-Agent header. */
  userAgent: string | undefined;
}

/** What the collect door knows of a browser's request besides its address and user agent. */
export interface BrowserClientInfo extends ClientInfo {
  /** The `Origin` header, when the client sent one. */
  origin: string | undefined;
}

export interface EventsResult {
  /** Events stored. */
  accepted: number;
  /** Events dropped as bots (stored nowhere, not counted). */
  dropped: number;
  /** Events the account may still send this UTC month. */
  quotaRemaining: number;
  /**
   * The visitor id of the request's first event (all events of one browser
   * request share it): its daily id, or its `vid` when it carried one (the
   * value a site passes as `customer.visitor_id`); absent when nothing was stored.
   */
  visitorId?: string;
  /**
   * Stored events whose `ts` lay outside [receipt − 1 h, receipt + 1 min] and
   * was replaced by the receipt time (a `ts` in seconds, a wrong clock).
   */
  tsReplaced: number;
}

export interface EventsApp {
  /**
   * Checks, enriches and durably stores one event or a batch `{s, b}`.
   * `body` is plain JSON, already checked for unknown fields and JSON types.
   * Resolves only after the events are durably written.
   */
  record(
    principal: KeyPrincipal,
    body: Record<string, unknown>,
    client: ClientInfo,
  ): Promise<EventsResult>;
  /**
   * The same for a browser, without a key: the site id in the body is the
   * credential, the `Origin` (when sent) must be one of the site's hosts, and
   * the visitor's ip and user agent come only from the connection (`ip`/`ua`
   * in the body are refused).
   */
  collect(body: Record<string, unknown>, client: BrowserClientInfo): Promise<EventsResult>;
  /** Writes what is queued; called on shutdown. */
  drain(): Promise<void>;
}

/** What the events application is built from. */
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
  /**
   * Where the collect door's per-site ceilings are counted (shared across
   * WORKERS); without it `collect` has no per-site ceiling.
   */
  collectAllowance?: CollectAllowance;
}

/**
 * Builds the events application. Resolves once the GeoIP database is open;
 * rejects when GEOIP_DB names a file that is not an MMDB database.
 */
export async function createEventsApp(deps: EventsDeps): Promise<EventsApp> {
  const { store, clock } = deps;
  const geo = await openGeo(deps.geoipDb);
  const visitors = createVisitorIds(store);
  const knownTouches = createKnownTouches();
  const persistentVisitors = createPersistentVisitors();
  const quota = createQuotaGate(store);
  const queue = createEventQueue(deps);

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
    publicDoor = false,
  ): Promise<EventsResult> {
    // 3. Bots.
    const clientIp = client.ip === undefined ? undefined : canonicalIp(client.ip);
    const kept = withoutBots(events, clientIp, client.userAgent);
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
    // 5. The public door's per-site ceiling, on the events that would use the allowance.
    if (publicDoor && deps.collectAllowance && countable > 0) {
      const perMinute = collectPerMinuteOf(site, account.plan);
      const taken = await deps.collectAllowance.take(`site:${site.id}`, countable, perMinute);
      if (!taken.ok) throw errors.siteCollectLimit(taken.retryAfterSeconds);
    }

    // 5a. Cheap early refusal.
    await quota.check(account.id, month, countable, ceiling, now);

    // 4. Enrichment.
    const records = await enrichEvents(kept, site.id, now, geo, visitors);
    // Events with a vid go to their persistent visitor; their daily ids are stitched to it.
    const stitches = persistentVisitors.apply(
      records,
      kept.map((k) => k.ev.vid),
    );

    // 5b + 6. One group per request, written with other requests' groups.
    const group: EventGroup = {
      accountId: account.id,
      month,
      ceiling,
      countable,
      events: records,
      links: identityLinksOf(records, site.id),
      // Only touches that may improve what is stored: most pageviews are of visitors who have one.
      touches: knownTouches.filter(touchesOf(records, site.hostnames)),
      ...(stitches.length > 0 ? { stitches } : {}),
    };
    const result = await queue.submit(group);
    // remaining = max(0, ceiling − used): ceiling − remaining is at most the count.
    quota.note(account.id, month, ceiling - result.remaining);
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
      return ingest(site, site.accountId, events, client, now, true);
    },

    drain() {
      return queue.drain();
    },
  };
}
