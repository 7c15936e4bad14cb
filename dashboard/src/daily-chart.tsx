/**
 * Visitors, pageviews and net revenue per UTC day on one time axis (uPlot).
 * Counts share the left axis, with whole-number ticks only; net revenue is
 * drawn in ONE currency, the page's selected one, on its own right axis named
 * after it (amounts of two currencies are never on one scale, and no series
 * sits on a scale without an axis). Axis labels and grid take the page's own
 * text colour, so they keep their contrast in the dark theme too. The same
 * numbers are in the table below the chart for screen readers.
 */
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import type { DayOverview } from "../../gen/ingest/v1/reports_pb.js";
import { COUNT_INCRS, countLabel, countRange } from "./chart-scales.js";

/** Series colours with at least 3:1 contrast on both themes' backgrounds. */
const COLORS = { visitors: "#2f6fdf", pageviews: "#8a5cd0", revenue: "#1a8a5c" };

/** The daily series of net revenue in `currency` (0 on a day without any). */
export function revenueSeries(days: DayOverview[], currency: string): number[] {
  return days.map((d) => Number(d.netRevenue.find((m) => m.currency === currency)?.decimal ?? 0));
}

export function DailyChart(props: { days: DayOverview[]; currency: string | undefined }) {
  const box = useRef<HTMLDivElement>(null);
  const { days, currency } = props;
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const x = days.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000);
    const data: uPlot.AlignedData = [
      x,
      days.map((d) => Number(d.visitors)),
      days.map((d) => Number(d.pageviews)),
      ...(currency ? [revenueSeries(days, currency)] : []),
    ];
    const make = () => {
      // The page's text colour (light or dark theme): canvas text cannot use currentColor.
      const ink = getComputedStyle(el).color;
      const grid = { stroke: "rgba(128,128,128,0.3)", width: 1 };
      const series: uPlot.Series[] = [
        {},
        { label: "Visitors", scale: "count", stroke: COLORS.visitors, width: 2 },
        {
          label: "Pageviews",
          scale: "count",
          stroke: COLORS.pageviews,
          width: 2,
          dash: [6, 4],
        },
      ];
      const axes: uPlot.Axis[] = [
        {
          stroke: ink,
          grid,
          ticks: { stroke: ink },
          // UTC days as MM-DD: the page's periods are whole UTC days, so ticks fall on days only.
          incrs: [86_400, 2 * 86_400, 7 * 86_400, 14 * 86_400, 30 * 86_400],
          values: (_u, splits) => splits.map((s) => new Date(s * 1000).toISOString().slice(5, 10)),
        },
        {
          scale: "count",
          label: "Visitors, pageviews",
          stroke: ink,
          grid,
          ticks: { stroke: ink },
          incrs: COUNT_INCRS,
          values: (_u, splits) => splits.map(countLabel),
        },
      ];
      if (currency) {
        series.push({
          label: `Net revenue (${currency})`,
          scale: "money",
          stroke: COLORS.revenue,
          fill: `${COLORS.revenue}22`,
          width: 2,
        });
        axes.push({
          scale: "money",
          side: 1,
          label: `Net revenue (${currency})`,
          stroke: ink,
          grid: { show: false },
          ticks: { stroke: ink },
        });
      }
      return new uPlot(
        {
          width: Math.max(280, el.clientWidth),
          height: 260,
          tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
          series,
          axes,
          scales: {
            x: { time: true },
            // Counts start at 0 and are whole; money ranges over its own values, negatives included.
            count: { range: (_u, _min, max) => countRange(max) },
          },
          legend: { live: false },
        },
        data,
        el,
      );
    };
    let plot = make();
    const resize = new ResizeObserver(() =>
      plot.setSize({ width: Math.max(280, el.clientWidth), height: 260 }),
    );
    resize.observe(el);
    // A switch of the system's theme redraws the axes in the new text colour.
    const scheme = matchMedia("(prefers-color-scheme: dark)");
    const redraw = () => {
      plot.destroy();
      plot = make();
    };
    scheme.addEventListener("change", redraw);
    return () => {
      scheme.removeEventListener("change", redraw);
      resize.disconnect();
      plot.destroy();
    };
  }, [days, currency]);
  return (
    <div
      ref={box}
      class="chart"
      id="daily-chart"
      role="img"
      aria-label={`Visitors, pageviews${currency ? ` and net revenue in ${currency}` : ""} per UTC day; the table below has the same numbers`}
    />
  );
}
