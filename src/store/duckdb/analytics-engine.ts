/**
 * The analytics engine over DuckDB: a QueryPlan or FunnelPlan becomes SQL
 * generated from the semantic layer (semantic-layer.ts), run on a connection
 * of its own, cancelled (DuckDB's interrupt) past the time limit, at most
 * `perSite` at once for one site. Queries of the same write generation share
 * what they compute alike (read-memo.ts).
 */
import type { DuckDBConnection, DuckDBValue } from "@duckdb/node-api";
import {
  type AnalyticsEngine,
  type DimensionName,
  type FilterPlan,
  type FunnelPlan,
  type FunnelResult,
  type Interval,
  type MetricName,
  type MetricValue,
  NONE_VALUE,
  type QueryPlan,
  type QueryResult,
  type QueryResultRow,
  type TimeGrain,
} from "../../domain/analytics/query-plan.js";
import { offsetAt } from "../../domain/analytics/zoned-time.js";
import { errors } from "../../domain/errors.js";
import { UNATTRIBUTED } from "../../domain/vocabulary.js";
import type { AnalyticsStore } from "./analytics-store.js";
import { countEvents, createEventPager, pageEvents } from "./event-reads.js";
import { createFirstStepPlaces } from "./first-step-places.js";
import { createGrownBreakdowns, type GrowableBreakdown } from "./grown-breakdowns.js";
import { modelSplit } from "./model-split.js";
import { withPerfectHash } from "./perfect-hash.js";
import {
  type BitmapLimits,
  createReadMemo,
  directReads,
  periodScope,
  type QueryReads,
  statementKey,
} from "./read-memo.js";
import {
  DIMENSIONS,
  HASHED_VISITORS,
  IS_COUNTED,
  IS_GOAL,
  IS_PAGEVIEW,
  isBitmapRangeError,
  METRICS,
  metricSql,
  timeBucket,
  timeBucketStart,
  timeLabel,
  UTC_CLOCK,
  type VisitorCount,
  type WallClock,
} from "./semantic-layer.js";
import { ofSite, siteNumberOf, type WithSiteNumber } from "./site-numbers.js";
import { createValueSets } from "./value-sets.js";
import { highestNumber, visitorCount } from "./visitor-count.js";

export interface DuckDbAnalyticsOptions {
  analytics: AnalyticsStore;
  /** A query's time limit (ANALYTICS_QUERY_TIMEOUT_MS). */
  timeoutMs: number;
  /** Queries of one site running at once (ANALYTICS_QUERIES_PER_SITE). */
  perSite: number;
  /**
   * The feed's count of event removals (AnalyticsFeed.removals): with it,
   * paging through events reads ahead (event-reads.ts); without, page by page.
   */
  removals?: () => number;
  /**
   * The bits a traffic statement's visitor bitmaps may take, per part, and
   * the numbers past the site's highest they cover (visitor-count.ts,
   * `BITMAP_BITS` and `BITMAP_HEADROOM` by default): the tests make them
   * small, so that a few visitors are counted in parts too.
   */
  bitmaps?: BitmapLimits;
  /**
   * The bytes of funnels' first places kept (first-step-places.ts, 64 MiB
   * by default): the tests make it small, so that a site past it walks
   * from the events.
   */
  firstStepBytes?: number;
}

/** SQL text and its positional parameters, built together. */
class Params {
  readonly values: DuckDBValue[] = [];
  /** The placeholder of `v`. */
  add(v: DuckDBValue): string {
    this.values.push(v);
    return `$${this.values.length}`;
  }
}

type Side = "traffic" | "revenue" | "touches";

/** Offsets are sampled this far apart, a change between two samples then found to the ms. */
const OFFSET_SAMPLE_MS = 6 * 3_600_000;

/**
 * The wall clock of `timeZone` over `period` as SQL: the instant plus the
 * zone's offset (the domain's `offsetAt`, the same rule as the reference and
 * the planner's days), piecewise constant between the offset changes found in
 * the period. A constant or a short CASE per row instead of ICU's conversion
 * per event (Europe/Berlin cost 2.7× UTC at 10M events). Zones change offset
 * months apart; sampling every six hours finds every change, bisection its
 * instant.
 */
function zoneClock(timeZone: string, period: Interval): WallClock {
  if (timeZone === "UTC") return UTC_CLOCK;
  const changes: { at: number; offset: number }[] = [];
  let offset = offsetAt(period.from, timeZone);
  const first = offset;
  let at = period.from;
  while (at < period.to) {
    const next = Math.min(at + OFFSET_SAMPLE_MS, period.to);
    if (offsetAt(next, timeZone) === offset) {
      at = next;
      continue;
    }
    let lo = at;
    let hi = next;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (offsetAt(mid, timeZone) === offset) lo = mid;
      else hi = mid;
    }
    offset = offsetAt(hi, timeZone);
    changes.push({ at: hi, offset });
    at = hi;
  }
  if (changes.length === 0) return (ms) => `${ms} + ${first}`;
  return (ms) =>
    `${ms} + CASE ${[...changes]
      .reverse()
      .map((c) => `WHEN ${ms} >= ${c.at} THEN ${c.offset}`)
      .join(" ")} ELSE ${first} END`;
}

/** A dimension's SQL on one side (`(none)` for an absent value); undefined when it has none there. */
function dimensionSql(
  d: DimensionName,
  side: Side,
  p: Params,
  tz: WallClock,
  /** A time dimension as its bucket's start (grouped on), not its label. */
  start = false,
): string | undefined {
  if (d.startsWith("time:")) {
    const ms = side === "revenue" ? "r.paid_at" : "x.ts";
    const grain = d.slice(5) as TimeGrain;
    return start ? timeBucketStart(grain, ms, tz) : timeBucket(grain, ms, tz);
  }
  if (d.startsWith("prop:")) {
    if (side === "revenue") return undefined;
    return `coalesce(json_extract_string(x.props, ${p.add(`$."${d.slice(5).replaceAll('"', '\\"')}"`)}), '${NONE_VALUE}')`;
  }
  const def = DIMENSIONS[d as keyof typeof DIMENSIONS];
  // First-touch rows (touchRows) carry the traffic rows' columns: the traffic SQL reads them.
  const sql = side === "revenue" ? def.revenue : def.traffic;
  return sql === undefined ? undefined : `coalesce(${sql}, '${NONE_VALUE}')`;
}

/** A filter as a condition on one side; a dimension that side lacks is `(none)` there. */
function filterSql(f: FilterPlan, side: Side, p: Params, tz: WallClock): string {
  const v = dimensionSql(f.dimension, side, p, tz) ?? `'${NONE_VALUE}'`;
  if (f.op === "contains") {
    return `(${f.values.map((x) => `contains(lower(${v}), lower(${p.add(x)}))`).join(" OR ")})`;
  }
  const list = f.values.map((x) => p.add(x)).join(", ");
  return f.op === "is" ? `${v} IN (${list})` : `${v} NOT IN (${list})`;
}

/**
 * Events of the period (traffic rows `x`), `vk` their visitor. With
 * `visits`, each with its visit's columns: the visit of its site and visitor
 * whose span holds its time, from the `visits` table the feed keeps
 * (visits-maintenance.ts), `vn` the visit (its start: a visitor has one visit
 * starting at a time). Visits span all of a visitor's events, so a visit that
 * began before the period keeps its landing page and touch (docs/reports.md).
 * `straddling` keeps only the events of visits that do not lie wholly inside
 * the period (the others are read from `visits` alone, {@link wholeVisits}).
 */
function trafficRows(
  sn: number,
  period: Interval,
  p: Params,
  visits: "none" | "all" | "straddling" = "all",
): string {
  const from = p.add(BigInt(period.from));
  const to = p.add(BigInt(period.to));
  const events = `${ofSite("e", sn)} AND e.name <> '$identify' AND e.ts >= ${from} AND e.ts < ${to}`;
  // Without a visit's column to read, the join (the bulk of a query's time) is left out.
  // Not materialized: a statement that reads the rows twice (a funnel) scans
  // twice rather than copying every column of millions of events once.
  if (visits === "none") {
    return `x AS NOT MATERIALIZED (SELECT e.*, e.vid AS vk FROM events e WHERE ${events})`;
  }
  // Joined by the visitor's dense number, which names one visitor within the
  // site both sides keep (visitor-numbers.ts): the events' scan then reads no
  // 8-byte key where the visitors are counted by bitmaps of those numbers
  // (pages where the channel is Email over 90 days at 10M events: the
  // statement's EXPLAIN ANALYZE 0.44–0.53 s → 0.38–0.48, its events' scan
  // 239–282 ms → 178–224 of operator time).
  const joined = (visitWhere: string) => `
    SELECT e.*, e.vid AS vk, v.v_start AS vn, v.* EXCLUDE (site_id, vid, dv, sn)
    FROM events e JOIN visits v ON v.dv = e.dv AND e.ts >= v.v_start AND e.ts <= v.v_end
    WHERE ${events} AND ${ofSite("v", sn)} AND ${visitWhere}`;
  if (visits === "all") return `x AS (${joined(`v.v_end >= ${from} AND v.v_start < ${to}`)})`;
  // The visits across the period's start, then those across its end only: each
  // a range of one column, which the blocks' min/max skip (90 days at 10M
  // events: 5M visits scanned for 28, 149 ms of operator time; in one OR of
  // two columns, no block could be skipped).
  return `x AS (${joined(`v.v_end >= ${from} AND v.v_start < ${from}`)}
    UNION ALL ${joined(`v.v_end >= ${to} AND v.v_start >= ${from} AND v.v_start < ${to}`)})`;
}

/**
 * The visits wholly inside the period as per-visit traffic rows (the `v` rows
 * of a traffic query: every event of such a visit is in the period, so its
 * counts are the visit's own). Only for a query whose dimensions and filters
 * read the visit alone (`x.v_*`), which a visit passes or fails as a whole.
 */
function wholeVisits(sn: number, period: Interval, p: Params): string {
  return `(SELECT *, vid AS vk, v_start AS vn FROM visits
    WHERE ${ofSite("", sn)} AND v_start >= ${p.add(BigInt(period.from))} AND v_end < ${p.add(BigInt(period.to))}) x`;
}

/**
 * The first touches of the period (rows `x`, `vk` their visitor): of each
 * visitor with a pageview in the period, its best pageview of all time by
 * the domain's ranking (attribution/ranking.ts isBetterTouch: one with a
 * channel, i.e. not an internal navigation, first; then the earliest; equal
 * ones: the first stored), kept when it lies in the period. Its visit
 * columns are the pageview's own touch (Direct when internal), so the
 * traffic dimensions' SQL reads it: `landing_page` is its page, `exit_page`
 * none.
 */
function touchRows(sn: number, period: Interval, p: Params): string {
  const site = ofSite("", sn);
  const from = p.add(BigInt(period.from));
  const to = p.add(BigInt(period.to));
  // Which visitors' best pageview lies in the period, from the period's
  // pageviews and only a yes/no of those before and after it (not a sort of
  // every pageview of every visitor of the period, all time: 4.9 s against
  // 1.1 s over 90 days at 10M events). A visitor with a pageview with a
  // channel in the period is new when none before the period has a channel
  // (its best is then its first in the period with a channel); one whose
  // pageviews in the period are all internal, when it has no pageview before
  // the period and none with a channel after it (its best is then its first).
  return `
  inp AS (
    SELECT vid, min(ts) FILTER (WHERE channel IS NOT NULL) AS tc, min(ts) AS ta FROM events
    WHERE ${site} AND name = 'pageview' AND ts >= ${from} AND ts < ${to}
    GROUP BY vid
  ),
  pre AS (
    SELECT vid, bool_or(channel IS NOT NULL) AS chb FROM events
    WHERE ${site} AND name = 'pageview' AND ts < ${from} AND vid IN (SELECT vid FROM inp)
    GROUP BY vid
  ),
  post AS (
    SELECT DISTINCT vid FROM events
    WHERE ${site} AND name = 'pageview' AND ts >= ${to} AND channel IS NOT NULL
      AND vid IN (SELECT vid FROM inp WHERE tc IS NULL)
  ),
  keep AS (
    SELECT inp.vid, coalesce(inp.tc, inp.ta) AS bt, inp.tc IS NOT NULL AS ch
    FROM inp LEFT JOIN pre USING (vid)
    WHERE CASE WHEN inp.tc IS NOT NULL THEN coalesce(NOT pre.chb, true)
      ELSE pre.vid IS NULL AND inp.vid NOT IN (SELECT vid FROM post) END
  ),
  best AS (
    -- The best pageview itself: at that time and of that kind, the first stored.
    SELECT e.* FROM events e JOIN keep k ON e.vid = k.vid AND e.ts = k.bt
    WHERE ${ofSite("e", sn)} AND e.name = 'pageview' AND e.ts >= ${from} AND e.ts < ${to}
      AND (e.channel IS NOT NULL OR NOT k.ch)
    QUALIFY row_number() OVER (PARTITION BY e.vid ORDER BY e.seq) = 1
  ),
  x AS (
    SELECT b.*, b.vid AS vk, coalesce(b.channel, 'Direct') AS v_channel, b.source AS v_source,
      b.medium AS v_medium, b.campaign AS v_campaign, b.term AS v_term, b.content AS v_content,
      b.referrer AS v_referrer, b.page AS v_landing_page, NULL::VARCHAR AS v_exit_page
    FROM best b WHERE b.ts >= ${from} AND b.ts < ${to}
  )`;
}

/** Whether a metric counts distinct visitors (its SQL is then a function of how). */
const countsDistinct = (m: MetricName) => typeof METRICS[m].eventSql === "function";

/** Metrics that read a visit (its identity or its columns), not only its events. */
const VISIT_METRICS: ReadonlySet<MetricName> = new Set([
  "visits",
  "views_per_visit",
  "bounce_rate",
  "visit_duration",
]);

/** Whether SQL over traffic rows reads a visit's columns. */
const readsVisit = (sql: string) => sql.includes("x.v_");
/** Whether SQL over traffic rows reads nothing but a visit's columns. */
const readsVisitOnly = (sql: string) => !/x\.(?!v_)/.test(sql);

/**
 * Succeeded payments of the period in the currency (`pay`), with their
 * customer's first charge, the customer's number among the period's (`ck`,
 * and `numbered`: the id to number) and the payment's (`pn`).
 */
function paymentRows(
  siteId: string,
  currency: string | undefined,
  period: Interval,
  p: Params,
): string {
  const site = p.add(siteId);
  // No currency (a query by the `currency` dimension): every currency, each row in its own.
  const inCurrency = (col: string) =>
    currency === undefined ? "" : `AND ${col} = ${p.add(currency)}`;
  return `
  firsts AS (
    SELECT customer_id, min(paid_at) AS first_paid_at,
      -- Two charges at the same instant: the first is the smaller payment id.
      arg_min(payment_id, (paid_at, payment_id)) AS first_payment_id
    FROM payments
    WHERE site_id = ${site} ${inCurrency("currency")} AND status = 'succeeded' AND kind = 'charge'
    GROUP BY customer_id
  ),
  paid AS (
    SELECT p.*, f.first_paid_at,
      (p.payment_id = f.first_payment_id) AS first_payment
    FROM payments p LEFT JOIN firsts f USING (customer_id)
    WHERE p.site_id = ${site} ${inCurrency("p.currency")} AND p.status = 'succeeded'
      AND p.paid_at >= ${p.add(BigInt(period.from))} AND p.paid_at < ${p.add(BigInt(period.to))}
  ),
  -- The touches' joins, windows and ASOF key on a customer's number, not its
  -- id's string (the multi-touch models over 90 days at 10M events: 177–191 →
  -- 156–169 ms by raw SQL). Materialized, so every reference reads one numbering.
  numbered AS MATERIALIZED (
    SELECT customer_id, row_number() OVER () AS ck FROM (SELECT DISTINCT customer_id FROM paid)
  ),
  pay AS MATERIALIZED (
    SELECT paid.*, n.ck, row_number() OVER () AS pn FROM paid LEFT JOIN numbered n USING (customer_id)
  )`;
}

/** The metrics that read a customer's touches whatever the model. */
const MEDIAN_METRICS: ReadonlySet<MetricName> = new Set([
  "median_days_to_first_payment",
  "median_visits_to_first_payment",
]);

/** The credited visit's own columns a share carries (`t_*` from the visit's `v_*`). */
const VISIT_TOUCH_COLUMNS = [
  "exit_page",
  "term",
  "content",
  "referrer",
  "country",
  "device",
  "browser",
  "os",
];

/**
 * The credited visit's columns looked up together when any one is read:
 * short values of few kinds, so the four cost one's time (a 30-day share
 * table at 10M events: 78 ms with the country, 81 with all four, 42 with
 * none), and the country, device, browser and OS panels share one table.
 */
const CHEAP_VISIT_COLUMNS = ["country", "device", "browser", "os"];

/** A multi-touch share's values of its touch besides the channel (first touch's payment carries them). */
const SHARE_TOUCH_VALUES = ["source", "medium", "campaign", "landing_page"];

/** Every column of the credited visit a share may carry (`t_*`, and a multi-touch share's touch values). */
const CREDITED_VISIT_COLUMNS = [
  "source",
  "medium",
  "campaign",
  "landing_page",
  ...VISIT_TOUCH_COLUMNS,
];

/**
 * The shares as a FROM item (a memo table's name, or a subquery whose
 * placeholders `add` gives), and whether they hold every currency (read in
 * one through {@link sharesOf}).
 */
interface ShareTable {
  from: (add: (v: DuckDBValue) => string) => string;
  allCurrencies: boolean;
}

/** The share tables a query read, by period, model and columns. */
const shareTables = new WeakMap<QueryReads, Map<string, ShareTable>>();

/**
 * The rows of `table` in `currency` (every currency when undefined): a table
 * of every currency is read through a filter, `add` giving its placeholder.
 */
function sharesOf(
  table: ShareTable,
  currency: string | undefined,
  add: (v: DuckDBValue) => string,
): string {
  const from = table.from(add);
  return table.allCurrencies && currency !== undefined
    ? `(SELECT * FROM ${from} WHERE currency = ${add(currency)})`
    : from;
}

/**
 * The revenue rows of a period under the plan's model, each payment split
 * across its customer's touches (the starts of the visits of every visitor
 * linked to it, up to its paid_at) by the domain's rule (attribution-models.ts:
 * exact minor units, largest remainder). First touch keeps the stored
 * attribution: a subquery over the payments each query runs (cheaper than
 * any table of them). The other models', and first touch's with the
 * customers' touches, are a table the query reads (read-memo.ts: made once
 * per write generation for every query that reads the same).
 */
async function shares(
  q: QueryReads,
  plan: WithSiteNumber<Pick<QueryPlan, "siteId" | "currency" | "model">>,
  period: Interval,
  /** Whether the customers' touches are read (multi-touch models and the medians need them). */
  touches: boolean,
  /**
   * The credited visit's columns the query reads (by name without `v_`): its
   * own (`t_*`: exit page, country…), and under a multi-touch model its
   * source, medium, campaign and landing page (one of the country, device,
   * browser and OS brings the four: CHEAP_VISIT_COLUMNS); the others are left NULL.
   * Without any, the credited visit is not looked up: under first touch the
   * payment carries the touch's channel, source, campaign and landing page; a
   * multi-touch share carries its touch's channel.
   */
  visitColumns: readonly string[] = [...CREDITED_VISIT_COLUMNS],
  /**
   * Whether the query reads the customers' ids (the customer dimension, or a
   * filter on it). Otherwise a memo table stores each customer's number and
   * each payment's in their place: the counts of distinct payments and
   * customers, and the medians' distinct payments, read them alike (one
   * number per id within the table), and two integers cost less to write and
   * to count than two strings (the linear model over 90 days at 10M events:
   * 178–197 → 165–185 ms a query).
   */
  customerIds = true,
): Promise<ShareTable> {
  const tables = shareTables.get(q) ?? new Map<string, ShareTable>();
  shareTables.set(q, tables);
  // The credited visit is looked up only for the columns the query reads.
  // In one order, so that queries reading the same columns send the same statement.
  const cheap = CHEAP_VISIT_COLUMNS.some((c) => visitColumns.includes(c));
  const read = new Set(
    CREDITED_VISIT_COLUMNS.filter(
      (c) => visitColumns.includes(c) || (cheap && CHEAP_VISIT_COLUMNS.includes(c)),
    ),
  );
  const key = `${period.from}-${period.to}-${touches}-${[...read].join(",")}-${customerIds}`;
  const known = tables.get(key);
  if (known) return known;
  const site = plan.siteId;
  // First touch: each payment whole, with the values of the visit its stored
  // attribution names (the attributed visitor's visit holding the touch's time).
  const attributedVisit =
    read.size === 0
      ? ""
      : `LEFT JOIN (
          SELECT vid, v_start, v_end, ${[...read].map((c) => `v_${c}`).join(", ")} FROM visits
          WHERE ${ofSite("", plan.sn)} AND vid IN (SELECT touch_vid FROM pay)
            -- Only visits that can hold a touch's time: the visits are stored by
            -- their start, so the others' blocks are skipped (the country panel's
            -- shares over 30 days at 10M events: 38 ms → 10 by raw SQL).
            AND v_start <= (SELECT max(touched_at) FROM pay)
            AND v_end >= (SELECT min(touched_at) FROM pay)
        ) v ON v.vid = pay.touch_vid AND v.v_start <= pay.touched_at AND pay.touched_at <= v.v_end`;
  /** The credited visit's column `c` from the visit rows `v`, when read. */
  const visitValue = (v: string, c: string) => (read.has(c) ? `${v}.v_${c}` : "NULL::VARCHAR");
  const visitValues = (v: string) =>
    VISIT_TOUCH_COLUMNS.map((c) => `${visitValue(v, c)} AS t_${c}`).join(", ");
  // A memo table stores only the credited visit's columns the query reads; the
  // others are NULL in the view over it (made, below): writing twelve columns
  // of NULLs took 30–40 ms of the linear model's table over 90 days at 10M events.
  const storedVisitValues = (v: string) =>
    VISIT_TOUCH_COLUMNS.filter((c) => read.has(c))
      .map((c) => `, ${v}.v_${c} AS t_${c}`)
      .join("");
  const unreadVisitColumns = VISIT_TOUCH_COLUMNS.filter((c) => !read.has(c)).map((c) => `t_${c}`);
  if (plan.model === "first_touch" && !touches) {
    // Every currency in one subquery: the payments are whole, and what only a
    // customer's first charge in a currency carries (time to convert, the
    // medians) is read with the touches (below); a query reads its currency's
    // rows through sharesOf. Not a memo table: making one cost more than every
    // panel's reading the payments (100k payments over 90 days at 10M events:
    // the table 75–130 ms, the channel panel's revenue from it 7 ms, from the
    // payments 5 ms; with the country's visit 110–125 ms, 7 ms, 37 ms).
    const table: ShareTable = {
      from: (add) => `(WITH pay AS (
         SELECT * FROM payments
         WHERE site_id = ${add(site)} AND status = 'succeeded'
           AND paid_at >= ${add(BigInt(period.from))} AND paid_at < ${add(BigInt(period.to))}
       )
       SELECT pay.payment_id, pay.customer_id, pay.kind, pay.currency, pay.amount_minor AS share, pay.paid_at,
         NULL::BOOLEAN AS first_payment, NULL::BIGINT AS first_paid_at, NULL::BIGINT AS first_seen_at,
         NULL::BIGINT AS visits_before,
         -- A payment without a touch is one share under (none) in every touch dimension.
         CASE WHEN pay.channel = ${add(UNATTRIBUTED)} THEN NULL ELSE pay.channel END AS channel,
         pay.source, pay.medium, pay.campaign, pay.landing_page, ${visitValues("v")},
         pay.touch_vid AS touch_vk
       FROM pay ${attributedVisit})`,
      allCurrencies: true,
    };
    tables.set(key, table);
    return table;
  }
  const p = new Params();
  const add = (v: DuckDBValue) => p.add(v);
  // The customers' touches (the starts of the visits of every visitor linked to
  // it, its persistent id and the daily ids stitched to that), in time order,
  // ties by visitor key; the medians count from the earliest touch before the
  // customer's first charge, whatever the model (none: left out).
  const touchRows = `${paymentRows(site, plan.currency, period, p)},
    linked AS (
      SELECT n.ck, l.vid FROM links l JOIN numbered n USING (customer_id)
      WHERE l.site_id = ${add(site)}
    ),
    st AS (SELECT vid, pvid FROM stitches WHERE site_id = ${add(site)}),
    persistent AS (
      SELECT ck, vid AS p FROM linked
      UNION SELECT linked.ck, st.pvid FROM linked JOIN st USING (vid)
    ),
    cust AS (
      SELECT ck, p AS vk FROM persistent
      UNION SELECT persistent.ck, st.vid FROM persistent JOIN st ON st.pvid = persistent.p
    ),
    touch AS (
      -- Only the keys, the start and the channel (the windows' and the medians'
      -- columns): a visit's other columns, read for every visit of the linked
      -- visitors, made this scan of the visits four times slower.
      -- Joined by the visitors' numbers (one per key within a site), as the
      -- breakdowns join events to visits: the multi-touch models over 90 days
      -- at 10M events, this step 59 → 39 ms by raw SQL.
      SELECT c.ck, c.vk, v.v_start, v.v_channel
      FROM cust c JOIN visitor_numbers n ON n.site_id = ${add(site)} AND n.vid = c.vk
        JOIN visits v ON v.dv = n.dv
      WHERE ${ofSite("v", plan.sn)}
    ),
    seen AS (
      SELECT f.ck, min(t.v_start) AS first_seen_at, count(*) AS visits_before
      FROM (SELECT DISTINCT ck, first_paid_at FROM pay WHERE first_paid_at IS NOT NULL) f
      JOIN touch t ON t.ck = f.ck AND t.v_start < f.first_paid_at
      GROUP BY f.ck
    )`;
  // The query's currency, when it names one, is a constant of the view too.
  const currency = plan.currency;
  const storedCurrency = (row: string) => (currency === undefined ? `, ${row}.currency` : "");
  const ids = (row: string) =>
    `${row}.pn AS payment_id, ${customerIds ? `${row}.customer_id` : `${row}.ck AS customer_id`}`;
  const head = `${ids("pay")}, pay.kind${storedCurrency("pay")}`;
  const tail =
    "pay.paid_at, pay.first_payment, pay.first_paid_at, s.first_seen_at, s.visits_before";
  /** The table of `select`'s rows, read with the `unread` columns as NULLs and the query's currency. */
  const made = async (select: string, unread: readonly string[]) => {
    const name = await q.table(select, p.values);
    const table: ShareTable = {
      from: (add) => {
        const constants = [
          ...(currency === undefined ? [] : [`${add(currency)}::VARCHAR AS currency`]),
          ...unread.map((c) => `NULL::VARCHAR AS ${c}`),
        ];
        return constants.length === 0 ? name : `(SELECT *, ${constants.join(", ")} FROM ${name})`;
      },
      allCurrencies: false,
    };
    tables.set(key, table);
    return table;
  };
  if (plan.model === "first_touch") {
    return made(
      `WITH ${touchRows}
       SELECT ${head}, pay.amount_minor AS share, ${tail},
         CASE WHEN pay.channel = ${add(UNATTRIBUTED)} THEN NULL ELSE pay.channel END AS channel,
         pay.source, pay.medium, pay.campaign, pay.landing_page${storedVisitValues("v")},
         pay.touch_vid AS touch_vk
       FROM pay ${attributedVisit} LEFT JOIN seen s ON s.ck = pay.ck`,
      unreadVisitColumns,
    );
  }
  const split = modelSplit[plan.model];
  // The credited visit's columns besides its channel, looked up only when read.
  const creditedVisit =
    read.size === 0
      ? ""
      : `LEFT JOIN (
          SELECT vid, v_start, ${[...read].map((c) => `v_${c}`).join(", ")} FROM visits
          WHERE ${ofSite("", plan.sn)} AND vid IN (SELECT vk FROM x)
        ) tv ON tv.vid = x.vk AND tv.v_start = x.t_start`;
  // The touches before a payment are a prefix of its customer's touches in
  // time order, so each customer's touches are numbered once (`idx`; `upto`:
  // how many start at or before it, ties included; under last non-direct,
  // `lnd`: the last non-Direct one's number so far) and a payment takes the
  // count of its latest touch before paid_at (ASOF). The windows sort the
  // touches once, not once per payment, and the split is closed-form per model
  // (modelSplit), not a sort of remainders: the linear model over 90 days at
  // 10M events, 263–277 ms → 166–179 by raw SQL.
  return made(
    `WITH ${touchRows},
     ranked AS (
       SELECT *, count(*) OVER upto AS upto
         ${plan.model === "last_non_direct" ? ", max(CASE WHEN v_channel <> 'Direct' THEN idx END) OVER upto AS lnd" : ", NULL::BIGINT AS lnd"}
       FROM (SELECT *, row_number() OVER (PARTITION BY ck ORDER BY v_start, vk) - 1 AS idx FROM touch)
       WINDOW upto AS (PARTITION BY ck ORDER BY v_start RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
     ),
     counted AS (
       SELECT *${split.perPayment ? `, ${split.perPayment}` : ""} FROM (
         SELECT pay.*, abs(pay.amount_minor) AS mag, r.upto AS n, r.lnd
         FROM pay ASOF LEFT JOIN ranked r ON r.ck = pay.ck AND pay.paid_at > r.v_start
       )
     ),
     x AS (
       SELECT c.*, t.vk, t.v_start AS t_start, t.v_channel, ${split.minor} AS minor
       FROM counted c LEFT JOIN ranked t
         ON t.ck = c.ck AND t.idx < c.n AND ${split.credited}
     )
     SELECT ${ids("x")}, x.kind${storedCurrency("x")},
       -- A payment without a touch before it is one unattributed share.
       CASE WHEN x.n IS NULL THEN x.amount_minor
         WHEN x.amount_minor < 0 THEN -x.minor ELSE x.minor END::BIGINT AS share,
       x.paid_at, x.first_payment, x.first_paid_at, s.first_seen_at, s.visits_before,
       x.v_channel AS channel${SHARE_TOUCH_VALUES.filter((c) => read.has(c))
         .map((c) => `, tv.v_${c} AS ${c}`)
         .join("")}${storedVisitValues("tv")},
       x.vk AS touch_vk
     FROM x ${creditedVisit}
       LEFT JOIN seen s ON s.ck = x.ck`,
    [...SHARE_TOUCH_VALUES.filter((c) => !read.has(c)), ...unreadVisitColumns],
  );
}

/** One side's aggregate rows: dimension values then the metrics, by name. */
interface SideRow {
  dims: string[];
  values: Record<string, number>;
  /** Money sums exactly (DuckDB's HUGEINT sums): past 2^53 a number would round. */
  exact: Record<string, bigint>;
}

/** A row's side rows: traffic `t`, revenue `r`, first touches `f`. */
interface MergedRow {
  dims: string[];
  t?: SideRow;
  r?: SideRow;
  f?: SideRow;
}

const SIDE_KEYS = { traffic: "t", revenue: "r", touches: "f" } as const;

function num(v: unknown): number {
  if (v === null || v === undefined) return Number.NaN;
  return typeof v === "bigint" ? Number(v) : Number(v);
}

/** A side's statement (sideStatement). */
interface Statement {
  sql: string;
  values: DuckDBValue[];
  /** Whether the grand total's row is the period's total (see sideStatement). */
  exact: boolean;
  /** Whether it has the grand total's row beside the groups (grouping sets). */
  sets: boolean;
  /** Whether it counts visitors by bitmaps of their numbers. */
  bitmaps?: boolean;
  /**
   * Visitors counted by bitmaps in parts (semantic-layer.ts, `bitmapsInParts`):
   * the statements of the parts, run one after the other, whose rows add up
   * (`sql` is the first's).
   */
  parts?: { sql: string; values: DuckDBValue[] }[];
  /** The same answer from groups kept across batches of events and grown by them. */
  grow?: GrowableBreakdown;
}

/** The rows and the totals in one statement: the groups and the grand total as two grouping sets. */
const groupBy = (exprs: string[], sets: boolean) =>
  exprs.length === 0
    ? ""
    : sets
      ? `GROUP BY GROUPING SETS ((${exprs.join(", ")}), ())`
      : `GROUP BY ${exprs.join(", ")}`;
/** The last column: 1 on the grand total's row. */
const grouping = (exprs: string[], sets: boolean) =>
  exprs.length === 0 ? "1 AS g" : sets ? `grouping(${exprs[0]}) AS g` : "0 AS g";

/**
 * One side's statement over `dims`: its groups, with `sets` the grand total
 * too. `exact` says whether that total is the period's (it is not when a
 * visit's per-visit rows fall in several groups and a metric counts visits).
 */
async function sideStatement(
  q: QueryReads,
  plan: WithSiteNumber<QueryPlan>,
  period: Interval,
  side: Side,
  dims: DimensionName[],
  metrics: MetricName[],
  sets: boolean,
  /** Visitors counted by key whatever the statement's size (its bitmaps failed). */
  byKey = false,
): Promise<Statement> {
  const p = new Params();
  const tz = zoneClock(plan.timeZone, period);
  // Grouped on: a time dimension by its bucket's start, labelled once per group (`label`).
  const dimSql = dims.map((d) => dimensionSql(d, side, p, tz, true) ?? `'${NONE_VALUE}'`);
  const label = (sql: string, i: number) => {
    const d = dims[i] as DimensionName;
    return d.startsWith("time:") ? timeLabel(d.slice(5) as TimeGrain, sql) : sql;
  };
  const outSql = dimSql.map(label);
  const where = plan.filters.map((f) => filterSql(f, side, p, tz));
  if (side === "touches") {
    // One row per visitor whose first touch is in the period: each counts in one group.
    return {
      sql: `WITH ${touchRows(plan.sn, period, p)}
        SELECT ${[...outSql, ...metrics.map((m) => metricSql(METRICS[m].sql, HASHED_VISITORS)), "count(*)", grouping(dimSql, sets)].join(", ")}
        FROM x ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ${groupBy(dimSql, sets)}`,
      values: p.values,
      exact: true,
      sets,
    };
  }
  if (side === "revenue") {
    // Every model reads the shares: under first touch too, a share carries the values of
    // the attributed visit (its exit page, its first event's country…), as docs/reports.md says.
    const touches =
      plan.model !== "first_touch" ||
      metrics.some((m) => MEDIAN_METRICS.has(m)) ||
      [...plan.dimensions, ...plan.filters.map((f) => f.dimension)].some(
        (d) => DIMENSIONS[d as keyof typeof DIMENSIONS]?.touches,
      );
    // The credited visit's columns the query reads (under first touch, the
    // payment itself carries the touch's source, medium, campaign and landing page).
    const reads = (c: string) => {
      const col = VISIT_TOUCH_COLUMNS.includes(c)
        ? `t_${c}`
        : plan.model === "first_touch"
          ? undefined
          : c;
      return col !== undefined && [...dimSql, ...where].some((x) => x.includes(`r.${col}`));
    };
    const visitColumns = CREDITED_VISIT_COLUMNS.filter(reads);
    const table = await shares(
      q,
      plan,
      period,
      touches,
      visitColumns,
      [...dimSql, ...where].some((x) => x.includes("r.customer_id")),
    );
    const rows = `r AS (SELECT * FROM ${sharesOf(table, plan.currency, (v) => p.add(v))})`;
    // A share is one payment's part: payments are counted distinct, amounts summed.
    return {
      sql: `WITH ${rows}
        SELECT ${[...outSql, ...metrics.map((m) => metricSql(METRICS[m].sql, HASHED_VISITORS)), "count(*)", grouping(dimSql, sets)].join(", ")}
        FROM r ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ${groupBy(dimSql, sets)}`,
      values: p.values,
      exact: true,
      sets,
    };
  }
  // One row per visit and dimension values: a visit counts once per group.
  const groupDims = dimSql.map((d, i) => `${d} AS d${i}`);
  const filter = where.length ? `WHERE ${where.join(" AND ")}` : "";
  const perVisit = metrics.some((m) => VISIT_METRICS.has(m));
  const visitSql = [...dimSql, ...where];
  // Metrics of events alone, by event values: one row per visitor is enough, no join.
  const mode = perVisit || visitSql.some(readsVisit) ? "all" : "none";
  // Dimensions and filters of the visit alone: the visits wholly inside the
  // period are read from `visits`, only the events of those across its edges joined.
  const whole = mode === "all" && visitSql.every(readsVisitOnly);
  // Metrics of events alone (visitors, pageviews…): aggregated straight from the
  // event rows, without grouping them into per-visit rows first.
  // Visitors counted by bitmaps of their numbers where those stay small (visitorCount).
  let visitors =
    metrics.some(countsDistinct) && !byKey
      ? await visitorCount(q, plan, period, dims, whole)
      : HASHED_VISITORS;
  // In parts only where every metric adds up across them: a group's visitors
  // (a visitor has one number, so it is in one part) and its events. The
  // groups' statements below; any other, by key as before the parts.
  const addsUp = metrics.every(
    (m) => m === "visitors" || (!whole && (m === "pageviews" || m === "events")),
  );
  if (visitors.parts && !(sets && dims.length > 0 && addsUp)) visitors = HASHED_VISITORS;
  const bitmaps = visitors !== HASHED_VISITORS;
  /** The statement of each part (one, unless the visitors are counted in parts). */
  const byPart = (
    statement: (count: VisitorCount, filter: string) => string,
  ): Pick<Statement, "sql" | "values" | "parts"> => {
    const parts = (visitors.parts ?? [visitors]).map((count) => {
      const tests = [...where, ...(count.within ? [count.within("x")] : [])];
      return {
        sql: statement(count, tests.length ? `WHERE ${tests.join(" AND ")}` : ""),
        values: p.values,
      };
    });
    const [first] = parts as [{ sql: string; values: DuckDBValue[] }];
    return parts.length > 1 ? { ...first, parts } : first;
  };
  // Visitors by bitmaps, and nothing else but events' counts: the groups'
  // bitmaps, and the period's total from their union (every event is in one
  // group), in one statement: no second scan, no grouping set counted again.
  const bitmap = visitors.bitmap ?? visitors.parts?.[0]?.bitmap;
  if (
    !whole &&
    sets &&
    bitmap &&
    dims.length > 0 &&
    metrics.every((m) => m === "visitors" || m === "pageviews" || m === "events")
  ) {
    const total = (m: MetricName, i: number) =>
      m === "visitors"
        ? `coalesce(bit_count(bit_or(m${i})), 0)`
        : `coalesce(sum(m${i}), 0)::BIGINT`;
    const each = (m: MetricName, i: number) => (m === "visitors" ? `n${i}` : `m${i}`);
    const refs = dims.map((_, i) => `d${i}`);
    // Made once: its parameters are every part's.
    const rows = trafficRows(plan.sn, period, p, mode);
    /** A metric's aggregate over the events, its visitors counted by `count`'s bitmaps. */
    const aggregate = (count: VisitorCount, m: MetricName) =>
      m === "visitors"
        ? (count.bitmap as (row: "x") => string)("x")
        : metricSql(METRICS[m].eventSql, count);
    const statement: Statement = {
      ...byPart((count, partFilter) => {
        const part = (m: MetricName) => aggregate(count, m);
        // A group's visitors are counted beside its bitmap, in the projection over
        // the grouping, which DuckDB runs on every thread; counted over the
        // materialized groups they took one thread (top pages over 90 days at 10M:
        // 47 ms of a 215 ms statement, which now takes 193).
        const counted = (m: MetricName, i: number) =>
          m === "visitors"
            ? [`${part(m)} AS m${i}`, `bit_count(${part(m)}) AS n${i}`]
            : [`${part(m)} AS m${i}`];
        return `WITH ${rows},
        grp AS MATERIALIZED (
          SELECT ${[...groupDims, ...metrics.flatMap(counted), "count(*) AS c"].join(", ")}
          FROM x ${partFilter} GROUP BY ${refs.join(", ")}
        )
        SELECT ${[...refs.map(label), ...metrics.map(each), "c", "0 AS g"].join(", ")} FROM grp
        UNION ALL
        SELECT ${[...refs.map(() => "NULL"), ...metrics.map(total), "coalesce(sum(c), 0)::BIGINT", "1 AS g"].join(", ")} FROM grp`;
      }),
      exact: true,
      sets: true,
      bitmaps,
    };
    // Rows of the events alone, one statement: kept across batches of events
    // and grown by them (grown-breakdowns.ts).
    const bits = visitors.bits;
    if (mode === "none" && !visitors.parts && bits !== undefined) {
      const groups = (since?: bigint) =>
        `WITH ${rows}${since === undefined ? "" : `, y AS (SELECT * FROM x WHERE x.seq > ${BigInt(since)})`}
        SELECT ${[...groupDims, ...metrics.map((m, i) => `${aggregate(visitors, m)} AS m${i}`), "count(*) AS c"].join(", ")}
        FROM ${since === undefined ? "x" : "y AS x"} ${filter} GROUP BY ${refs.join(", ")}`;
      const scope = periodScope(plan.siteId, period);
      statement.grow = {
        key: statementKey(statement.sql, statement.values),
        groups,
        values: p.values,
        dims: dims.length,
        metrics: metrics.map((m) => (m === "visitors" ? "bitmap" : "count")),
        label,
        groupBytes: Math.ceil(bits / 8) * metrics.filter((m) => m === "visitors").length,
        scope,
        plain: () => q.rows(statement.sql, statement.values, scope),
      };
    }
    return statement;
  }
  if (!whole && metrics.every((m) => METRICS[m].eventSql !== undefined)) {
    // A distinct count over grouping sets is counted once per set (DuckDB keeps a
    // distinct table for each): over all of the period's events, the rows and the
    // total as two statements cost less (top pages at 10M: 1.35 s to 0.80 s on an
    // idle host). A filter leaves few events, and a second scan then costs more
    // than the second set (browsers where the country is DE: 63 ms to 100 ms);
    // over per-visit rows (below) deriving them twice costs more too.
    // Counted again by key after its bitmaps failed: in one statement, as the
    // one with bitmaps was read (runPeriod).
    const eventSets = sets && (byKey || plan.filters.length > 0 || !metrics.some(countsDistinct));
    return {
      sql: `WITH ${trafficRows(plan.sn, period, p, mode)}
        SELECT ${[...outSql, ...metrics.map((m) => metricSql(METRICS[m].eventSql, visitors)), "count(*)", grouping(dimSql, eventSets)].join(", ")}
        FROM x ${filter} ${groupBy(dimSql, eventSets)}`,
      values: p.values,
      exact: true,
      sets: eventSets,
      bitmaps,
    };
  }
  // Made once: their parameters are every part's.
  const rows = trafficRows(plan.sn, period, p, whole ? "straddling" : mode);
  const visitsWhole = whole ? wholeVisits(plan.sn, period, p) : "";
  /** The per-visit rows of the events and (whole) visits that `rowFilter` keeps. */
  const perVisitRows = (
    rowFilter: string,
  ) => `SELECT ${[...groupDims, "x.vk", "x.dv", ...(mode === "all" ? ["x.vn"] : [])].join(", ")},
        count(*) FILTER (WHERE ${IS_PAGEVIEW}) AS pv,
        count(*) FILTER (WHERE ${IS_COUNTED}) AS ev,
        bool_or(${IS_GOAL}) AS conv
        ${mode === "all" ? ", any_value(x.v_events) AS v_events, any_value(x.v_seconds) AS v_seconds" : ""}
      FROM x ${rowFilter}
      GROUP BY ALL
      ${
        whole
          ? `UNION ALL SELECT ${[...groupDims, "x.vk", "x.dv", "x.vn"].join(", ")},
        x.v_pageviews AS pv, x.v_counted AS ev, x.v_converted AS conv, x.v_events, x.v_seconds
      FROM ${visitsWhole} ${rowFilter}`
          : ""
      }`;
  const vd = dims.map((_, i) => `v.d${i}`);
  if (sets && bitmap && dims.length > 0 && metrics.every((m) => m === "visitors")) {
    // Visitors alone, by bitmaps, over per-visit rows: as over events above,
    // the groups' bitmaps and the total from their union (every row is in one
    // group), not a second bitmap of every row for the total's grouping set
    // (sources over 90 days at 10M events: 145–215 → 110–118 ms by raw SQL).
    const refs = dims.map((_, i) => `d${i}`);
    return {
      ...byPart((count, partFilter) => {
        const part = (count.bitmap as (row: "v") => string)("v");
        return `WITH ${rows},
        v AS (${perVisitRows(partFilter)}),
        grp AS MATERIALIZED (
          SELECT ${[...vd.map((d, i) => `${d} AS d${i}`), ...metrics.flatMap((_, i) => [`${part} AS m${i}`, `bit_count(${part}) AS n${i}`]), "count(*) AS c"].join(", ")}
          FROM v GROUP BY ${vd.join(", ")}
        )
        SELECT ${[...refs.map(label), ...metrics.map((_, i) => `n${i}`), "c", "0 AS g"].join(", ")} FROM grp
        UNION ALL
        SELECT ${[...refs.map(() => "NULL"), ...metrics.map((_, i) => `coalesce(bit_count(bit_or(m${i})), 0)`), "coalesce(sum(c), 0)::BIGINT", "1 AS g"].join(", ")} FROM grp`;
      }),
      exact: dimSql.every(readsVisitOnly),
      sets: true,
      bitmaps,
    };
  }
  return {
    sql: `WITH ${rows},
      v AS (${perVisitRows(filter)})
      SELECT ${[...vd.map(label), ...metrics.map((m) => metricSql(METRICS[m].sql, visitors)), "count(*)", grouping(vd, sets)].join(", ")}
      FROM v ${groupBy(vd, sets)}`,
    values: p.values,
    // Dimensions of the visit alone put each visit in one group: the sum of the groups' visits is the total's.
    exact: dimSql.every(readsVisitOnly),
    sets,
    bitmaps,
  };
}

/** Runs one plan's period: its rows by their dimension key, and its totals. */
async function runPeriod(
  q: QueryReads,
  plan: WithSiteNumber<QueryPlan>,
  period: Interval,
): Promise<{ rows: Merged; totals: Merged }> {
  const dims = plan.dimensions;
  const need: Record<Side, Set<MetricName>> = {
    traffic: new Set(),
    revenue: new Set(),
    touches: new Set(),
  };
  for (const m of plan.metrics) {
    const def = METRICS[m];
    if (def.source === "both") {
      for (const n of def.needs?.traffic ?? []) need.traffic.add(n);
      for (const n of def.needs?.revenue ?? []) need.revenue.add(n);
    } else need[def.source].add(m);
  }
  const rows: Merged = new Map();
  const totals: Merged = new Map();
  for (const side of ["traffic", "revenue", "touches"] as const) {
    if (need[side].size === 0) continue;
    const metrics = [...need[side]];
    // A traffic statement reads the site's events and visits of the period
    // alone: its answer outlives writes of later events (read-memo.ts). The
    // others read payments and all-time touches, which any write may change.
    const scope = side === "traffic" ? periodScope(plan.siteId, period) : undefined;
    /** A statement's rows; by key when its bitmaps met a number past their top (visitorCount). */
    const rowsOf = async (st: Statement, over: DimensionName[], sets: boolean) => {
      try {
        if (st.grow && q.grown) return await q.grown.rows(q.conn, st.grow);
        if (!st.parts) return await q.rows(st.sql, st.values, scope);
        // One part after the other: a part's bitmaps are in memory alone.
        const each: DuckDBValue[][][] = [];
        for (const part of st.parts) each.push(await q.rows(part.sql, part.values, scope));
        return addedUp(each, over.length);
      } catch (err) {
        if (!st.bitmaps || !isBitmapRangeError(err)) throw err;
        const again = await sideStatement(q, plan, period, side, over, metrics, sets, true);
        return q.rows(again.sql, again.values, scope);
      }
    };
    const read = async (
      st: Statement,
      over: DimensionName[],
      sets: boolean,
      into: "both" | "rows" | "totals",
    ) => {
      const n = over.length;
      for (const row of await rowsOf(st, over, sets)) {
        const values: Record<string, number> = {};
        const exact: Record<string, bigint> = {};
        metrics.forEach((m, i) => {
          const cell = row[n + i];
          values[m] = num(cell);
          if (typeof cell === "bigint") exact[m] = cell;
        });
        const count = num(row[n + metrics.length]);
        const total = num(row[n + metrics.length + 1]) === 1;
        const put = (map: Merged, d: string[]) => {
          const key = JSON.stringify(d);
          const cur = map.get(key) ?? { dims: d };
          cur[SIDE_KEYS[side]] = { dims: d, values, exact };
          map.set(key, cur);
        };
        // The totals are always one row; rows are the groups with data.
        if (total && into !== "rows") put(totals, []);
        if (into === "totals" || (n > 0 && total) || count === 0) continue;
        put(
          rows,
          row.slice(0, n).map((x) => String(x)),
        );
      }
    };
    const both = await sideStatement(q, plan, period, side, dims, metrics, true);
    if (dims.length === 0 || (both.sets && both.exact)) {
      await read(both, dims, true, "both");
      continue;
    }
    await read(
      both.sets ? await sideStatement(q, plan, period, side, dims, metrics, false) : both,
      dims,
      !both.sets,
      "rows",
    );
    await read(await sideStatement(q, plan, period, side, [], metrics, false), [], false, "totals");
  }
  return { rows, totals };
}

/**
 * The rows of the parts of a statement (`Statement.parts`) as one statement's:
 * the rows of each group (its `n` dimension values, then the grand total's
 * flag, the last column) with every other column added up, as every metric
 * of a part's statement is a count.
 */
function addedUp(parts: DuckDBValue[][][], n: number): DuckDBValue[][] {
  const groups = new Map<string, DuckDBValue[]>();
  for (const rows of parts) {
    for (const row of rows) {
      const key = JSON.stringify([...row.slice(0, n), row[row.length - 1]].map(String));
      const known = groups.get(key);
      if (!known) {
        groups.set(key, [...row]);
        continue;
      }
      for (let i = n; i < row.length - 1; i++) known[i] = sum(known[i] ?? null, row[i] ?? null);
    }
  }
  return [...groups.values()];
}

/** Two counts added up: exact as BIGINTs, a NULL none. */
function sum(a: DuckDBValue, b: DuckDBValue): DuckDBValue {
  if (a === null) return b;
  if (b === null) return a;
  return typeof a === "bigint" && typeof b === "bigint" ? a + b : Number(a) + Number(b);
}

/** Rows of both sides merged by their dimension values. */
type Merged = Map<string, MergedRow>;

/** Every bucket label of a time grain over a period, in order (hours stepped, the zone's calendar). */
async function bucketLabels(
  q: QueryReads,
  grain: TimeGrain,
  period: Interval,
  timeZone: string,
): Promise<string[]> {
  const bucket = timeBucket(grain, "t.ms", zoneClock(timeZone, period));
  const r = await q.rows(
    `SELECT DISTINCT ${bucket} AS b FROM (SELECT unnest(range(${BigInt(period.from)}, ${BigInt(period.to)}, 3600000)) AS ms) t ORDER BY b`,
  );
  return r.map((x) => String(x[0]));
}

/**
 * Keys that match a row of the period with the comparison's row: equal
 * dimension values, a time bucket replaced by its position in its period.
 */
async function positionalKeys(
  q: QueryReads,
  plan: QueryPlan,
  period: Interval,
  comparison: Interval,
): Promise<{ period(dims: string[]): string; comparison(dims: string[]): string }> {
  const positions = async (p: Interval) => {
    const maps = new Map<number, Map<string, number>>();
    for (const [i, d] of plan.dimensions.entries()) {
      if (!d.startsWith("time:")) continue;
      const labels = await bucketLabels(q, d.slice(5) as TimeGrain, p, plan.timeZone);
      maps.set(i, new Map(labels.map((l, k) => [l, k])));
    }
    return (dims: string[]) =>
      JSON.stringify(dims.map((v, i) => (maps.has(i) ? `#${maps.get(i)?.get(v)}` : v)));
  };
  return { period: await positions(period), comparison: await positions(comparison) };
}

/** The metric values of one merged row. */
function metricValues(plan: QueryPlan, row: Partial<MergedRow>): MetricValue[] {
  const t = row.t?.values ?? {};
  const r = row.r?.values ?? {};
  // Without a currency (by the `currency` dimension) a row's amounts are in its currency;
  // the totals would add currencies up, so their amounts are unset.
  const byCurrency = plan.dimensions.indexOf("currency");
  const currency = plan.currency ?? (byCurrency >= 0 ? row.dims?.[byCurrency] : undefined);
  return plan.metrics.map((m): MetricValue => {
    const def = METRICS[m];
    let v: number | undefined;
    const side = def.source === "both" ? undefined : row[SIDE_KEYS[def.source]];
    if (def.source === "both") v = def.combine?.(t, r);
    else v = side?.values[m];
    if (def.source !== "both" && side === undefined && def.kind !== "number") v = 0;
    if (v === undefined || Number.isNaN(v)) return { kind: "none" };
    if (def.kind === "money") {
      if (currency === undefined) return { kind: "none" };
      return { kind: "money", currency, minor: side?.exact[m] ?? BigInt(Math.round(v)) };
    }
    return { kind: def.kind, value: v };
  });
}

const sortValue = (v: MetricValue | undefined): number | undefined =>
  v === undefined || v.kind === "none" ? undefined : v.kind === "money" ? Number(v.minor) : v.value;

/** Creates the engine. */
export function createDuckDbAnalytics(options: DuckDbAnalyticsOptions): AnalyticsEngine {
  const running = new Map<string, number>();
  // The pieces that queries of one write generation share (read-memo.ts); a
  // store that tells no generation (a test's stand-in) shares none.
  const memo =
    typeof options.analytics.generation === "number"
      ? createReadMemo(options.analytics)
      : undefined;
  const pager = options.removals ? createEventPager(options.removals) : undefined;
  // Kept past the generations, as a bound of a breakdown's groups (value-sets.ts);
  // let go as soon as a write that may remove events (an erasure…) ends.
  const valueSets = memo ? createValueSets({ removals: options.removals }) : undefined;
  // Breakdowns over events kept past batches of events, grown by them.
  const grown = memo ? createGrownBreakdowns(options.analytics) : undefined;
  // Funnels' first steps, kept past batches of events and grown by them.
  const firsts = memo
    ? createFirstStepPlaces(options.analytics, { maxBytes: options.firstStepBytes })
    : undefined;
  if (valueSets) {
    options.analytics.onGeneration?.((scope) => {
      if (scope === undefined && !options.analytics.writing) valueSets.sweep();
    });
  }

  /**
   * Runs `work` on a connection of its own, within the time limit and, unless
   * `slotted` is false (a fixed report's plan), within the site's slots.
   */
  const withConnection = async <T>(
    siteId: string,
    signal: AbortSignal | undefined,
    /** Given the reads and the site's number in the file (site-numbers.ts). */
    work: (q: QueryReads, sn: number) => Promise<T>,
    slotted = true,
  ): Promise<T> => {
    const n = running.get(siteId) ?? 0;
    if (slotted && n >= options.perSite) throw errors.tooManyQueries();
    running.set(siteId, n + 1);
    let conn: DuckDBConnection | undefined;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      conn?.interrupt();
    }, options.timeoutMs);
    const onAbort = () => conn?.interrupt();
    signal?.addEventListener("abort", onAbort);
    try {
      conn = await options.analytics.connect();
      // A query past its limit or whose caller left runs no statement more.
      const alive = () => !timedOut && !signal?.aborted;
      const sn = await siteNumberOf(conn, siteId);
      const reads = memo
        ? { ...memo.reads(conn, alive), valueSets, grown, firsts }
        : directReads(conn);
      return await work({ ...reads, bitmaps: options.bitmaps }, sn);
    } catch (err) {
      if (timedOut) throw errors.queryTimeout(options.timeoutMs, err);
      if (err instanceof Error && err.name === "DomainError") throw err;
      throw errors.analyticsUnavailable(err);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      if (conn) await memo?.release(conn);
      conn?.closeSync();
      const left = (running.get(siteId) ?? 1) - 1;
      if (left === 0) running.delete(siteId);
      else running.set(siteId, left);
    }
  };

  /** Runs a stored-events read on a connection of its own; a failure is the engine's outage. */
  const withReader = async <T>(work: (conn: DuckDBConnection) => Promise<T>): Promise<T> => {
    let conn: DuckDBConnection | undefined;
    try {
      conn = await options.analytics.connect();
      return await work(conn);
    } catch (err) {
      throw errors.analyticsUnavailable(err);
    } finally {
      conn?.closeSync();
    }
  };

  /** A query plan's answer through `q`. */
  const answer = async (q: QueryReads, plan: WithSiteNumber<QueryPlan>): Promise<QueryResult> => {
    const { rows, totals } = await runPeriod(q, plan, plan.period);
    const compared_ = plan.comparison ? await runPeriod(q, plan, plan.comparison) : undefined;
    const comparison = compared_?.rows;
    const comparisonTotals = compared_?.totals;
    // A time dimension's bucket is matched with the bucket at the same position.
    const match =
      comparison && plan.comparison
        ? await positionalKeys(q, plan, plan.period, plan.comparison)
        : undefined;
    const compared = new Map<string, Partial<MergedRow>>();
    for (const row of comparison?.values() ?? []) {
      compared.set(match?.comparison(row.dims) ?? "", row);
    }
    // A row exists when something a requested metric counts falls in it: events for a
    // traffic metric, payment shares for a revenue one (visitors read only to divide
    // revenue_per_visitor do not make a row).
    const wants = (s: string) => plan.metrics.some((m) => METRICS[m].source === s);
    const wantsRevenue = wants("revenue") || wants("both");
    const present = [...rows.values()].filter(
      (row) =>
        (wants("traffic") && row.t) || (wantsRevenue && row.r) || (wants("touches") && row.f),
    );
    const all: QueryResultRow[] = present.map((row) => {
      const out: QueryResultRow = { dimensions: row.dims, metrics: metricValues(plan, row) };
      if (match)
        out.comparison = metricValues(plan, {
          ...compared.get(match.period(row.dims)),
          dims: row.dims,
        });
      return out;
    });
    // Each row's sort values and tie key computed once, not in every comparison
    // (a breakdown by customer sorts its 20,000 rows at 10M events).
    const keys = new Map(
      all.map((row) => [
        row,
        {
          by: plan.orderBy.map((o) => {
            const di = plan.dimensions.indexOf(o.field as DimensionName);
            return di >= 0
              ? (row.dimensions[di] ?? "")
              : sortValue(row.metrics[plan.metrics.indexOf(o.field as MetricName)]);
          }),
          tie: JSON.stringify(row.dimensions),
        },
      ]),
    );
    all.sort((a, b) => {
      const ka = keys.get(a);
      const kb = keys.get(b);
      if (!ka || !kb) return 0;
      for (let i = 0; i < plan.orderBy.length; i++) {
        const o = plan.orderBy[i] as QueryPlan["orderBy"][number];
        const x = ka.by[i];
        const y = kb.by[i];
        // A metric with no value sorts last either way.
        if (x === undefined || y === undefined) {
          if (x !== y) return x === undefined ? 1 : -1;
          continue;
        }
        const c = x < y ? -1 : x > y ? 1 : 0;
        if (c !== 0) return o.desc ? -c : c;
      }
      // Ties in a stable order: by the dimension values.
      return ka.tie < kb.tie ? -1 : ka.tie > kb.tie ? 1 : 0;
    });
    const page = all.slice(plan.offset, plan.offset + plan.limit);
    const result: QueryResult = {
      rows: page,
      totals: metricValues(plan, totals.values().next().value ?? {}),
      more: all.length > plan.offset + plan.limit,
    };
    if (comparisonTotals) {
      result.comparisonTotals = metricValues(plan, comparisonTotals.values().next().value ?? {});
    }
    return result;
  };

  return {
    query(plan, signal) {
      return withConnection(plan.siteId, signal, (q, sn) => answer(q, { ...plan, sn }));
    },
    report(plan, signal) {
      return withConnection(plan.siteId, signal, (q, sn) => answer(q, { ...plan, sn }), false);
    },
    funnel(plan: FunnelPlan, signal) {
      return withConnection(plan.siteId, signal, (q, sn) => runFunnel(q, { ...plan, sn }));
    },
    // The stored events' reads: outside the per-site query slots (a ListEvents or
    // an export page is small and bounded), on a connection of their own.
    pageEvents: (siteId, q) =>
      withReader((conn) =>
        pager ? pager(async () => conn, siteId, q) : pageEvents(conn, siteId, q),
      ),
    countEvents: (siteId, filter) => withReader((conn) => countEvents(conn, siteId, filter)),
  };
}

/**
 * A URL's scheme and host as a regular expression (RE2's, DuckDB's): what a
 * page stored whole (visits.ts, `pageOf`) has before its path.
 */
const URL_HEAD = "[a-zA-Z][a-zA-Z0-9+.-]*://[^/]*";

/** A value as a regular expression that matches it alone (every character RE2 reads as syntax escaped). */
const literally = (value: string) => value.replace(/[\\^$.|?*+()[\]{}]/g, "\\$&");

/** A string as a SQL literal. */
const sqlString = (value: string) => `'${value.replaceAll("'", "''")}'`;

/**
 * A page step's SQL test. A value starting with `/` is tested against the
 * page's path: the page itself when it is a path, what follows a URL's host
 * when it is a URL (as stored); any other page cannot match. A value that
 * does not start with `/` is tested against the whole page.
 *
 * A URL's path is matched by one anchored regular expression (the host, then
 * the value), not cut out first: cutting it out (`regexp_replace`) made a
 * string per row, and over 10M stored URLs the test of "any page" took 605 ms
 * against 42 now. The expression is a literal, so that DuckDB compiles it once.
 */
function pageStepSql(kind: "page" | "page_prefix", value: string, p: Params): string {
  const v = p.add(value);
  const onPage = kind === "page" ? `x.page = ${v}` : `starts_with(x.page, ${v})`;
  if (!value.startsWith("/")) return `(x.name = 'pageview' AND ${onPage})`;
  // `(?s)`: a path's rest may hold any character. The host cannot hold "/", so
  // it ends where the value (a path) starts, as a URL's path does.
  const onUrl = `regexp_full_match(x.page, ${sqlString(`(?s)${URL_HEAD}${literally(value)}${kind === "page" ? "" : ".*"}`)})`;
  // A boolean CASE runs each branch on its own rows only: no expression on a path.
  const test = `CASE WHEN starts_with(x.page, '/') THEN ${onPage} ELSE ${onUrl} END`;
  // A URL's path is its end: a page that does not end with (contain) the value
  // cannot match, and is ruled out first. Containing "/" rules out next to nothing.
  if (kind === "page_prefix" && value === "/") return `(x.name = 'pageview' AND ${test})`;
  const cheap = kind === "page" ? `ends_with(x.page, ${v})` : `contains(x.page, ${v})`;
  return `(x.name = 'pageview' AND ${cheap} AND ${test})`;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** How a funnel orders a visitor's events, as one number `of` (SQL over `x`), and its time back. */
interface EventPlaces {
  of: string;
  time: (o: string) => string;
}

/** 128-bit places: the time in the high 64 bits, the order stored (`seq`) in the low. */
const WIDE_PLACES: EventPlaces = {
  of: "((x.ts::HUGEINT << 64) + x.seq)",
  time: (o) => `(${o} >> 64)::BIGINT`,
};

/** The error a 64-bit place raises for an order stored past its span (eventPlaces). */
const PLACE_RANGE = "funnel place out of range";

/** Whether a funnel's walk failed on an order stored past its 64-bit places' span. */
function isPlaceRangeError(err: unknown): boolean {
  return String(err).includes(PLACE_RANGE);
}

/**
 * A funnel's places in 64 bits where they fit: the ms since the period's
 * start, shifted past the bits of the stored order's span (`seq` from the
 * events' lowest), half of that span kept free for the events the feed
 * appends meanwhile. The planner's periods (3 years at most: 37 bits) leave
 * at least 25 bits, i.e. 16M stored events; 90 days leave 29. Past the span
 * a place raises PLACE_RANGE and the funnel walks again in 128 bits
 * (WIDE_PLACES), as a store past the span does from the start. 64-bit places
 * hash, compare and sort cheaper: the three-step funnel over 90 days at 10M
 * events, 718–910 ms → 543–631 by raw SQL.
 */
async function eventPlaces(q: QueryReads, period: Interval): Promise<EventPlaces> {
  const [lo, hi] = (await q.rows("SELECT min(seq), max(seq) FROM events"))[0] ?? [];
  if (lo === null || lo === undefined || hi === null || hi === undefined) return WIDE_PLACES;
  const timeBits = Math.max(1, Math.ceil(Math.log2(period.to - period.from + 1)));
  const seqBits = 63 - timeBits;
  const low = BigInt(lo as bigint);
  if (BigInt(hi as bigint) - low >= 2n ** BigInt(seqBits - 1)) return WIDE_PLACES;
  const from = BigInt(period.from);
  const order = `(x.seq - ${low})`;
  return {
    of: `(((x.ts - ${from}) << ${seqBits}) + CASE WHEN ${order} >= 0 AND ${order} < ${2n ** BigInt(seqBits)} THEN ${order} ELSE error('${PLACE_RANGE}') END)`,
    time: (o) => `((${o} >> ${seqBits}) + ${from})`,
  };
}

/**
 * The funnel, walked in SQL. Each step's events of the period (with the
 * filters), each with its place `o` in its visitor's order (time, then the
 * order stored). From every step-1 event, the earliest event of each next
 * step after the previous one is found by an ASOF join on that order, and
 * kept while it lies within the window of the step-1 event; each visitor's
 * run that reaches furthest (the earliest such) gives the step times. With a
 * window as long as the period, a visitor's first step-1 event reaches
 * furthest (a later start finds each step no earlier), so only that one is
 * walked. Measured at 10M events (bench:analytics' three-step funnel): 7.8 s
 * of CPU for the walk in JavaScript, about 3 s for the walk of every visitor
 * in SQL.
 */
async function runFunnel(
  q: QueryReads,
  plan: WithSiteNumber<FunnelPlan>,
  /** Places in 128 bits whatever the period (the 64-bit ones met an order past their span). */
  wide = false,
): Promise<FunnelResult> {
  const conn = q.conn;
  const tz = zoneClock(plan.timeZone, plan.period);
  const n = plan.steps.length;
  const firstOnly = plan.windowMs >= plan.period.to - plan.period.from;
  /**
   * The period's events (`x`) and the conditions of the first `count` steps'
   * events, their parameters in `p` (a statement binds only those it reads).
   */
  const stepRows = (p: Params, count = n) => {
    const common = plan.filters.map((f) => filterSql(f, "traffic", p, tz));
    const stepCond = (s: FunnelPlan["steps"][number], into: Params) =>
      [
        s.kind === "event" ? `x.name = ${into.add(s.value)}` : pageStepSql(s.kind, s.value, into),
        ...s.filters.map((f) => filterSql(f, "traffic", into, tz)),
      ].join(" AND ");
    const steps = plan.steps.slice(0, count);
    const visits = [...common, ...steps.map((s) => stepCond(s, new Params()))].some(readsVisit)
      ? "all"
      : "none";
    // Each step's parameters are added when its condition is first read: a
    // walk from kept first places reads no step-1 event.
    const stepConds = new Map<number, string>();
    // Step k's events: read once per step rather than every step's events kept
    // together (materializing millions of step-1 rows cost more than the scans).
    const where = (k: number) => {
      if (!stepConds.has(k)) stepConds.set(k, stepCond(steps[k] as FunnelPlan["steps"][number], p));
      return [...common, `(${stepConds.get(k)})`].join(" AND ");
    };
    return { x: trafficRows(plan.sn, plan.period, p, visits), where, visits };
  };
  // Only a visitor with a step-2 event can reach past step 1. When step 2 is
  // a custom event (a goal, which a small share of visitors reach), the walk
  // starts from those visitors' step-1 events alone and step 1 is one distinct
  // count: a goal funnel after "any page" over 30 days at 10M events went from
  // 0.75 s to 0.27 s. A page step is often reached by most step-1 visitors
  // (every visitor saw /pricing in the bench's three-step funnel): there the
  // narrowing cost 0.2 s more than it saved, and every step-1 visitor is walked.
  const narrow = plan.steps[1]?.kind === "event";
  // An event's place in its visitor's order (eventPlaces): its time, then its
  // order stored. Its time is read back from the place, so no column carries it beside.
  const place = wide ? WIDE_PLACES : await eventPlaces(q, plan.period);
  /**
   * Walks the funnel into `funnel_runs` from `r0` (each walked visitor `k`
   * and the place `o0` of their step-1 event) over the events `upTo` a
   * `seq` when given; `p` holds r0's parameters.
   */
  const walk = async (p: Params, r0: (where: (k: number) => string) => string, upTo?: bigint) => {
    const { x, where: stepWhere } = stepRows(p);
    const where = (k: number) =>
      upTo === undefined ? stepWhere(k) : `${stepWhere(k)} AND x.seq <= ${upTo}`;
    const window = p.add(BigInt(plan.windowMs));
    const events = (k: number) => `SELECT x.dv AS k, ${place.of} AS o FROM x WHERE ${where(k)}`;
    const time = place.time;
    // Run columns: the place `o{k}` of its step-k event (0-based).
    const steps = [`r0 AS (${r0(where)})`];
    for (let k = 1; k < n; k++) {
      const within = `${time("b.o")} - ${time("r.o0")} <= ${window}`;
      // When each visitor has one run (firstOnly), an event step (a goal: few
      // per visitor) joins each run to its visitor's events and takes the first
      // after the previous step: at most one joined row per event. A page
      // step, whose events are many, finds it by an ASOF join instead, as
      // does a step after many runs of a visitor (one per step-1 event: joined,
      // each run would meet each event). Narrowed, the step-2 join is an inner
      // one: it keeps the walkers alone. ("Any page" → signup over 90 days at
      // 10M events, from kept first places, by raw SQL: 98–135 ms by ASOF,
      // 61–72 ms joined.)
      steps.push(
        firstOnly && plan.steps[k]?.kind === "event"
          ? `r${k} AS (
        SELECT r.*, min(b.o) FILTER (WHERE b.o > r.o${k - 1} AND ${within}) AS o${k}
        FROM r${k - 1} r ${k === 1 && narrow ? "" : "LEFT "}JOIN (${events(k)}) b ON r.k = b.k
        GROUP BY ALL
      )`
          : `r${k} AS (
        SELECT r.*, CASE WHEN ${within} THEN b.o END AS o${k}
        FROM r${k - 1} r ASOF LEFT JOIN (${events(k)}) b ON r.k = b.k AND b.o > r.o${k - 1}
      )`,
      );
    }
    const reach = plan.steps
      .slice(1)
      .map((_, i) => ` + (o${i + 1} IS NOT NULL)::INTEGER`)
      .join("");
    await conn.run(
      `CREATE OR REPLACE TEMP TABLE funnel_runs AS
      WITH ${x},
      ${steps.join(",\n      ")}
      SELECT k, 1${reach} AS len, ${plan.steps.map((_, i) => `${time(`o${i}`)} AS t${i}`).join(", ")}
      FROM r${n - 1}
      ${firstOnly ? "" : "QUALIFY row_number() OVER (PARTITION BY k ORDER BY len DESC, o0) = 1"}`,
      p.values,
    );
  };
  // Visitors are walked by their dense number on the site (visitor-numbers.ts,
  // `k`), not their 64-bit key: the first step's group and the joins hash and
  // sort 4 bytes. The completers' keys are looked up by number for their revenue alone.
  /** Visitors who reached step 1, when not the walk's runs (narrowed, they are the walkers'). */
  let step1: DuckDBValue | undefined;
  try {
    let walked = false;
    const p1 = new Params();
    const one = stepRows(p1, 1);
    // Each visitor's first place at step 1, kept across batches of events
    // (first-step-places.ts), when it reads events alone (a batch of events
    // may change the visits of stored events) and every visitor of the site
    // fits the budget (past it, places made for one walk would cost more
    // than the walk's own: at 100M events, a table of 10M visitors against
    // the walkers' first places alone): step 1's count is its rows.
    const rowBytes = place === WIDE_PLACES ? 24 : 16;
    const keeps =
      firstOnly &&
      q.firsts !== undefined &&
      one.visits === "none" &&
      q.firsts.fits(((await highestNumber(q, plan.siteId)) ?? -1) * rowBytes + rowBytes);
    if (keeps && q.firsts) {
      const places = (since?: bigint) =>
        `WITH ${one.x} SELECT x.dv AS k, min(${place.of}) AS o0 FROM x
        WHERE ${one.where(0)}${since === undefined ? "" : ` AND x.seq > ${since}`} GROUP BY x.dv`;
      walked =
        (await q.firsts.walk(
          conn,
          {
            key: statementKey(places(), p1.values),
            places,
            values: p1.values,
            scope: periodScope(plan.siteId, plan.period),
            rowBytes,
          },
          async (f) => {
            step1 = f.visitors;
            await walk(
              new Params(),
              // Narrowed, the step-2 join keeps the walkers.
              () => `SELECT k, o0 FROM ${f.table}`,
              f.seq,
            );
            return true;
          },
        )) ?? false;
    }
    if (!walked) {
      if (narrow) {
        // Counted from the groups by number, in a perfect table (perfect-hash.ts).
        [step1] =
          (
            await withPerfectHash(conn, () =>
              q.rows(
                `WITH ${one.x} SELECT count(*) FROM (SELECT x.dv FROM x WHERE ${one.where(0)} GROUP BY x.dv)`,
                p1.values,
                periodScope(plan.siteId, plan.period),
              ),
            )
          )[0] ?? [];
      }
      // (Not in a perfect table: its state would take 64 MiB outside DuckDB's
      // memory limit, perfect-hash.ts.)
      await walk(new Params(), (where) => {
        const walkers = narrow ? ` AND x.dv IN (SELECT x.dv FROM x WHERE ${where(1)})` : "";
        const events = `SELECT x.dv AS k, ${place.of} AS o FROM x WHERE ${where(0)}${walkers}`;
        return firstOnly
          ? `SELECT k, min(o) AS o0 FROM (${events}) GROUP BY k`
          : `SELECT k, o AS o0 FROM (${events})`;
      });
    }
  } catch (err) {
    if (wide || !isPlaceRangeError(err)) throw err;
    return runFunnel(q, plan, true);
  }
  // Each step's count, and the two middle gaps (ms) from the previous step: the
  // lower middle (DuckDB's discrete median) and the upper one (the lower of the
  // negated gaps), averaged here as the domain's median does.
  const agg = plan.steps.flatMap((_, i) => {
    const runs = `FILTER (WHERE len > ${i})`;
    const gap = `t${i} - t${i - 1}`;
    return i === 0
      ? [`count(*) ${runs}`, "NULL", "NULL"]
      : [
          `count(*) ${runs}`,
          `quantile_disc(${gap}, 0.5) ${runs}`,
          `-quantile_disc(-(${gap}), 0.5) ${runs}`,
        ];
  });
  const row =
    (await conn.runAndReadAll(`SELECT ${agg.join(", ")} FROM funnel_runs`)).getRows()[0] ?? [];
  // Narrowed or from kept places, step 1's count is the distinct count above.
  const reached = plan.steps.map((_, i) =>
    num(i === 0 && step1 !== undefined ? step1 : row[3 * i]),
  );
  /** Step i's median gap from the previous step, in seconds. */
  const medianGap = (i: number): number | undefined => {
    const count = reached[i] as number;
    if (i === 0 || count === 0) return undefined;
    const lower = num(row[3 * i + 1]) / 1000;
    return count % 2 ? lower : (lower + num(row[3 * i + 2]) / 1000) / 2;
  };
  const first = reached[0] as number;
  const result: FunnelResult = {
    steps: plan.steps.map((step, i) => {
      const visitors = reached[i] as number;
      const prev = i === 0 ? visitors : (reached[i - 1] as number);
      const out: FunnelResult["steps"][number] = {
        label: step.label,
        visitors,
        conversionFromPrevious: i === 0 ? 100 : prev ? round2((visitors / prev) * 100) : 0,
        conversionOverall: first ? round2((visitors / first) * 100) : 0,
      };
      const m = medianGap(i);
      if (m !== undefined) out.medianSecondsFromPrevious = round2(m);
      return out;
    }),
  };
  if (plan.currency !== undefined) {
    // The completers' net revenue of the period, by the model: the shares credited to their touches.
    const table = await shares(
      q,
      { ...plan, currency: plan.currency },
      plan.period,
      plan.model !== "first_touch",
      [],
      false,
    );
    const p = new Params();
    const [net] = (
      await conn.runAndReadAll(
        `SELECT coalesce(sum(CASE WHEN kind = 'charge' THEN share ELSE -share END), 0)::BIGINT
         FROM ${sharesOf(table, plan.currency, (v) => p.add(v))}
         WHERE touch_vk IN (SELECT vid FROM visitor_numbers
           WHERE site_id = ${p.add(plan.siteId)} AND dv IN (SELECT k FROM funnel_runs WHERE len = ${n}))`,
        p.values,
      )
    ).getRows()[0] ?? [0n];
    result.completersNetMinor = BigInt(net as bigint);
  }
  await conn.run("DROP TABLE funnel_runs");
  return result;
}
