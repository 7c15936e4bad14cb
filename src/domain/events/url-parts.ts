/** What an event's page URL and referrer say about where the visitor came from. */

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

function parse(url: string | undefined): URL | undefined {
  if (!url) return undefined;
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

/** The host of a URL's authority, lower case, without the trailing dot of a fully qualified name. */
export function hostOf(url: URL): string {
  return url.hostname.toLowerCase().replace(/\.$/, "");
}

/**
 * Referrer host, UTM parameters and click ids of an event. The referrer is
 * free text in the spec (only its size is limited), so one that is not a URL
 * with a host simply has no referrer host. Empty parameter values are
 * treated as absent; the first value of a repeated parameter wins.
 */
export function urlParts(pageUrl: string, referrer: string | undefined): UrlParts {
  const out: UrlParts = {};
  const ref = parse(referrer);
  if (ref && ref.hostname !== "") out.referrerHost = hostOf(ref);

  const page = parse(pageUrl);
  if (!page) return out;
  const utm = (name: string) => page.searchParams.get(name) || undefined;
  out.utmSource = utm("utm_source");
  out.utmMedium = utm("utm_medium");
  out.utmCampaign = utm("utm_campaign");
  out.utmTerm = utm("utm_term");
  out.utmContent = utm("utm_content");

  const clickIds: Record<string, string> = {};
  for (const [key, value] of page.searchParams) {
    const name = key.toLowerCase();
    if (value !== "" && CLICK_IDS.has(name) && !(name in clickIds)) clickIds[name] = value;
  }
  if (Object.keys(clickIds).length > 0) out.clickIds = clickIds;
  for (const k of Object.keys(out) as (keyof UrlParts)[]) {
    if (out[k] === undefined) delete out[k];
  }
  return out;
}
