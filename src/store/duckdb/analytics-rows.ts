/**
 * The rows of the analytics store, as both feeds append them: the SQLite
 * mover (analytics-feed.ts) and the MongoDB one (src/store/mongo/analytics-feed.ts)
 * hand a stored event or payment in this one shape, so each derived column
 * (page, external referrer, channel…) is computed in one place, whatever
 * store it came from.
 */
import type { DuckDBAppender } from "@duckdb/node-api";
import { externalReferrer, pageOf } from "../../domain/analytics/visits.js";
import { classifyTouch } from "../../domain/attribution/channels.js";
import { visitorKey } from "./analytics-store.js";

/** A stored event, by the stored field names (SQLite's columns, MongoDB's event fields). */
export interface EventRow {
  /** The store's insertion sequence: SQLite's rowid, MongoDB's `q`. */
  id: number;
  site_id: string;
  name: string;
  url: string;
  referrer: string | null;
  title: string | null;
  width: number | null;
  language: string | null;
  /** The props object as JSON text. */
  props: string | null;
  ts: number;
  received_at: number;
  visitor_id: string;
  user_id: string | null;
  country: string | null;
  browser: string | null;
  os: string | null;
  device: string | null;
  referrer_host: string | null;
  utm_source: string | null;
  utm_medium: string | null;
  utm_campaign: string | null;
  utm_term: string | null;
  utm_content: string | null;
  /** The click ids as a JSON object's text. */
  click_ids: string | null;
}

/** A stored payment, by SQLite's column names (MongoDB's fields are mapped to them). */
export interface PaymentRow {
  site_id: string;
  payment_id: string;
  customer_id: string;
  currency: string;
  amount_minor: number;
  kind: string;
  status: string;
  paid_at: number;
  channel: string;
  /** The stored first-touch attribution as JSON text. */
  attribution: string | null;
}

/**
 * Appends one event to the `events` appender; `siteHostnames` are its site's
 * own hosts. Returns its visitor key (the visits it changes are re-derived).
 */
export function appendEvent(ap: DuckDBAppender, r: EventRow, siteHostnames: string[]): bigint {
  const clickIds =
    r.click_ids === null ? undefined : (JSON.parse(r.click_ids) as Record<string, string>);
  const c = classifyTouch({
    url: r.url,
    referrerHost: r.referrer_host ?? undefined,
    utmSource: r.utm_source ?? undefined,
    utmMedium: r.utm_medium ?? undefined,
    utmCampaign: r.utm_campaign ?? undefined,
    ...(clickIds ? { clickIds } : {}),
    siteHostnames,
  });
  ap.appendBigInt(BigInt(r.id));
  ap.appendVarchar(r.site_id);
  ap.appendBigInt(BigInt(r.ts));
  const vid = visitorKey(r.visitor_id);
  ap.appendBigInt(vid);
  ap.appendVarchar(r.name);
  ap.appendVarchar(pageOf(r.url));
  const text = (v: string | null | undefined) =>
    v === null || v === undefined ? ap.appendNull() : ap.appendVarchar(v);
  // The referrer host unless it is the site itself (the visit's touch reads it).
  text(externalReferrer({ url: r.url, referrerHost: r.referrer_host ?? undefined }, siteHostnames));
  // An internal navigation (the site's own referrer, untagged) has no channel.
  text(c?.channel);
  text(c?.source);
  text(c?.medium);
  text(c?.campaign);
  text(r.utm_term?.trim() || undefined);
  text(r.utm_content?.trim() || undefined);
  text(r.country);
  text(r.device);
  text(r.browser);
  text(r.os);
  text(r.props);
  // The stored event as ListEvents and the exports return it (analytics-store.ts).
  ap.appendVarchar(r.url);
  text(r.referrer);
  text(r.title);
  r.width === null ? ap.appendNull() : ap.appendInteger(r.width);
  text(r.language);
  ap.appendBigInt(BigInt(r.received_at));
  ap.appendVarchar(r.visitor_id);
  text(r.user_id);
  text(r.referrer_host);
  text(r.utm_source);
  text(r.utm_medium);
  text(r.utm_campaign);
  text(r.utm_term);
  text(r.utm_content);
  text(r.click_ids);
  ap.endRow();
  return vid;
}

/** Appends one payment to the `payments` appender. */
export function appendPayment(ap: DuckDBAppender, p: PaymentRow): void {
  const a =
    p.attribution === null
      ? undefined
      : (JSON.parse(p.attribution) as {
          source?: string;
          medium?: string;
          campaign?: string;
          landingPage?: string;
          visitorId?: string;
          touchedAt?: number;
        });
  const text = (v: string | undefined) => (v === undefined ? ap.appendNull() : ap.appendVarchar(v));
  const big = (v: number | bigint | undefined) =>
    v === undefined ? ap.appendNull() : ap.appendBigInt(BigInt(v));
  ap.appendVarchar(p.site_id);
  ap.appendVarchar(p.payment_id);
  ap.appendVarchar(p.customer_id);
  ap.appendVarchar(p.currency);
  big(p.amount_minor);
  ap.appendVarchar(p.kind);
  ap.appendVarchar(p.status);
  big(p.paid_at);
  ap.appendVarchar(p.channel);
  text(a?.source);
  text(a?.medium);
  text(a?.campaign);
  text(a?.landingPage);
  big(a?.visitorId === undefined ? undefined : visitorKey(a.visitorId));
  big(a?.touchedAt);
  ap.endRow();
}
