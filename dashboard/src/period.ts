/**
 * The view's site and period, read from and written to the URL
 * (`/dashboard?site=<id>&period=30d`, or `period=custom&from=YYYY-MM-DD&to=YYYY-MM-DD`,
 * and `currency=EUR` when one is chosen)
 * so a view can be bookmarked and shared. Days are UTC days; `to` is inclusive
 * on the page and becomes the exclusive end of the next day in RPC requests.
 */

/** The periods the picker offers. */
export const PERIODS = ["today", "7d", "30d", "90d", "mtd", "last_month", "12m", "custom"] as const;
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
  /** Whether the top row and the chart compare with the previous period (on unless `compare=off`). */
  compare: boolean;
  /** The attribution model of revenue (`model=`; first_touch when absent). */
  model: Model;
  /** The top-row metric the main chart draws (`metric=`; visitors when absent). */
  metric: string;
  /** Filters on the whole page, from clicked rows (`f.<dimension>=<value>`, repeatable). */
  filters: { dimension: string; value: string }[];
  /** The funnel's steps (`step=<kind>:<value>`, repeatable, 2–8 to be drawn). */
  steps: FunnelStep[];
}

/** The kinds of a funnel step: a page (exact), a page prefix or an event name. */
export const STEP_KINDS = ["page", "page_prefix", "event"] as const;
export interface FunnelStep {
  kind: (typeof STEP_KINDS)[number];
  value: string;
}

/** The attribution models of Query, in the selector's order. */
export const MODELS = [
  "first_touch",
  "last_touch",
  "last_non_direct",
  "linear",
  "position_based",
] as const;
export type Model = (typeof MODELS)[number];

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
  const model = q.get("model") ?? "";
  const filters: ViewState["filters"] = [];
  for (const [key, value] of q) {
    if (key.startsWith("f.") && key.length > 2 && value !== "") {
      filters.push({ dimension: key.slice(2), value });
    }
  }
  const steps: FunnelStep[] = [];
  for (const raw of q.getAll("step")) {
    const at = raw.indexOf(":");
    const kind = raw.slice(0, at);
    if (at > 0 && (STEP_KINDS as readonly string[]).includes(kind) && steps.length < 8) {
      steps.push({ kind: kind as FunnelStep["kind"], value: raw.slice(at + 1) });
    }
  }
  return {
    steps,
    site: q.get("site") ?? "",
    period,
    from: q.get("from") ?? "",
    to: q.get("to") ?? "",
    currency: /^[A-Z]{3}$/.test(currency) ? currency : "",
    compare: q.get("compare") !== "off",
    model: (MODELS as readonly string[]).includes(model) ? (model as Model) : "first_touch",
    metric: q.get("metric") || "visitors",
    filters,
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
  if (!s.compare) q.set("compare", "off");
  if (s.model !== "first_touch") q.set("model", s.model);
  if (s.metric !== "visitors") q.set("metric", s.metric);
  for (const f of s.filters) q.append(`f.${f.dimension}`, f.value);
  for (const step of s.steps) q.append("step", `${step.kind}:${step.value}`);
  return `?${q}`;
}

/** The days (YYYY-MM-DD, both inclusive) a state covers at `now`, for Query's period. */
export function daysOf(
  s: ViewState,
  now: number,
): { fromDay: string; toDay: string } | { error: string } {
  const range = rangeOf(s, now);
  if ("error" in range) return range;
  return {
    fromDay: range.from.slice(0, 10),
    toDay: utcDay(Date.parse(range.to) - DAY_MS),
  };
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
  } else if (s.period === "mtd" || s.period === "last_month" || s.period === "12m") {
    const d = new Date(today);
    const month = (back: number) => Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - back, 1);
    // Month to date: this month's first day to today; last month: the whole
    // previous month; last 12 months: this month and the 11 before it, to today.
    start = s.period === "mtd" ? month(0) : s.period === "last_month" ? month(1) : month(11);
    end = s.period === "last_month" ? month(0) : today + DAY_MS;
  } else {
    const days = s.period === "today" ? 1 : Number.parseInt(s.period, 10);
    end = today + DAY_MS;
    start = end - days * DAY_MS;
  }
  const iso = (ms: number) => new Date(ms).toISOString().replace(".000Z", "Z");
  return { from: iso(start), to: iso(end), days: Math.round((end - start) / DAY_MS) };
}
