/**
 * The funnel: 2–8 steps (a page, a page prefix or an event) defined on the
 * page and kept in the URL; one ReportsService.Funnel call for the view's
 * days, filters, model and currency answers visitors per step, drop-off
 * and the net revenue of those who completed every step.
 */
import type { Client } from "@connectrpc/connect";
import { useState } from "preact/hooks";
import type { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { useCall } from "./calls.js";
import { type FunnelStep, STEP_KINDS, type ViewState } from "./period.js";
import { funnelRequest, moneyText } from "./query.js";

type Reports = Client<typeof ReportsService>;

const KIND_LABEL: Record<FunnelStep["kind"], string> = {
  page: "Page is",
  page_prefix: "Page starts with",
  event: "Event is",
};

const MIN_STEPS = 2;
const MAX_STEPS = 8;

export function FunnelView(props: {
  client: Reports;
  view: ViewState;
  days: { fromDay: string; toDay: string };
  currency: string | undefined;
  onChange(next: ViewState): void;
}) {
  const { view } = props;
  const initial: FunnelStep[] =
    view.steps.length >= MIN_STEPS
      ? view.steps
      : [
          { kind: "page", value: "" },
          { kind: "event", value: "" },
        ];
  const [draft, setDraft] = useState<FunnelStep[]>(initial);
  const key = JSON.stringify(view.steps);
  const [seen, setSeen] = useState(key);
  // Back/forward or a bookmark changes the URL's steps: the editor follows.
  if (seen !== key) {
    setSeen(key);
    setDraft(initial);
  }
  const ready = view.steps.length >= MIN_STEPS && view.steps.every((s) => s.value !== "");
  const set = (i: number, step: FunnelStep) => setDraft(draft.map((s, j) => (j === i ? step : s)));
  return (
    <section aria-labelledby="funnel" class="funnel" id="funnel-section">
      <h2 id="funnel">Funnel</h2>
      <form
        class="funnel-steps"
        aria-label="Funnel steps"
        onSubmit={(e) => {
          e.preventDefault();
          props.onChange({ ...view, steps: draft.map((s) => ({ ...s, value: s.value.trim() })) });
        }}
      >
        <ol>
          {draft.map((s, i) => (
            <li key={i}>
              <select
                id={`step-kind-${i}`}
                aria-label={`Step ${i + 1} kind`}
                value={s.kind}
                onChange={(e) =>
                  set(i, { ...s, kind: e.currentTarget.value as FunnelStep["kind"] })
                }
              >
                {STEP_KINDS.map((k) => (
                  <option key={k} value={k}>
                    {KIND_LABEL[k]}
                  </option>
                ))}
              </select>{" "}
              <input
                id={`step-value-${i}`}
                aria-label={`Step ${i + 1} value`}
                required
                maxLength={2048}
                placeholder={s.kind === "event" ? "signup" : "/pricing"}
                value={s.value}
                onInput={(e) => set(i, { ...s, value: e.currentTarget.value })}
              />{" "}
              {draft.length > MIN_STEPS && (
                <button
                  type="button"
                  class="link"
                  aria-label={`Remove step ${i + 1}`}
                  onClick={() => setDraft(draft.filter((_, j) => j !== i))}
                >
                  Remove
                </button>
              )}
            </li>
          ))}
        </ol>
        {draft.length < MAX_STEPS && (
          <button type="button" onClick={() => setDraft([...draft, { kind: "page", value: "" }])}>
            Add a step
          </button>
        )}{" "}
        <button type="submit">Show the funnel</button>
      </form>
      {ready ? (
        <FunnelResult {...props} />
      ) : (
        <p class="muted">Define 2 to 8 steps (pages or events), then show the funnel.</p>
      )}
    </section>
  );
}

function FunnelResult(props: {
  client: Reports;
  view: ViewState;
  days: { fromDay: string; toDay: string };
  currency: string | undefined;
}) {
  const answer = useCall(
    funnelRequest(props.view, props.days, props.currency, props.view.steps),
    (r) => props.client.funnel(r),
  );
  if (answer.state === "loading") return <p role="status">Loading the funnel…</p>;
  if (answer.state === "error") {
    return (
      <p class="error" role="alert">
        {answer.message}
      </p>
    );
  }
  const r = answer.r;
  return (
    <>
      <table class="stack" id="funnel-table">
        <caption>
          Visitors who reached each step after the previous ones, in order, within the period;
          drop-off is those of the previous step who did not reach it
        </caption>
        <thead>
          <tr>
            <th scope="col">Step</th>
            <th scope="col">Visitors</th>
            <th scope="col">Drop-off</th>
            <th scope="col">From the previous step</th>
            <th scope="col">From the first step</th>
          </tr>
        </thead>
        <tbody>
          {r.steps.map((s, i) => {
            const before = i === 0 ? undefined : r.steps[i - 1]?.visitors;
            return (
              <tr key={i}>
                <th scope="row" class="wrap">
                  {i + 1}. {s.label}
                </th>
                <td data-label="Visitors">{Number(s.visitors).toLocaleString("en-GB")}</td>
                <td data-label="Drop-off">
                  {before === undefined
                    ? "–"
                    : `${Number(before - s.visitors).toLocaleString("en-GB")} (${(100 - s.conversionFromPrevious).toFixed(1)}%)`}
                </td>
                <td data-label="From the previous step">{s.conversionFromPrevious.toFixed(1)}%</td>
                <td data-label="From the first step">{s.conversionOverall.toFixed(1)}%</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {props.currency && (
        <p id="funnel-revenue">
          Net revenue of the visitors who completed every step:{" "}
          <strong>{moneyText(r.completersNetRevenue)}</strong> ({r.model.replace(/_/g, " ")}).
        </p>
      )}
    </>
  );
}
