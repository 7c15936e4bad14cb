/** Turns stored pageviews into candidate first touches, and ranks attributions. */
import { parseUrl } from "../events/url-parts.js";
import type { EventRecord, VisitorTouch } from "../store/records.js";
import { classifyTouch } from "./channels.js";
import { isBetterTouch } from "./ranking.js";

/** The landing page without query or fragment: those carry click ids and sometimes personal data. */
function landingPage(url: string): string {
  return parseUrl(url)?.landingPage ?? url;
}

/**
 * The candidate first touch of a pageview, or undefined for other events. A
 * pageview whose referrer is the site itself is an `internal` touch: it is
 * credited (as Direct) only when the visitor has no better one.
 */
export function touchOf(event: EventRecord, siteHostnames: string[]): VisitorTouch | undefined {
  if (event.name !== "pageview") return undefined;
  const c = classifyTouch({
    url: event.url,
    referrerHost: event.referrerHost,
    utmSource: event.utmSource,
    utmMedium: event.utmMedium,
    utmCampaign: event.utmCampaign,
    clickIds: event.clickIds,
    siteHostnames,
  });
  const touch: VisitorTouch = {
    siteId: event.siteId,
    visitorId: event.visitorId,
    ts: event.ts,
    internal: c === undefined,
    channel: c?.channel ?? "Direct",
    landingPage: landingPage(event.url),
  };
  if (c?.source !== undefined) touch.source = c.source;
  if (c?.medium !== undefined) touch.medium = c.medium;
  if (c?.campaign !== undefined) touch.campaign = c.campaign;
  return touch;
}

/** The best touch of each visitor among `events` (fewer store writes for a batch). */
export function touchesOf(events: EventRecord[], siteHostnames: string[]): VisitorTouch[] {
  const best = new Map<string, VisitorTouch>();
  for (const e of events) {
    const t = touchOf(e, siteHostnames);
    if (!t) continue;
    const cur = best.get(t.visitorId);
    if (!cur || isBetterTouch(t, cur)) best.set(t.visitorId, t);
  }
  return [...best.values()];
}
