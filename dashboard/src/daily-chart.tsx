/**
 * Visitors, pageviews and net revenue per UTC day on one time axis (uPlot).
 * Counts share the left axis; each currency gets its own scale (amounts of
 * two currencies are never drawn as one number), the first one on the right
 * axis. The same numbers are in the table below the chart for screen readers.
 */
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import type { DayOverview } from "../../gen/ingest/v1/reports_pb.js";

const COLORS = ["#2f6fdf", "#8a5cd0", "#1f9d6b", "#d9822b", "#c2416b"];

export function DailyChart(props: { days: DayOverview[] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const days = props.days;
    const currencies = [
      ...new Set(days.flatMap((d) => d.netRevenue.map((m) => m.currency))),
    ].sort();
    const x = days.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000);
    const data: uPlot.AlignedData = [
      x,
      days.map((d) => Number(d.visitors)),
      days.map((d) => Number(d.pageviews)),
      ...currencies.map((c) =>
        days.map((d) => Number(d.netRevenue.find((m) => m.currency === c)?.decimal ?? 0)),
      ),
    ];
    const series: uPlot.Series[] = [
      {},
      { label: "Visitors", stroke: COLORS[0], width: 2 },
      { label: "Pageviews", stroke: COLORS[1], width: 2, dash: [6, 4] },
      ...currencies.map((c, i) => ({
        label: `Net revenue ${c}`,
        scale: c,
        stroke: COLORS[(i + 2) % COLORS.length],
        fill: `${COLORS[(i + 2) % COLORS.length]}22`,
        width: 2,
      })),
    ];
    const axes: uPlot.Axis[] = [
      {
        stroke: "currentColor",
        grid: { stroke: "#8884" },
        // UTC days as MM-DD: the page's periods are whole UTC days, so ticks fall on days only.
        incrs: [86_400, 2 * 86_400, 7 * 86_400, 14 * 86_400, 30 * 86_400],
        values: (_u, splits) => splits.map((s) => new Date(s * 1000).toISOString().slice(5, 10)),
      },
      { stroke: "currentColor", grid: { stroke: "#8884" } },
    ];
    if (currencies[0]) {
      axes.push({ scale: currencies[0], side: 1, stroke: "currentColor", grid: { show: false } });
    }
    const make = () =>
      new uPlot(
        {
          width: Math.max(280, el.clientWidth),
          height: 260,
          tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
          series,
          axes,
          scales: { x: { time: true } },
          legend: { live: false },
        },
        data,
        el,
      );
    let plot = make();
    const resize = new ResizeObserver(() =>
      plot.setSize({ width: Math.max(280, el.clientWidth), height: 260 }),
    );
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
      plot = undefined as unknown as uPlot;
    };
  }, [props.days]);
  return (
    <div
      ref={box}
      class="chart"
      role="img"
      aria-label="Visitors, pageviews and net revenue per UTC day; the table below has the same numbers"
    />
  );
}
