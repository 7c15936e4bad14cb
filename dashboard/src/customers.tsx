/**
 * Customers: the period's customers by net revenue in the selected
 * currency (Query: net_revenue and payments by customer), each opening its
 * journey (CustomerJourney). This is where the page opens a customer from.
 */
import type { Client } from "@connectrpc/connect";
import type { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { useQuery } from "./calls.js";
import type { ViewState } from "./period.js";
import { metricText, queryRequest } from "./query.js";

type Reports = Client<typeof ReportsService>;

export function Customers(props: {
  client: Reports;
  view: ViewState;
  days: { fromDay: string; toDay: string };
  currency: string;
  onOpen(customerId: string): void;
}) {
  const answer = useQuery(
    props.client,
    queryRequest(props.view, props.days, props.currency, {
      metrics: ["net_revenue", "payments"],
      dimensions: ["customer"],
      limit: 20,
    }),
  );
  return (
    <section aria-labelledby="customers" id="customers-section">
      <h2 id="customers">Customers</h2>
      {answer.state === "loading" && <p role="status">Loading…</p>}
      {answer.state === "error" && (
        <p class="error" role="alert">
          {answer.message}
        </p>
      )}
      {answer.state === "done" &&
        (answer.r.rows.length === 0 ? (
          <p class="muted">No payments in {props.currency} in this period.</p>
        ) : (
          <table class="stack" id="customers-table">
            <caption>
              The period's customers by net revenue ({props.currency}); open one to see their
              journey
            </caption>
            <thead>
              <tr>
                <th scope="col">Customer</th>
                <th scope="col">Net revenue</th>
                <th scope="col">Payments</th>
              </tr>
            </thead>
            <tbody>
              {answer.r.rows.map((r) => {
                const id = r.dimensions[0] ?? "";
                return (
                  <tr key={id}>
                    <th scope="row" class="wrap">
                      <button
                        type="button"
                        class="link"
                        aria-label={`Open the journey of customer ${id}`}
                        onClick={() => props.onOpen(id)}
                      >
                        {id}
                      </button>
                    </th>
                    <td data-label="Net revenue">{metricText("net_revenue", r.metrics[0])}</td>
                    <td data-label="Payments">{metricText("payments", r.metrics[1])}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        ))}
    </section>
  );
}
