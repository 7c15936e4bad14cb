/**
 * The analytics engine over DuckDB: a QueryPlan or FunnelPlan becomes SQL
 * generated from the semantic layer (semantic-layer.ts), run on a connection
 * of its own, cancelled (DuckDB's interrupt) past the time limit, at most
 * `perSite` at once for one site.
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
import { VISIT_GAP_MS } from "../../domain/analytics/visits.js";
import { errors } from "../../domain/errors.js";
import type { AnalyticsStore } from "./analytics-store.js";
import { DIMENSIONS, METRICS, timeBucket } from "./semantic-layer.js";

export interface DuckDbAnalyticsOptions {
  analytics: AnalyticsStore;
  /** A query's time limit (ANALYTICS_QUERY_TIMEOUT_MS). */
  timeoutMs: number;
  /** Queries of one site running at once (ANALYTICS_QUERIES_PER_SITE). */
  perSite: number;
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

type Side = "traffic" | "revenue";

/** A SQL string literal (only for names the validation checked, e.g. the IANA time zone). */
function sqlText(s: string): string {
  return `'${s.replaceAll("'", "''")}'`;
}

/** A dimension's SQL on one side (`(none)` for an absent value); undefined when it has none there. */
function dimensionSql(d: DimensionName, side: Side, p: Params, tz: string): string | undefined {
  if (d.startsWith("time:")) {
    return timeBucket(d.slice(5) as TimeGrain, side === "traffic" ? "x.ts" : "r.paid_at", tz);
  }
  if (d.startsWith("prop:")) {
    if (side === "revenue") return undefined;
    return `coalesce(json_extract_string(x.props, ${p.add(`$."${d.slice(5).replaceAll('"', '\\"')}"`)}), '${NONE_VALUE}')`;
  }
  const def = DIMENSIONS[d as keyof typeof DIMENSIONS];
  const sql = side === "traffic" ? def.traffic : def.revenue;
  return sql === undefined ? undefined : `coalesce(${sql}, '${NONE_VALUE}')`;
}

/** A filter as a condition on one side; a dimension that side lacks is `(none)` there. */
function filterSql(f: FilterPlan, side: Side, p: Params, tz: string): string {
  const v = dimensionSql(f.dimension, side, p, tz) ?? `'${NONE_VALUE}'`;
  if (f.op === "contains") {
    return `(${f.values.map((x) => `contains(lower(${v}), lower(${p.add(x)}))`).join(" OR ")})`;
  }
  const list = f.values.map((x) => p.add(x)).join(", ");
  return f.op === "is" ? `${v} IN (${list})` : `${v} NOT IN (${list})`;
}

/** Events of the period, each with its visit's columns (traffic rows `x`). */
function trafficRows(siteId: string, period: Interval, p: Params): string {
  return `
  ev AS (
    SELECT e.*, coalesce(s.pvid, e.vid) AS vk FROM events e
    LEFT JOIN stitches s ON s.site_id = e.site_id AND s.vid = e.vid
    WHERE e.site_id = ${p.add(siteId)} AND e.name <> '$identify' AND e.ts >= ${p.add(BigInt(period.from))} AND e.ts < ${p.add(BigInt(period.to))}
  ),
  marked AS (
    SELECT *, CASE WHEN ts - lag(ts) OVER (PARTITION BY vk ORDER BY ts, seq) <= ${VISIT_GAP_MS} THEN 0 ELSE 1 END AS starts
    FROM ev
  ),
  numbered AS (
    SELECT *, sum(starts) OVER (PARTITION BY vk ORDER BY ts, seq ROWS UNBOUNDED PRECEDING) AS vn FROM marked
  ),
  visits AS (
    SELECT vk, vn,
      count(*) FILTER (WHERE name = 'pageview') AS v_pageviews,
      count(*) AS v_events,
      (max(ts) - min(ts)) / 1000.0 AS v_seconds,
      coalesce(arg_min(channel, (ts, seq)), 'Direct') AS v_channel,
      arg_min(source, (ts, seq)) AS v_source,
      arg_min(medium, (ts, seq)) AS v_medium,
      arg_min(campaign, (ts, seq)) AS v_campaign,
      arg_min(term, (ts, seq)) AS v_term,
      arg_min(content, (ts, seq)) AS v_content,
      arg_min(referrer, (ts, seq)) AS v_referrer,
      coalesce(arg_min(page, (ts, seq)) FILTER (WHERE name = 'pageview'), arg_min(page, (ts, seq))) AS v_landing_page,
      coalesce(arg_max(page, (ts, seq)) FILTER (WHERE name = 'pageview'), arg_max(page, (ts, seq))) AS v_exit_page
    FROM numbered GROUP BY vk, vn
  ),
  x AS (SELECT n.*, v.* EXCLUDE (vk, vn) FROM numbered n JOIN visits v USING (vk, vn))`;
}

/** Succeeded payments of the period in the currency, each with its credited touch (revenue rows `r`). */
function revenueRows(siteId: string, currency: string, period: Interval, p: Params): string {
  const site = p.add(siteId);
  const cur = p.add(currency);
  return `
  firsts AS (
    SELECT customer_id, min(paid_at) AS first_paid_at FROM payments
    WHERE site_id = ${site} AND currency = ${cur} AND status = 'succeeded' AND kind = 'charge'
    GROUP BY customer_id
  ),
  pay AS (
    SELECT p.*, f.first_paid_at,
      (p.kind = 'charge' AND p.paid_at = f.first_paid_at) AS first_payment
    FROM payments p LEFT JOIN firsts f USING (customer_id)
    WHERE p.site_id = ${site} AND p.currency = ${cur} AND p.status = 'succeeded'
      AND p.paid_at >= ${p.add(BigInt(period.from))} AND p.paid_at < ${p.add(BigInt(period.to))}
  ),
  touch_events AS (
    SELECT vid, ts, any_value(term) AS term, any_value(content) AS content,
      any_value(referrer) AS referrer, any_value(country) AS country,
      any_value(device) AS device, any_value(browser) AS browser, any_value(os) AS os
    FROM events WHERE site_id = ${site} AND vid IN (SELECT touch_vid FROM pay)
    GROUP BY vid, ts
  ),
  r AS (
    SELECT pay.*, pay.amount_minor AS share, pay.touched_at AS first_seen_at,
      CAST(NULL AS BIGINT) AS visits_before,
      t.term AS t_term, t.content AS t_content, t.referrer AS t_referrer,
      t.country AS t_country, t.device AS t_device, t.browser AS t_browser, t.os AS t_os
    FROM pay LEFT JOIN touch_events t ON t.vid = pay.touch_vid AND t.ts = pay.touched_at
  )`;
}

/** One side's aggregate rows: dimension values then the metrics, by name. */
interface SideRow {
  dims: string[];
  values: Record<string, number>;
}

function num(v: unknown): number {
  if (v === null || v === undefined) return Number.NaN;
  return typeof v === "bigint" ? Number(v) : Number(v);
}

/** Runs one plan's period (the rows by their dimension key, and the totals). */
async function runPeriod(
  conn: DuckDBConnection,
  plan: QueryPlan,
  period: Interval,
  withDims: boolean,
): Promise<Map<string, { dims: string[]; t?: SideRow; r?: SideRow }>> {
  const dims = withDims ? plan.dimensions : [];
  const need: Record<Side, Set<MetricName>> = { traffic: new Set(), revenue: new Set() };
  for (const m of plan.metrics) {
    const def = METRICS[m];
    if (def.source === "both") {
      for (const n of def.needs?.traffic ?? []) need.traffic.add(n);
      for (const n of def.needs?.revenue ?? []) need.revenue.add(n);
    } else need[def.source].add(m);
  }
  const out = new Map<string, { dims: string[]; t?: SideRow; r?: SideRow }>();
  for (const side of ["traffic", "revenue"] as const) {
    if (need[side].size === 0) continue;
    const p = new Params();
    const tz = sqlText(plan.timeZone);
    const dimSql = dims.map((d) => dimensionSql(d, side, p, tz) ?? `'${NONE_VALUE}'`);
    const where = plan.filters.map((f) => filterSql(f, side, p, tz));
    const metrics = [...need[side]];
    let sql: string;
    if (side === "traffic") {
      // One row per visit and dimension values: a visit counts once per group.
      const groupDims = dimSql.map((d, i) => `${d} AS d${i}`);
      sql = `WITH ${trafficRows(plan.siteId, period, p)},
        v AS (
          SELECT ${[...groupDims, "x.vk", "x.vn"].join(", ")},
            count(*) FILTER (WHERE x.name = 'pageview') AS pv,
            count(*) FILTER (WHERE NOT starts_with(x.name, '$')) AS ev,
            bool_or(x.name <> 'pageview' AND NOT starts_with(x.name, '$')) AS conv,
            any_value(x.v_events) AS v_events, any_value(x.v_seconds) AS v_seconds
          FROM x ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
          GROUP BY ALL
        )
        SELECT ${[...dims.map((_, i) => `v.d${i}`), ...metrics.map((m) => METRICS[m].sql)].join(", ")}
        FROM v ${dims.length ? "GROUP BY ALL" : ""}`;
    } else {
      sql = `WITH ${revenueRows(plan.siteId, plan.currency ?? "", period, p)}
        SELECT ${[...dimSql, ...metrics.map((m) => METRICS[m].sql)].join(", ")}
        FROM r ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ${dims.length ? "GROUP BY ALL" : ""}`;
    }
    const reader = await conn.runAndReadAll(sql, p.values);
    for (const row of reader.getRows()) {
      const d = row.slice(0, dims.length).map((x) => String(x));
      const values: Record<string, number> = {};
      metrics.forEach((m, i) => {
        values[m] = num(row[dims.length + i]);
      });
      // A group with no visit (traffic) is no row.
      if (side === "traffic" && dims.length > 0 && values.visits === 0) continue;
      const key = JSON.stringify(d);
      const cur = out.get(key) ?? { dims: d };
      if (side === "traffic") cur.t = { dims: d, values };
      else cur.r = { dims: d, values };
      out.set(key, cur);
    }
  }
  return out;
}

/** The metric values of one merged row. */
function metricValues(plan: QueryPlan, row: { t?: SideRow; r?: SideRow }): MetricValue[] {
  const t = row.t?.values ?? {};
  const r = row.r?.values ?? {};
  return plan.metrics.map((m): MetricValue => {
    const def = METRICS[m];
    let v: number | undefined;
    if (def.source === "both") v = def.combine?.(t, r);
    else v = (def.source === "traffic" ? t : r)[m];
    if (def.source === "traffic" && row.t === undefined && def.kind === "count") v = 0;
    if (def.source === "revenue" && row.r === undefined && def.kind !== "number") v = 0;
    if (v === undefined || Number.isNaN(v)) return { kind: "none" };
    if (def.kind === "money")
      return { kind: "money", currency: plan.currency ?? "", minor: BigInt(Math.round(v)) };
    return { kind: def.kind, value: v };
  });
}

const sortValue = (v: MetricValue | undefined): number =>
  v === undefined || v.kind === "none"
    ? Number.NEGATIVE_INFINITY
    : v.kind === "money"
      ? Number(v.minor)
      : v.value;

/** Creates the engine. */
export function createDuckDbAnalytics(options: DuckDbAnalyticsOptions): AnalyticsEngine {
  const running = new Map<string, number>();

  /** Runs `work` on a connection of its own, within the site's slots and the time limit. */
  const withConnection = async <T>(
    siteId: string,
    signal: AbortSignal | undefined,
    work: (conn: DuckDBConnection) => Promise<T>,
  ): Promise<T> => {
    const n = running.get(siteId) ?? 0;
    if (n >= options.perSite) throw errors.tooManyQueries();
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
      return await work(conn);
    } catch (err) {
      if (timedOut) throw errors.queryTimeout(options.timeoutMs, err);
      if (err instanceof Error && err.name === "DomainError") throw err;
      throw errors.analyticsUnavailable(err);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      conn?.closeSync();
      const left = (running.get(siteId) ?? 1) - 1;
      if (left === 0) running.delete(siteId);
      else running.set(siteId, left);
    }
  };

  return {
    query(plan, signal) {
      return withConnection(plan.siteId, signal, async (conn) => {
        const rows = await runPeriod(conn, plan, plan.period, true);
        const totals = await runPeriod(conn, plan, plan.period, false);
        const comparison = plan.comparison
          ? await runPeriod(conn, plan, plan.comparison, true)
          : undefined;
        const comparisonTotals = plan.comparison
          ? await runPeriod(conn, plan, plan.comparison, false)
          : undefined;
        const all: QueryResultRow[] = [...rows.entries()].map(([key, row]) => {
          const out: QueryResultRow = { dimensions: row.dims, metrics: metricValues(plan, row) };
          if (comparison) out.comparison = metricValues(plan, comparison.get(key) ?? {});
          return out;
        });
        all.sort((a, b) => {
          for (const o of plan.orderBy) {
            const di = plan.dimensions.indexOf(o.field as DimensionName);
            let c: number;
            if (di >= 0) {
              const x = a.dimensions[di] ?? "";
              const y = b.dimensions[di] ?? "";
              c = x < y ? -1 : x > y ? 1 : 0;
            } else {
              const mi = plan.metrics.indexOf(o.field as MetricName);
              c = sortValue(a.metrics[mi]) - sortValue(b.metrics[mi]);
            }
            if (c !== 0) return o.desc ? -c : c;
          }
          // Ties in a stable order: by the dimension values.
          const x = JSON.stringify(a.dimensions);
          const y = JSON.stringify(b.dimensions);
          return x < y ? -1 : x > y ? 1 : 0;
        });
        const page = all.slice(plan.offset, plan.offset + plan.limit);
        const result: QueryResult = {
          rows: page,
          totals: metricValues(plan, totals.values().next().value ?? {}),
          more: all.length > plan.offset + plan.limit,
        };
        if (comparisonTotals) {
          result.comparisonTotals = metricValues(
            plan,
            comparisonTotals.values().next().value ?? {},
          );
        }
        return result;
      });
    },
    funnel(plan: FunnelPlan, signal) {
      return withConnection(plan.siteId, signal, (conn) => runFunnel(conn, plan));
    },
  };
}

/** The funnel: visitors reaching each step in order within the window from their first step. */
async function runFunnel(conn: DuckDBConnection, plan: FunnelPlan): Promise<FunnelResult> {
  const p = new Params();
  const tz = sqlText(plan.timeZone);
  const period: Interval = plan.period;
  const common = plan.filters.map((f) => filterSql(f, "traffic", p, tz));
  const stepConds = plan.steps.map((s) => {
    const match =
      s.kind === "event"
        ? `x.name = ${p.add(s.value)}`
        : s.kind === "page"
          ? `(x.name = 'pageview' AND x.page = ${p.add(s.value)})`
          : `(x.name = 'pageview' AND starts_with(x.page, ${p.add(s.value)}))`;
    return [match, ...s.filters.map((f) => filterSql(f, "traffic", p, tz))].join(" AND ");
  });
  // Each step's time is the first matching event after the previous step's.
  const window = p.add(BigInt(plan.windowMs));
  let sql = `WITH ${trafficRows(plan.siteId, period, p)},
    f AS (SELECT * FROM x ${common.length ? `WHERE ${common.join(" AND ")}` : ""}),
    s0 AS (SELECT x.vk, min(x.ts) AS t0 FROM f AS x WHERE ${stepConds[0]} GROUP BY x.vk)`;
  for (let i = 1; i < stepConds.length; i++) {
    sql += `,
    s${i} AS (
      SELECT prev.*, min(x.ts) AS t${i} FROM s${i - 1} prev JOIN f AS x ON x.vk = prev.vk
      WHERE ${stepConds[i]} AND x.ts >= prev.t${i - 1} AND x.ts - prev.t0 <= ${window}
      GROUP BY ALL
    )`;
  }
  const parts = plan.steps.map((_, i) =>
    i === 0
      ? `(SELECT count(*) FROM s0) AS n0, NULL AS m0`
      : `(SELECT count(*) FROM s${i}) AS n${i}, (SELECT median((t${i} - t${i - 1}) / 1000.0) FROM s${i}) AS m${i}`,
  );
  sql += ` SELECT ${parts.join(", ")}`;
  const row = (await conn.runAndReadAll(sql, p.values)).getRows()[0] ?? [];
  const counts = plan.steps.map((_, i) => num(row[i * 2]));
  const first = counts[0] ?? 0;
  const pct = (a: number, b: number) => (b === 0 ? 0 : Math.round((10000 * a) / b) / 100);
  return {
    steps: plan.steps.map((s, i) => {
      const visitors = counts[i] ?? 0;
      const median = num(row[i * 2 + 1]);
      return {
        label: s.label,
        visitors,
        conversionFromPrevious: i === 0 ? 100 : pct(visitors, counts[i - 1] ?? 0),
        conversionOverall: pct(visitors, first),
        ...(i > 0 && !Number.isNaN(median) ? { medianSecondsFromPrevious: median } : {}),
      };
    }),
  };
}
