/** What an event's page URL and referrer say about where the visitor came from. */
import { memoize } from "../../lib/memo.js";

/**
 * Ad-platform click ids looked for in the page URL (lower case). Values are
 * kept under these names whatever the case in the URL (Snapchat sends `ScCid`).
 */
export const CLICK_ID_PARAMS: readonly string[] = [
  "gclid", // Google Ads
  "gbraid", // Google Ads (iOS app-to-web)
  "wbraid", // Google Ads (iOS web-to-app)
  "dclid", // Google Display & Video 360 / Campaign Manager
  "msclkid", // Microsoft Advertising
  "fbclid", // Meta (Facebook, Instagram)
  "ttclid", // TikTok
  "twclid", // X (Twitter)
  "li_fat_id", // LinkedIn
  "epik", // Pinterest
  "rdt_cid", // Reddit
  "sccid", // Snapchat
  "yclid", // Yandex Direct
  "irclickid", // impact.com
];

const CLICK_IDS: ReadonlySet<string> = new Set(CLICK_ID_PARAMS);

export interface UrlParts {
  /** Host of the referrer URL, lower case, without a port. */
  referrerHost?: string;
  utmSource?: string;
  utmMedium?: string;
  utmCampaign?: string;
  utmTerm?: string;
  utmContent?: string;
  /** Click ids found on the page URL, e.g. `{gclid: "…"}`; absent when none. */
  clickIds?: Record<string, string>;
}

/** The host of a URL's authority, lower case, without the trailing dot of a fully qualified name. */
export function hostOf(url: URL): string {
  return url.hostname.toLowerCase().replace(/\.$/, "");
}

/** What the service reads from a page URL or a referrer: parsed once, shared, frozen. */
export interface ParsedUrl {
  /** e.g. `https:` */
  readonly protocol: string;
  /** As the WHATWG URL parser gives it (punycode, no port; empty for some schemes). */
  readonly hostname: string;
  /** `hostOf` the URL. */
  readonly host: string;
  /** Origin and path, without query or fragment. */
  readonly landingPage: string;
  /** UTM parameters and click ids of the query (empty values are absent). */
  readonly query: Readonly<Omit<UrlParts, "referrerHost">>;
}

function parseOnce(url: string): ParsedUrl | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const utm = (name: string) => u.searchParams.get(name) || undefined;
  const query: Omit<UrlParts, "referrerHost"> = {
    utmSource: utm("utm_source"),
    utmMedium: utm("utm_medium"),
    utmCampaign: utm("utm_campaign"),
    utmTerm: utm("utm_term"),
    utmContent: utm("utm_content"),
  };
  const clickIds: Record<string, string> = {};
  for (const [key, value] of u.searchParams) {
    const name = key.toLowerCase();
    if (value !== "" && CLICK_IDS.has(name) && !(name in clickIds)) clickIds[name] = value;
  }
  if (Object.keys(clickIds).length > 0) query.clickIds = Object.freeze(clickIds);
  for (const k of Object.keys(query) as (keyof typeof query)[]) {
    if (query[k] === undefined) delete query[k];
  }
  return Object.freeze({
    protocol: u.protocol,
    hostname: u.hostname,
    host: hostOf(u),
    landingPage: u.origin + u.pathname,
    query: Object.freeze(query),
  });
}

/** URLs up to this many characters are remembered; the limit of page URLs is 2,048 bytes. */
const URL_CACHE = { maxEntries: 4096, maxKeyLength: 1024 };

/**
 * Parses a URL (undefined when it is not one). A page URL is read by the
 * field rules, the enrichment, the channel rules and the landing page: the
 * parse is kept (the recently used, bounded), so it happens once, and a
 * site's popular pages are not parsed again at all.
 */
export const parseUrl: (url: string) => ParsedUrl | undefined = memoize(parseOnce, URL_CACHE);

/**
 * Referrer host, UTM parameters and click ids of an event. The referrer is
 * free text in the spec (only its size is limited), so one that is not a URL
 * with a host simply has no referrer host. Empty parameter values are
 * treated as absent; the first value of a repeated parameter wins.
 */
export function urlParts(pageUrl: string, referrer: string | undefined): UrlParts {
  const ref = referrer ? parseUrl(referrer) : undefined;
  const page = parseUrl(pageUrl);
  // A copy: the parsed parts are shared between events.
  const out: UrlParts = page ? { ...page.query } : {};
  if (page?.query.clickIds) out.clickIds = { ...page.query.clickIds };
  if (ref && ref.hostname !== "") out.referrerHost = ref.host;
  return out;
}
