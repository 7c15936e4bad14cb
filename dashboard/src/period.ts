/**
 * The view's site and period, read from and written to the URL
 * (`/dashboard?site=<id>&period=30d`, or `period=custom&from=YYYY-MM-DD&to=YYYY-MM-DD`,
 * and `currency=EUR` when one is chosen)
 * so a view can be bookmarked and shared. Days are UTC days; `to` is inclusive
 * on the page and becomes the exclusive end of the next day in RPC requests.
 */

/** The periods the picker offers. */
export const PERIODS = ["today", "7d", "30d", "90d", "custom"] as const;
export type Period = (typeof PERIODS)[number];

/** What the URL says. */
export interface ViewState {
  site: string;
  period: Period;
  /** YYYY-MM-DD, only for `custom`. */
  from: string;
  to: string;
  /** ISO 4217 of the amounts drawn; "" for the default (most net revenue in the period). */
  currency: string;
}

const DAY_MS = 86_400_000;
const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;

/** A UTC day (YYYY-MM-DD) of an instant. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The state a query string describes; an unknown period falls back to 30d. */
export function readState(search: string): ViewState {
  const q = new URLSearchParams(search);
  const p = q.get("period") ?? "30d";
  const period = (PERIODS as readonly string[]).includes(p) ? (p as Period) : "30d";
  const currency = q.get("currency") ?? "";
  return {
    site: q.get("site") ?? "",
    period,
    from: q.get("from") ?? "",
    to: q.get("to") ?? "",
    currency: /^[A-Z]{3}$/.test(currency) ? currency : "",
  };
}

/** The query string of a state (from/to only for a custom range). */
export function writeState(s: ViewState): string {
  const q = new URLSearchParams();
  if (s.site) q.set("site", s.site);
  q.set("period", s.period);
  if (s.period === "custom") {
    if (s.from) q.set("from", s.from);
    if (s.to) q.set("to", s.to);
  }
  if (s.currency) q.set("currency", s.currency);
  return `?${q}`;
}

/** The RFC 3339 range [from, to) a state covers at `now`, or an error message. */
export function rangeOf(
  s: ViewState,
  now: number,
): { from: string; to: string; days: number } | { error: string } {
  const today = Date.parse(`${utcDay(now)}T00:00:00Z`);
  let start: number;
  let end: number;
  if (s.period === "custom") {
    if (!DAY_RE.test(s.from) || !DAY_RE.test(s.to)) {
      return { error: "Pick both days of the custom range." };
    }
    start = Date.parse(`${s.from}T00:00:00Z`);
    end = Date.parse(`${s.to}T00:00:00Z`) + DAY_MS;
    if (Number.isNaN(start) || Number.isNaN(end)) return { error: "Those days do not exist." };
    if (end <= start) return { error: "The range must end on or after its first day." };
  } else {
    const days = s.period === "today" ? 1 : Number.parseInt(s.period, 10);
    end = today + DAY_MS;
    start = end - days * DAY_MS;
  }
  const iso = (ms: number) => new Date(ms).toISOString().replace(".000Z", "Z");
  return { from: iso(start), to: iso(end), days: Math.round((end - start) / DAY_MS) };
}
