/**
 * The page's Query part: the top row (each metric with its change against
 * the previous period), the main chart of the selected metric with the
 * comparison drawn faintly, the attribution model, the filter chips and the
 * panels (tab sets whose rows filter the whole page when clicked). Each part
 * is one ReportsService.Query call for the view's days, filters, model and
 * currency; the numbers are the answer's, as it gave them.
 */
import type { Client } from "@connectrpc/connect";
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import type { QueryResponse, ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { useCall, useQuery } from "./calls.js";
import { COUNT_INCRS, countLabel, countRange } from "./chart-scales.js";
import { Customers } from "./customers.js";
import { FunnelView } from "./funnel-view.js";
import { daysOf, type FunnelStep, MODELS, type Model, type ViewState } from "./period.js";
import {
  askable,
  changeText,
  funnelRequest,
  metricNumber,
  metricText,
  moneyText,
  queryRequest,
  TOP_METRICS,
} from "./query.js";
import { TimeToConvert } from "./time-to-convert.js";

type Reports = Client<typeof ReportsService>;

/** One line per model, shown under the selector. */
export const MODEL_TEXT: Record<Model, [string, string]> = {
  first_touch: ["First touch", "All of a payment goes to the customer's first visit's source."],
  last_touch: ["Last touch", "All of a payment goes to the last visit before it."],
  last_non_direct: [
    "Last non-direct",
    "All of a payment goes to the last visit before it that was not Direct.",
  ],
  linear: ["Linear", "A payment is split evenly across every visit before it."],
  position_based: [
    "Position-based",
    "40% to the first visit, 40% to the last, 20% split across those in between.",
  ],
};

/** The time bucket of the main chart for a period of `days` days. */
function bucketOf(days: number): "time:hour" | "time:day" | "time:week" | "time:month" {
  if (days <= 1) return "time:hour";
  if (days <= 92) return "time:day";
  if (days <= 200) return "time:week";
  return "time:month";
}

export function QueryView(props: {
  client: Reports;
  view: ViewState;
  currency: string | undefined;
  onChange(next: ViewState): void;
  onOpenCustomer(customerId: string): void;
}) {
  const { client, view, currency, onChange } = props;
  const days = daysOf(view, Date.now());
  if ("error" in days) return null;
  const span = Math.round((Date.parse(days.toDay) - Date.parse(days.fromDay)) / 86_400_000) + 1;
  const metrics = askable(
    TOP_METRICS.map((m) => m.name),
    currency,
  );
  const metric = metrics.includes(view.metric) ? view.metric : "visitors";
  return (
    <section aria-labelledby="summary" class="query-view">
      <h2 id="summary">Summary</h2>
      <Realtime client={client} site={view.site} />
      <Controls view={view} onChange={onChange} />
      <TopRow
        site={view.site}
        client={client}
        request={queryRequest(view, days, currency, { metrics, compare: true })}
        selected={metric}
        onSelect={(m) => onChange({ ...view, metric: m })}
      />
      <MetricChart
        client={client}
        metric={metric}
        days={days}
        request={queryRequest(view, days, currency, {
          metrics: [metric],
          dimensions: [bucketOf(span)],
          compare: true,
          limit: 1000,
        })}
      />
      <Panels client={client} view={view} days={days} currency={currency} onChange={onChange} />
      <FunnelView client={client} view={view} days={days} currency={currency} onChange={onChange} />
      {currency && (
        <>
          <TimeToConvert client={client} view={view} days={days} currency={currency} />
          <Customers
            client={client}
            view={view}
            days={days}
            currency={currency}
            onOpen={props.onOpenCustomer}
          />
        </>
      )}
    </section>
  );
}

/** How far back "now" reaches, and how often the count is read again. */
const REALTIME_MS = 5 * 60_000;
const REALTIME_EVERY_MS = 60_000;

/** Visitors in the last 5 minutes: Query over instants [now − 5 min, now), every minute. */
function Realtime(props: { client: Reports; site: string }) {
  const [at, setAt] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setAt(Date.now()), REALTIME_EVERY_MS);
    return () => clearInterval(timer);
  }, []);
  const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
  const answer = useQuery(props.client, {
    siteId: props.site,
    metrics: ["visitors"],
    period: { from: iso(at - REALTIME_MS), to: iso(at) },
  });
  return (
    <p class="realtime" id="realtime" aria-live="polite">
      <span class="dot" aria-hidden="true" />{" "}
      {answer.state === "done"
        ? `${metricText("visitors", answer.r.totals[0])} visitor${metricNumber(answer.r.totals[0]) === 1 ? "" : "s"} in the last 5 minutes`
        : answer.state === "error"
          ? "Visitors in the last 5 minutes: not available"
          : "Counting visitors in the last 5 minutes…"}
    </p>
  );
}

/** Comparison switch, attribution model and the filter chips. */
function Controls(props: { view: ViewState; onChange(next: ViewState): void }) {
  const { view, onChange } = props;
  return (
    <div class="controls">
      <label class="check">
        <input
          type="checkbox"
          checked={view.compare}
          onChange={(e) => onChange({ ...view, compare: e.currentTarget.checked })}
        />{" "}
        Compare with the previous period
      </label>
      <p class="model">
        <label for="model">Attribution model</label>{" "}
        <select
          id="model"
          aria-describedby="model-text"
          value={view.model}
          onChange={(e) => onChange({ ...view, model: e.currentTarget.value as Model })}
        >
          {MODELS.map((m) => (
            <option key={m} value={m}>
              {MODEL_TEXT[m][0]}
            </option>
          ))}
        </select>{" "}
        <span id="model-text" class="muted">
          {MODEL_TEXT[view.model][1]}
        </span>
      </p>
      {view.filters.length > 0 && (
        <ul class="chips" aria-label="Filters">
          {view.filters.map((f, i) => (
            <li key={`${f.dimension}=${f.value}`}>
              <span>
                {f.dimension} is <strong>{f.value}</strong>
              </span>
              <button
                type="button"
                class="chip-remove"
                aria-label={`Remove the filter ${f.dimension} is ${f.value}`}
                onClick={() =>
                  onChange({ ...view, filters: view.filters.filter((_, j) => j !== i) })
                }
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function TopRow(props: {
  site: string;
  client: Reports;
  request: ReturnType<typeof queryRequest>;
  selected: string;
  onSelect(metric: string): void;
}) {
  const answer = useQuery(props.client, props.request);
  if (answer.state === "loading") return <p role="status">Loading the summary…</p>;
  if (answer.state === "error") {
    return (
      <p class="error" role="alert">
        {answer.message}
      </p>
    );
  }
  const r = answer.r;
  const compared = r.comparisonTotals.length > 0;
  const visitors = metricNumber(r.totals[r.metrics.indexOf("visitors")]);
  return (
    <>
      {visitors === 0 && (
        <section class="empty" aria-labelledby="no-traffic">
          <h2 id="no-traffic">No visits in this period</h2>
          <p>Add the tracking script to the pages of your site, then come back:</p>
          <pre>
            <code>{`<script defer src="${location.origin}/js/script.js" data-site="${props.site}"></script>`}</code>
          </pre>
        </section>
      )}
      <p class="range" id="query-period">
        Days {r.period?.from.slice(0, 10)} to the day before {r.period?.to.slice(0, 10)} in the
        site's time zone, <strong>{r.period?.timeZone}</strong>
        {compared && r.comparisonPeriod
          ? `; compared with ${r.comparisonPeriod.from.slice(0, 10)} to the day before ${r.comparisonPeriod.to.slice(0, 10)}`
          : ""}
        .
      </p>
      <ul class="tiles" id="top-row">
        {r.metrics.map((name, i) => {
          const def = TOP_METRICS.find((m) => m.name === name);
          return (
            <li key={name}>
              <button
                type="button"
                class="tile"
                aria-pressed={props.selected === name}
                onClick={() => props.onSelect(name)}
              >
                <span class="tile-label">{def?.label ?? name}</span>
                <span class="tile-value">{metricText(name, r.totals[i])}</span>
                {compared && (
                  <span class="tile-change">
                    {changeText(name, r.totals[i], r.comparisonTotals[i])}
                  </span>
                )}
              </button>
            </li>
          );
        })}
      </ul>
    </>
  );
}

/** The selected metric per hour/day/week/month, the comparison period's faintly behind it. */
function MetricChart(props: {
  client: Reports;
  metric: string;
  days: { fromDay: string; toDay: string };
  request: ReturnType<typeof queryRequest>;
}) {
  const answer = useQuery(props.client, props.request);
  const box = useRef<HTMLDivElement>(null);
  const label = TOP_METRICS.find((m) => m.name === props.metric)?.label ?? props.metric;
  useEffect(() => {
    const el = box.current;
    if (!el || answer.state !== "done") return;
    const rows = fillDays(answer.r, props.days);
    const x = rows.map((_, i) => i);
    // A day without data has 0 of a count or of net revenue, and no rate or average.
    const empty = COUNTS.has(props.metric) || props.metric === "net_revenue" ? 0 : null;
    const now = rows.map((row) => (row.row ? (metricNumber(row.row.metrics[0]) ?? null) : empty));
    const before = rows.map((row) =>
      row.row ? (metricNumber(row.row.comparison[0]) ?? null) : null,
    );
    const isCount = COUNTS.has(props.metric);
    const ink = getComputedStyle(el).color;
    const names = rows.map((row) => row.name);
    const plot = new uPlot(
      {
        width: Math.max(280, el.clientWidth),
        height: 240,
        series: [
          {},
          { label, stroke: "#2f6fdf", width: 2, scale: "y" },
          ...(answer.r.comparisonPeriod
            ? [
                {
                  label: `${label}, previous period`,
                  stroke: "rgba(128,128,128,0.6)",
                  width: 1.5,
                  dash: [4, 4],
                  scale: "y",
                },
              ]
            : []),
        ],
        axes: [
          {
            stroke: ink,
            grid: { stroke: "rgba(128,128,128,0.3)" },
            ticks: { stroke: ink },
            // One point per bucket: ticks fall on whole positions only.
            incrs: COUNT_INCRS,
            values: (_u, splits) => splits.map((s) => axisName(names[s] ?? "")),
          },
          {
            stroke: ink,
            grid: { stroke: "rgba(128,128,128,0.3)" },
            ticks: { stroke: ink },
            ...(isCount
              ? { incrs: COUNT_INCRS, values: (_u: uPlot, s: number[]) => s.map(countLabel) }
              : {}),
          },
        ],
        scales: {
          x: { time: false },
          ...(isCount
            ? { y: { range: (_u: uPlot, _min: number, max: number) => countRange(max) } }
            : {}),
        },
        legend: { live: false },
      },
      answer.r.comparisonPeriod ? [x, now, before] : [x, now],
      el,
    );
    return () => plot.destroy();
  }, [answer, label, props.days, props.metric]);
  if (answer.state === "error") {
    return (
      <p class="error" role="alert">
        {answer.message}
      </p>
    );
  }
  return (
    <div
      ref={box}
      class="chart"
      id="metric-chart"
      role="img"
      aria-label={`${label} over the period${props.request.compare ? ", the previous period dashed" : ""}`}
    />
  );
}

/** A bucket's name on the time axis: MM-DD for a day, HH:MM for an hour, else as answered. */
function axisName(bucket: string): string {
  if (/^\d{4}-\d{2}-\d{2}$/.test(bucket)) return bucket.slice(5);
  const hour = /T(\d{2}:\d{2})/.exec(bucket);
  return hour ? (hour[1] ?? bucket) : bucket.slice(0, 10);
}

/** Metrics whose values are whole numbers (their axis ticks by whole numbers). */
const COUNTS = new Set(["visitors", "visits", "pageviews", "paying_customers"]);

/**
 * The chart's points: with a day bucket, one per day of the period (Query
 * answers only the days that have data; a day without any is 0 and has no
 * comparison value); other buckets as answered.
 */
function fillDays(
  r: QueryResponse,
  days: { fromDay: string; toDay: string },
): { name: string; row: QueryResponse["rows"][number] | undefined }[] {
  if (r.dimensions[0] !== "time:day") {
    return r.rows.map((row) => ({ name: row.dimensions[0] ?? "", row }));
  }
  const byDay = new Map(r.rows.map((row) => [(row.dimensions[0] ?? "").slice(0, 10), row]));
  const out: { name: string; row: QueryResponse["rows"][number] | undefined }[] = [];
  for (let t = Date.parse(days.fromDay); t <= Date.parse(days.toDay); t += 86_400_000) {
    const day = new Date(t).toISOString().slice(0, 10);
    out.push({ name: day, row: byDay.get(day) });
  }
  return out;
}

/** The panels: each a tab set of dimensions, one Query per shown tab. */
const PANELS: { title: string; tabs: [string, string][] }[] = [
  {
    title: "Acquisition",
    tabs: [
      ["channel", "Channels"],
      ["source", "Sources"],
      ["campaign", "Campaigns"],
    ],
  },
  {
    title: "Pages",
    tabs: [
      ["page", "Top pages"],
      ["landing_page", "Landing pages"],
      ["exit_page", "Exit pages"],
    ],
  },
  { title: "Locations", tabs: [["country", "Countries"]] },
  {
    title: "Technology",
    tabs: [
      ["device", "Devices"],
      ["browser", "Browsers"],
      ["os", "OS"],
    ],
  },
  { title: "Goals", tabs: [["event", "Goals"]] },
];

/** Rows that open a detail view by medium, term and content. */
const WITH_DETAILS = new Set(["channel", "source", "campaign"]);

/** A column's header for a metric. */
function metricLabel(m: string): string {
  return (
    TOP_METRICS.find((t) => t.name === m)?.label ??
    (m === "conversions" ? "Conversions" : m === "payments" ? "Payments" : m)
  );
}

type Row = QueryResponse["rows"][number];

function Panels(props: {
  client: Reports;
  view: ViewState;
  days: { fromDay: string; toDay: string };
  currency: string | undefined;
  onChange(next: ViewState): void;
}) {
  return (
    <div class="panels">
      {PANELS.map((p) => (
        <Panel key={p.title} {...props} title={p.title} tabs={p.tabs} />
      ))}
    </div>
  );
}

function Panel(props: {
  client: Reports;
  view: ViewState;
  days: { fromDay: string; toDay: string };
  currency: string | undefined;
  onChange(next: ViewState): void;
  title: string;
  tabs: [string, string][];
}) {
  const [tab, setTab] = useState(0);
  const [open, setOpen] = useState<string | undefined>();
  const [dimension, tabLabel] = props.tabs[tab] ?? props.tabs[0] ?? ["channel", "Channels"];
  const goals = dimension === "event";
  // Goals are custom events: pageviews are not one (docs/dashboard.md).
  const request = queryRequest(props.view, props.days, props.currency, {
    metrics: goals
      ? ["visitors", "conversions", "conversion_rate"]
      : ["visitors", "net_revenue", "revenue_per_visitor"],
    dimensions: [dimension],
    limit: 10,
    filters: goals ? [{ dimension: "event", op: "is_not", values: ["pageview"] }] : [],
  });
  const answer = useQuery(props.client, request);
  const id = `panel-${props.title.toLowerCase()}`;
  const filtered = new Set(props.view.filters.map((f) => f.dimension));
  const details = WITH_DETAILS.has(dimension);
  const rows = (
    <>
      {answer.state === "loading" && <p role="status">Loading…</p>}
      {answer.state === "error" && (
        <p class="error" role="alert">
          {answer.message}
        </p>
      )}
      {answer.state === "done" &&
        (answer.r.rows.length === 0 ? (
          <p class="muted">None in this period.</p>
        ) : (
          <table class="stack panel-rows">
            <caption>
              {tabLabel}:{" "}
              {goals
                ? "custom events (not pageviews) with visitors, conversions, conversion rate and the net revenue of their converters"
                : "visitors, net revenue and revenue per visitor"}
              {props.currency ? ` (${props.currency})` : ""}; select a row to filter the page by it
              {details ? "; “Details” splits it by medium, term and content" : ""}
            </caption>
            <thead>
              <tr>
                <th scope="col">{tabLabel}</th>
                {answer.r.metrics.map((m) => (
                  <th scope="col" key={m}>
                    {metricLabel(m)}
                  </th>
                ))}
                {goals && props.currency && <th scope="col">Net revenue</th>}
                {details && <th scope="col">Details</th>}
              </tr>
            </thead>
            <tbody>
              {answer.r.rows.flatMap((row) => {
                const value = row.dimensions[0] ?? "";
                const expanded = open === value;
                const out = [
                  <tr key={value}>
                    <th scope="row">
                      {filtered.has(dimension) ? (
                        breakable(value)
                      ) : (
                        <button
                          type="button"
                          class="link"
                          aria-label={`Filter by ${dimension} ${value}`}
                          onClick={() =>
                            props.onChange({
                              ...props.view,
                              filters: [...props.view.filters, { dimension, value }],
                            })
                          }
                        >
                          {breakable(value)}
                        </button>
                      )}
                    </th>
                    {answer.r.metrics.map((m, i) => (
                      <td key={m} data-label={metricLabel(m)}>
                        {metricText(m, row.metrics[i])}
                      </td>
                    ))}
                    {goals && props.currency && (
                      <td data-label="Net revenue">
                        <GoalRevenue {...props} goal={value} currency={props.currency} />
                      </td>
                    )}
                    {details && (
                      <td data-label="Details">
                        <button
                          type="button"
                          class="link"
                          aria-expanded={expanded}
                          aria-label={`${expanded ? "Hide the details" : "Details"} of ${dimension} ${value} by medium, term and content`}
                          onClick={() => setOpen(expanded ? undefined : value)}
                        >
                          {expanded ? "Hide" : "Details"}
                        </button>
                      </td>
                    )}
                  </tr>,
                ];
                if (expanded) {
                  out.push(
                    <tr key={`${value}/details`} class="details-row">
                      <td colSpan={answer.r.metrics.length + 2}>
                        <Details {...props} dimension={dimension} value={value} />
                      </td>
                    </tr>,
                  );
                }
                return out;
              })}
            </tbody>
          </table>
        ))}
    </>
  );

  return (
    <section class="panel" aria-labelledby={`${id}-title`} id={id}>
      <h3 id={`${id}-title`}>{props.title}</h3>
      {props.tabs.length > 1 && (
        <div role="tablist" aria-label={props.title} class="tabs">
          {props.tabs.map(([d, name], i) => (
            <button
              key={d}
              type="button"
              role="tab"
              id={`${id}-tab-${d}`}
              aria-selected={i === tab}
              aria-controls={`${id}-rows`}
              tabIndex={i === tab ? 0 : -1}
              onClick={() => {
                setTab(i);
                setOpen(undefined);
              }}
              onKeyDown={(e) => {
                const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
                if (!step) return;
                const next = (i + step + props.tabs.length) % props.tabs.length;
                setTab(next);
                setOpen(undefined);
                (e.currentTarget.parentElement?.children[next] as HTMLElement | undefined)?.focus();
              }}
            >
              {name}
            </button>
          ))}
        </div>
      )}
      {props.tabs.length > 1 ? (
        <div id={`${id}-rows`} role="tabpanel" aria-labelledby={`${id}-tab-${dimension}`}>
          {rows}
        </div>
      ) : (
        <div id={`${id}-rows`}>{rows}</div>
      )}
    </section>
  );
}

/** A value with a line-break opportunity after each slash (URLs wrap between their parts). */
function breakable(value: string) {
  const parts = value.split("/");
  return parts.map((p, i) => (
    <span key={i}>
      {p}
      {i < parts.length - 1 && (
        <>
          /<wbr />
        </>
      )}
    </span>
  ));
}

/**
 * A channel's, source's or campaign's detail view: its visitors and revenue
 * split by medium, term and content (one Query with the row as a filter).
 */
function Details(props: {
  client: Reports;
  view: ViewState;
  days: { fromDay: string; toDay: string };
  currency: string | undefined;
  dimension: string;
  value: string;
}) {
  const answer = useQuery(
    props.client,
    queryRequest(props.view, props.days, props.currency, {
      metrics: ["visitors", "net_revenue", "revenue_per_visitor"],
      dimensions: ["medium", "term", "content"],
      limit: 20,
      filters: [{ dimension: props.dimension, op: "is", values: [props.value] }],
    }),
  );
  if (answer.state === "loading") return <p role="status">Loading…</p>;
  if (answer.state === "error") {
    return (
      <p class="error" role="alert">
        {answer.message}
      </p>
    );
  }
  return (
    <table class="stack details">
      <caption>
        {props.dimension} {props.value} by medium, term and content
      </caption>
      <thead>
        <tr>
          <th scope="col">Medium</th>
          <th scope="col">Term</th>
          <th scope="col">Content</th>
          {answer.r.metrics.map((m) => (
            <th scope="col" key={m}>
              {metricLabel(m)}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {answer.r.rows.map((row: Row) => (
          <tr key={row.dimensions.join("\u0000")}>
            <th scope="row">{row.dimensions[0]}</th>
            <td data-label="Term">{row.dimensions[1]}</td>
            <td data-label="Content">{row.dimensions[2]}</td>
            {answer.r.metrics.map((m, i) => (
              <td key={m} data-label={metricLabel(m)}>
                {metricText(m, row.metrics[i])}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * A goal's revenue: the net revenue, by the model and in the currency,
 * credited to the visitors who viewed a page and then sent the goal in the
 * period (Funnel: any page, then the event; docs/dashboard.md).
 */
function GoalRevenue(props: {
  client: Reports;
  view: ViewState;
  days: { fromDay: string; toDay: string };
  goal: string;
  currency: string;
}) {
  const answer = useCall(
    funnelRequest(props.view, props.days, props.currency, goalSteps(props.goal)),
    (r) => props.client.funnel(r),
  );
  if (answer.state === "done") return <>{moneyText(answer.r.completersNetRevenue)}</>;
  return <>{answer.state === "error" ? "–" : "…"}</>;
}

/** A goal as funnel steps: a pageview of any page of the site, then the event. */
export function goalSteps(goal: string): FunnelStep[] {
  return [
    { kind: "page_prefix", value: "/" },
    { kind: "event", value: goal },
  ];
}
