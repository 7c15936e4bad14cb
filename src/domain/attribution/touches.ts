/** Turns stored pageviews into candidate first touches, and ranks attributions. */
import type { EventRecord, LinkKind, VisitorTouch } from "../../store/port.js";
import { linkRank } from "../../store/port.js";
import { classifyTouch } from "./channels.js";

/** The landing page without query or fragment: those carry click ids and sometimes personal data. */
function landingPage(url: string): string {
  try {
    const u = new URL(url);
    return u.origin + u.pathname;
  } catch {
    return url;
  }
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
    if (!cur || isBetter(t, cur)) best.set(t.visitorId, t);
  }
  return [...best.values()];
}

/** Non-internal beats internal; then the earlier wins. */
export function isBetter(a: VisitorTouch, b: VisitorTouch): boolean {
  if (a.internal !== b.internal) return !a.internal;
  return a.ts < b.ts;
}

/** The rank of "unattributed": after every attribution. */
export const UNATTRIBUTED_RANK = "~";

/**
 * The rank of an attribution as a string that sorts like the rule that
 * chose it (lower is better): a non-internal touch first, then the earlier
 * touch, then the stronger link, then the visitor id (getFirstTouches'
 * order, which decides between equals). A store compares ranks to refuse a
 * stale writer: links and touches only ever get better, so an attribution
 * computed from newer data never ranks worse than one from older data.
 */
export function attributionRank(
  touch: Pick<VisitorTouch, "internal" | "ts">,
  via: LinkKind,
  visitorId: string,
): string {
  // 16 digits hold every millisecond time up to the year 318857.
  const ts = String(Math.max(0, Math.trunc(touch.ts))).padStart(16, "0");
  return `${touch.internal ? 1 : 0}:${ts}:${linkRank(via)}:${visitorId}`;
}
