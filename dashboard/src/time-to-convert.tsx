/**
 * Time to convert: how many customers paid for the first time after how
 * many whole days since their first touch (Query: paying_customers by
 * days_to_first_payment), and the median days and visits per channel
 * (median_days_to_first_payment, median_visits_to_first_payment by channel).
 */
import type { Client } from "@connectrpc/connect";
import type { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { useQuery } from "./calls.js";
import type { ViewState } from "./period.js";
import { metricNumber, metricText, queryRequest } from "./query.js";

type Reports = Client<typeof ReportsService>;

/** The buckets in order (docs/reports.md), with how the page names them. */
const BUCKETS: [string, string][] = [
  ["0", "Same day (under 1 day)"],
  ["1", "1 day"],
  ["2-3", "2–3 days"],
  ["4-7", "4–7 days"],
  ["8-14", "8–14 days"],
  ["15-30", "15–30 days"],
  ["31-60", "31–60 days"],
  ["61-90", "61–90 days"],
  ["91+", "91 days or more"],
];

export function TimeToConvert(props: {
  client: Reports;
  view: ViewState;
  days: { fromDay: string; toDay: string };
  currency: string;
}) {
  const spread = useQuery(
    props.client,
    queryRequest(props.view, props.days, props.currency, {
      metrics: ["paying_customers"],
      dimensions: ["days_to_first_payment"],
      limit: 20,
    }),
  );
  const medians = useQuery(
    props.client,
    queryRequest(props.view, props.days, props.currency, {
      metrics: ["median_days_to_first_payment", "median_visits_to_first_payment"],
      dimensions: ["channel"],
      limit: 20,
    }),
  );
  const counts = new Map(
    spread.state === "done"
      ? spread.r.rows.map((r) => [r.dimensions[0] ?? "", metricNumber(r.metrics[0]) ?? 0])
      : [],
  );
  const max = Math.max(1, ...counts.values());
  return (
    <section aria-labelledby="ttc" class="ttc" id="time-to-convert">
      <h2 id="ttc">Time to convert ({props.currency})</h2>
      {spread.state === "loading" && <p role="status">Loading…</p>}
      {spread.state === "error" && (
        <p class="error" role="alert">
          {spread.message}
        </p>
      )}
      {spread.state === "done" && (
        <table class="stack" id="ttc-table">
          <caption>
            Customers whose first payment fell in the period, by whole days from their first visit
            to it
          </caption>
          <thead>
            <tr>
              <th scope="col">Days to first payment</th>
              <th scope="col">Customers</th>
            </tr>
          </thead>
          <tbody>
            {BUCKETS.map(([b, name]) => (
              <tr key={b}>
                <th scope="row">{name}</th>
                <td data-label="Customers">
                  <span
                    class="ttc-bar"
                    aria-hidden="true"
                    style={{ width: `${((counts.get(b) ?? 0) / max) * 8}em` }}
                  />{" "}
                  {(counts.get(b) ?? 0).toLocaleString("en-GB")}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {medians.state === "error" && (
        <p class="error" role="alert">
          {medians.message}
        </p>
      )}
      {medians.state === "done" && medians.r.rows.length > 0 && (
        <table class="stack" id="ttc-channels">
          <caption>Median time to the first payment per first-touch channel</caption>
          <thead>
            <tr>
              <th scope="col">Channel</th>
              <th scope="col">Median days</th>
              <th scope="col">Median visits</th>
            </tr>
          </thead>
          <tbody>
            {medians.r.rows.map((r) => (
              <tr key={r.dimensions[0]}>
                <th scope="row">{r.dimensions[0]}</th>
                <td data-label="Median days">
                  {metricText("median_days_to_first_payment", r.metrics[0])}
                </td>
                <td data-label="Median visits">
                  {metricText("median_visits_to_first_payment", r.metrics[1])}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
