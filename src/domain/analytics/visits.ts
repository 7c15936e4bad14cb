/**
 * Visits and their touches, as `ReportsService.Query` counts them: a visit
 * is a visitor's run of events with no gap over 30 minutes (Plausible's and
 * GA4's session timeout). Pure: the engine computes the same in its queries
 * and the reference model of the tests calls these functions. The rules and
 * the choices are written in docs/reports.md.
 */

import { classifyTouch } from "../attribution/channels.js";
import { IDENTIFY } from "../events/identity-links.js";
import { parseUrl } from "../events/url-parts.js";
import type { AnalyticsTouch } from "./attribution-models.js";

/** A gap longer than this between two events of a visitor starts a new visit. */
export const VISIT_GAP_MS = 30 * 60 * 1000;

/** What the visit rules read of a stored event. */
export interface VisitEvent {
  ts: number;
  name: string;
  url: string;
  referrerHost?: string;
  utmSource?: string;
  utmMedium?: string;
  utmCampaign?: string;
  utmTerm?: string;
  utmContent?: string;
  clickIds?: Record<string, string>;
}

/** One visit of one visitor. */
export interface Visit<E extends VisitEvent = VisitEvent> {
  /** Its events, earliest first (never `$identify`). */
  events: E[];
  /** The first event's time. */
  start: number;
  /** The last event's time. */
  end: number;
  /** The page of its first pageview (of its first event when it has none). */
  landingPage: string;
  /** The page of its last pageview (of its last event when it has none). */
  exitPage: string;
  /** From its first event to its last, in whole milliseconds. */
  durationMs: number;
  pageviews: number;
  /** Exactly one event (Plausible: no second pageview and no other interaction). */
  bounce: boolean;
  touch: AnalyticsTouch;
}

/** Whether an event takes part in visits and traffic metrics: every event but `$identify`. */
export function isTrafficEvent(e: Pick<VisitEvent, "name">): boolean {
  return e.name !== IDENTIFY;
}

/**
 * An event's page: its URL without query or fragment (scheme, host and
 * path), the same form as the stored attribution's landing page; the URL
 * itself when it does not parse.
 */
export function pageOf(url: string): string {
  return parseUrl(url)?.landingPage ?? url;
}

/**
 * The visits of one visitor's events (any order): sorted by time, `$identify`
 * left out, split where two consecutive events are more than 30 minutes
 * apart (exactly 30 minutes apart stays one visit). Events of equal time keep
 * their given order.
 */
export function splitVisits<E extends VisitEvent>(events: readonly E[]): E[][] {
  const sorted = events.filter(isTrafficEvent).sort((a, b) => a.ts - b.ts);
  const visits: E[][] = [];
  let current: E[] = [];
  for (const e of sorted) {
    const last = current[current.length - 1];
    if (last !== undefined && e.ts - last.ts > VISIT_GAP_MS) {
      visits.push(current);
      current = [];
    }
    current.push(e);
  }
  if (current.length > 0) visits.push(current);
  return visits;
}

/**
 * The touch a visit is: its first event's channel, source, medium and
 * campaign by the channel rules (docs/channels.md), its term and content,
 * landing page and referrer host. A visit whose first event came from the
 * site itself without a campaign or click id (a tab reopened after 30
 * minutes) is Direct, and `direct` is exactly "the channel is Direct": no
 * external referrer, no utm_source/utm_medium and no click id.
 */
export function visitTouch(
  first: VisitEvent,
  landingPage: string,
  siteHostnames: readonly string[],
): AnalyticsTouch {
  const c = classifyTouch({
    url: first.url,
    referrerHost: first.referrerHost,
    utmSource: first.utmSource,
    utmMedium: first.utmMedium,
    utmCampaign: first.utmCampaign,
    clickIds: first.clickIds,
    siteHostnames: [...siteHostnames],
  });
  const channel = c?.channel ?? "Direct";
  const touch: AnalyticsTouch = {
    ts: first.ts,
    channel,
    landingPage,
    direct: channel === "Direct",
  };
  if (c?.source !== undefined) touch.source = c.source;
  if (c?.medium !== undefined) touch.medium = c.medium;
  if (c?.campaign !== undefined) touch.campaign = c.campaign;
  const term = first.utmTerm?.trim();
  const content = first.utmContent?.trim();
  if (term) touch.term = term;
  if (content) touch.content = content;
  const referrer = externalReferrer(first, siteHostnames);
  if (referrer !== undefined) touch.referrerHost = referrer;
  return touch;
}

/** The event's referrer host unless it is the site itself (one of its host names or the page's). */
export function externalReferrer(
  e: Pick<VisitEvent, "referrerHost" | "url">,
  siteHostnames: readonly string[],
): string | undefined {
  const host = e.referrerHost?.toLowerCase();
  if (!host) return undefined;
  if (siteHostnames.some((h) => h.toLowerCase() === host)) return undefined;
  if (parseUrl(e.url)?.host === host) return undefined;
  return host;
}

/** A visit from its events (earliest first, at least one, as {@link splitVisits} gives them). */
export function visitOf<E extends VisitEvent>(
  events: E[],
  siteHostnames: readonly string[],
): Visit<E> {
  const first = events[0];
  const last = events[events.length - 1];
  if (first === undefined || last === undefined)
    throw new RangeError("a visit has at least one event");
  const pageviews = events.filter((e) => e.name === "pageview");
  const landingPage = pageOf((pageviews[0] ?? first).url);
  return {
    events,
    start: first.ts,
    end: last.ts,
    landingPage,
    exitPage: pageOf((pageviews[pageviews.length - 1] ?? last).url),
    durationMs: last.ts - first.ts,
    pageviews: pageviews.length,
    bounce: events.length === 1,
    touch: visitTouch(first, landingPage, siteHostnames),
  };
}

/** Every visit of one visitor's events. */
export function visitsOf<E extends VisitEvent>(
  events: readonly E[],
  siteHostnames: readonly string[],
): Visit<E>[] {
  return splitVisits(events).map((v) => visitOf(v, siteHostnames));
}
