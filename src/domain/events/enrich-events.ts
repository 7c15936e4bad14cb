/**
 * Enrichment (step 4 of the events application): what the server adds to a
 * checked event from its client and URLs: visitor id, country,
 * browser/OS/device, referrer host, UTM parameters and click ids.
 */
import type { EventRecord } from "../store/store.js";
import type { Geo } from "./geo.js";
import { urlParts } from "./url-parts.js";
import { describeUserAgent, type UserAgentParts } from "./user-agent.js";
import type { ValidEvent } from "./validate-events.js";
import type { VisitorIds } from "./visitor-id.js";

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
export async function enrichEvents(
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
