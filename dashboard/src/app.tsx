/**
 * The dashboard: sign-in, then one site and one period (both in the URL),
 * drawn from one ReportsService.SiteOverview call; a payment opens its
 * customer's journey (GetCustomer). Every number comes from the service as is.
 */
import type { Client } from "@connectrpc/connect";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type {
  ChannelOverview,
  CustomerJourneyResponse,
  Money,
  RecentPayment,
  ReportsService,
  SiteOverviewResponse,
  TopEntry,
} from "../../gen/ingest/v1/reports_pb.js";
import { describeError, isAuthError, reportsClient, storedToken, storeToken } from "./api.js";
import { DailyChart } from "./daily-chart.js";
import { count, money, percent, utcTime } from "./format.js";
import { PERIODS, type Period, rangeOf, readState, type ViewState, writeState } from "./period.js";
import { SignIn } from "./sign-in.js";

const PERIOD_LABELS: Record<Period, string> = {
  today: "Today",
  "7d": "Last 7 days",
  "30d": "Last 30 days",
  "90d": "Last 90 days",
  custom: "Custom range",
};

type Load =
  | { state: "idle" }
  | { state: "loading" }
  | { state: "error"; message: string }
  | { state: "done"; overview: SiteOverviewResponse };

export function App() {
  const [token, setToken] = useState(storedToken());
  const [view, setView] = useState<ViewState>(() => readState(location.search));
  const [signInError, setSignInError] = useState<string | undefined>();
  const [load, setLoad] = useState<Load>({ state: "idle" });
  const [journey, setJourney] = useState<RecentPayment | undefined>();
  const client = useRef<Client<typeof ReportsService> | undefined>(undefined);
  if (token && !client.current) client.current = reportsClient(token);

  const navigate = useCallback((next: ViewState) => {
    history.pushState(null, "", `${location.pathname}${writeState(next)}`);
    setView(next);
  }, []);
  useEffect(() => {
    const onPop = () => setView(readState(location.search));
    addEventListener("popstate", onPop);
    return () => removeEventListener("popstate", onPop);
  }, []);

  const signOut = useCallback((message?: string) => {
    storeToken(undefined);
    client.current = undefined;
    setToken(undefined);
    setLoad({ state: "idle" });
    setSignInError(message);
  }, []);

  useEffect(() => {
    const c = client.current;
    if (!token || !c || !view.site) return;
    const range = rangeOf(view, Date.now());
    if ("error" in range) {
      setLoad({ state: "error", message: range.error });
      return;
    }
    let current = true;
    setLoad({ state: "loading" });
    c.siteOverview({ siteId: view.site, from: range.from, to: range.to }).then(
      (overview) => current && setLoad({ state: "done", overview }),
      (err: unknown) => {
        if (!current) return;
        if (isAuthError(err)) signOut(describeError(err));
        else setLoad({ state: "error", message: describeError(err) });
      },
    );
    return () => {
      current = false;
    };
  }, [token, view, signOut]);

  // Signed in without a site (a reports key, or a reload of a bare /dashboard):
  // ask the service which site the token reads and open it.
  useEffect(() => {
    const c = client.current;
    if (!token || !c || view.site) return;
    let current = true;
    c.getAccess({}).then(
      (access) => {
        if (!current) return;
        if (access.kind === "reports_key") {
          navigate({ ...view, site: access.siteId });
        } else {
          setSignInError("Enter a site id: the admin token reads every site.");
          storeToken(undefined);
          client.current = undefined;
          setToken(undefined);
        }
      },
      (err: unknown) => current && signOut(describeError(err)),
    );
    return () => {
      current = false;
    };
  }, [token, view, navigate, signOut]);

  if (!token || !view.site) {
    return (
      <SignIn
        site={view.site}
        error={signInError}
        onSubmit={(t, site) => {
          storeToken(t);
          client.current = reportsClient(t);
          setSignInError(undefined);
          setToken(t);
          if (site) navigate({ ...view, site });
        }}
      />
    );
  }

  return (
    <div class="page">
      <header class="top">
        <h1>Revenue dashboard</h1>
        <p class="site">
          Site <code>{view.site}</code>
        </p>
        <PeriodPicker view={view} onChange={navigate} />
        <button type="button" class="link" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main aria-busy={load.state === "loading"}>
        {load.state === "loading" && <p role="status">Loading…</p>}
        {load.state === "error" && (
          <p class="error" role="alert">
            {load.message}
          </p>
        )}
        {load.state === "done" && (
          <Overview overview={load.overview} site={view.site} onOpenPayment={setJourney} />
        )}
      </main>
      {journey && client.current && (
        <Journey
          client={client.current}
          site={view.site}
          payment={journey}
          onClose={() => setJourney(undefined)}
        />
      )}
    </div>
  );
}

function PeriodPicker(props: { view: ViewState; onChange(next: ViewState): void }) {
  const { view } = props;
  const [from, setFrom] = useState(view.from);
  const [to, setTo] = useState(view.to);
  return (
    <form
      class="period"
      onSubmit={(e) => {
        e.preventDefault();
        props.onChange({ ...view, period: "custom", from, to });
      }}
    >
      <label for="period">Period (UTC days)</label>
      <select
        id="period"
        value={view.period}
        onChange={(e) => {
          const period = e.currentTarget.value as Period;
          if (period !== "custom") props.onChange({ ...view, period, from: "", to: "" });
          else props.onChange({ ...view, period, from, to });
        }}
      >
        {PERIODS.map((p) => (
          <option key={p} value={p}>
            {PERIOD_LABELS[p]}
          </option>
        ))}
      </select>
      {view.period === "custom" && (
        <>
          <label for="from">From</label>
          <input
            id="from"
            type="date"
            value={from}
            onInput={(e) => setFrom(e.currentTarget.value)}
          />
          <label for="to">To (inclusive)</label>
          <input id="to" type="date" value={to} onInput={(e) => setTo(e.currentTarget.value)} />
          <button type="submit">Apply</button>
        </>
      )}
    </form>
  );
}

function Overview(props: {
  overview: SiteOverviewResponse;
  site: string;
  onOpenPayment(p: RecentPayment): void;
}) {
  const o = props.overview;
  const hasTraffic = o.days.some((d) => d.visitors > 0n || d.pageviews > 0n) || o.newVisitors > 0n;
  const hasRevenue = o.channels.some((c) => c.revenue.length > 0);
  return (
    <>
      <p class="range">
        {utcTime(o.from)} to {utcTime(o.to)} (end excluded). All times are UTC.
      </p>
      {!hasTraffic && (
        <section class="empty" aria-labelledby="no-traffic">
          <h2 id="no-traffic">No visits in this period</h2>
          <p>Add the tracking script to the pages of your site, then come back:</p>
          <pre>
            <code>{`<script defer src="${location.origin}/js/script.js" data-site="${props.site}"></script>`}</code>
          </pre>
        </section>
      )}
      {!hasRevenue && (
        <section class="empty" aria-labelledby="no-revenue">
          <h2 id="no-revenue">No payments in this period</h2>
          <p>
            Send your payments to <code>POST /api/v1/payments</code> (or connect a payment provider)
            to see where your revenue comes from.
          </p>
        </section>
      )}
      <ChannelSection channels={o.channels} />
      <section aria-labelledby="per-day">
        <h2 id="per-day">Per day</h2>
        <DailyChart days={o.days} />
        <details>
          <summary>The daily numbers as a table</summary>
          <table>
            <caption>Visitors, pageviews and net revenue per UTC day</caption>
            <thead>
              <tr>
                <th scope="col">Day</th>
                <th scope="col">Visitors</th>
                <th scope="col">Pageviews</th>
                <th scope="col">Net revenue</th>
              </tr>
            </thead>
            <tbody>
              {o.days.map((d) => (
                <tr key={d.day}>
                  <th scope="row">{d.day}</th>
                  <td>{count(d.visitors)}</td>
                  <td>{count(d.pageviews)}</td>
                  <td>{amounts(d.netRevenue)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      </section>
      <section aria-labelledby="top" class="tops">
        <h2 id="top">Top sources, campaigns and landing pages</h2>
        <TopList
          title="Sources"
          byVisitors={o.topSourcesByVisitors}
          byRevenue={o.topSourcesByRevenue}
        />
        <TopList
          title="Campaigns"
          byVisitors={o.topCampaignsByVisitors}
          byRevenue={o.topCampaignsByRevenue}
        />
        <TopList
          title="Landing pages"
          byVisitors={o.topLandingPagesByVisitors}
          byRevenue={o.topLandingPagesByRevenue}
        />
      </section>
      <section aria-labelledby="mrr">
        <h2 id="mrr">Monthly recurring revenue</h2>
        {o.mrr.length === 0 ? (
          <p>No active subscriptions.</p>
        ) : (
          <ul class="mrr" id="mrr-list">
            {o.mrr.map((m) => (
              <li key={m.currency}>
                <strong>{money(m.mrr)}</strong> from {count(m.subscriptions)} active subscription
                {m.subscriptions === 1n ? "" : "s"}
              </li>
            ))}
          </ul>
        )}
      </section>
      <RecentPayments payments={o.recentPayments} onOpen={props.onOpenPayment} />
    </>
  );
}

function amounts(list: Money[]): string {
  return list.length === 0 ? "–" : list.map(money).join(", ");
}

/** Net per channel, one group of bars per currency (never one bar for two currencies). */
function ChannelBars(props: { channels: ChannelOverview[] }) {
  const rows = props.channels.flatMap((c) => c.revenue.map((r) => ({ channel: c.channel, r })));
  const currencies = [...new Set(rows.map((x) => x.r.currency))].sort();
  return (
    <div class="bars" aria-hidden="true">
      {currencies.map((cur) => {
        const own = rows.filter((x) => x.r.currency === cur);
        const max = own.reduce((m, x) => {
          const v = x.r.net?.minorUnits ?? 0n;
          return v > m ? v : m;
        }, 0n);
        return (
          <div class="bar-group" key={cur}>
            <h3>{cur}</h3>
            {own.map((x) => {
              const v = x.r.net?.minorUnits ?? 0n;
              const width = max > 0n && v > 0n ? Number((v * 1000n) / max) / 10 : 0;
              return (
                <div class="bar-row" key={x.channel}>
                  <span class="bar-label">{x.channel}</span>
                  <span class="bar" style={{ width: `${width}%` }} />
                  <span class="bar-value">{x.r.net?.decimal}</span>
                </div>
              );
            })}
          </div>
        );
      })}
    </div>
  );
}

function ChannelSection(props: { channels: ChannelOverview[] }) {
  return (
    <section aria-labelledby="by-channel">
      <h2 id="by-channel">Revenue by channel</h2>
      <ChannelBars channels={props.channels} />
      <div class="scroll">
        <table id="channel-table">
          <caption>
            Revenue by first-touch channel and currency (net = gross − refunds − chargebacks;
            conversion = paying customers ÷ new visitors)
          </caption>
          <thead>
            <tr>
              <th scope="col">Channel</th>
              <th scope="col">Currency</th>
              <th scope="col">Gross</th>
              <th scope="col">Refunds</th>
              <th scope="col">Chargebacks</th>
              <th scope="col">Net</th>
              <th scope="col">Paying customers</th>
              <th scope="col">New visitors</th>
              <th scope="col">Conversion</th>
            </tr>
          </thead>
          <tbody>
            {props.channels.flatMap((c) =>
              c.revenue.length === 0
                ? [
                    <tr key={c.channel}>
                      <th scope="row">{c.channel}</th>
                      <td>–</td>
                      <td>–</td>
                      <td>–</td>
                      <td>–</td>
                      <td>–</td>
                      <td>0</td>
                      <td>{count(c.newVisitors)}</td>
                      <td>{percent(0, c.newVisitors)}</td>
                    </tr>,
                  ]
                : c.revenue.map((r) => (
                    <tr key={`${c.channel}/${r.currency}`}>
                      <th scope="row">{c.channel}</th>
                      <td>{r.currency}</td>
                      <td>{r.gross?.decimal}</td>
                      <td>{r.refunds?.decimal}</td>
                      <td>{r.chargebacks?.decimal}</td>
                      <td>{r.net?.decimal}</td>
                      <td>{count(r.payingCustomers)}</td>
                      <td>{count(c.newVisitors)}</td>
                      <td>{percent(r.payingCustomers, c.newVisitors)}</td>
                    </tr>
                  )),
            )}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function TopList(props: { title: string; byVisitors: TopEntry[]; byRevenue: TopEntry[] }) {
  return (
    <div class="top-card">
      <h3>{props.title}</h3>
      <h4>By new visitors</h4>
      {props.byVisitors.length === 0 ? (
        <p class="muted">None in this period.</p>
      ) : (
        <ol>
          {props.byVisitors.map((e) => (
            <li key={e.value}>
              <span class="value">{e.value}</span> <span>{count(e.newVisitors)}</span>
            </li>
          ))}
        </ol>
      )}
      <h4>By net revenue</h4>
      {props.byRevenue.length === 0 ? (
        <p class="muted">None in this period.</p>
      ) : (
        <ol>
          {props.byRevenue.map((e) => (
            <li key={`${e.value}/${e.netRevenue[0]?.currency}`}>
              <span class="value">{e.value}</span> <span>{amounts(e.netRevenue)}</span>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

function RecentPayments(props: { payments: RecentPayment[]; onOpen(p: RecentPayment): void }) {
  return (
    <section aria-labelledby="recent">
      <h2 id="recent">Recent payments</h2>
      {props.payments.length === 0 ? (
        <p>No payments in this period.</p>
      ) : (
        <div class="scroll">
          <table id="payments-table">
            <caption>
              The most recent succeeded payments; open one to see its customer's journey
            </caption>
            <thead>
              <tr>
                <th scope="col">Payment</th>
                <th scope="col">Paid at</th>
                <th scope="col">Amount</th>
                <th scope="col">Kind</th>
                <th scope="col">Channel</th>
                <th scope="col">Source</th>
                <th scope="col">Landing page</th>
              </tr>
            </thead>
            <tbody>
              {props.payments.map((p) => (
                <tr key={p.paymentId}>
                  <th scope="row">
                    <button
                      type="button"
                      class="link"
                      aria-label={`Open the journey of payment ${p.paymentId}`}
                      onClick={() => props.onOpen(p)}
                    >
                      {p.paymentId}
                    </button>
                  </th>
                  <td>{utcTime(p.paidAt)}</td>
                  <td>{money(p.amount)}</td>
                  <td>{p.kind}</td>
                  <td>{p.channel}</td>
                  <td>{p.source ?? "–"}</td>
                  <td>{p.landingPage ?? "–"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** The customer of a payment (CustomerJourney): linked visitors, their first touches, the customer's first touch, its payments. */
function Journey(props: {
  client: Client<typeof ReportsService>;
  site: string;
  payment: RecentPayment;
  onClose(): void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [data, setData] = useState<CustomerJourneyResponse | undefined>();
  const [error, setError] = useState<string | undefined>();
  const { client, site, payment, onClose } = props;
  useEffect(() => {
    dialog.current?.showModal();
    client
      .customerJourney({ siteId: site, customerId: payment.customerId })
      .then(setData, (err) => setError(describeError(err)));
  }, [client, site, payment]);
  const touch = (a: CustomerJourneyResponse["firstTouch"]) =>
    a
      ? `${a.channel}${a.source ? ` (${a.source})` : ""}, landed on ${a.landingPage} at ${utcTime(a.touchedAt)}`
      : "unknown";
  return (
    <dialog ref={dialog} class="journey" aria-labelledby="journey-title" onClose={onClose}>
      <h2 id="journey-title">Customer {payment.customerId}</h2>
      <p>
        Payment {payment.paymentId}: {money(payment.amount)} ({payment.kind}) at{" "}
        {utcTime(payment.paidAt)}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {!data && !error && <p role="status">Loading…</p>}
      {data && (
        <>
          <p id="journey-first-touch">
            First touch: <strong>{touch(data.firstTouch)}</strong>
          </p>
          {data.visitors.length === 0 ? (
            <p>
              No visitor is linked to this customer yet: identify signed-in users or pass the
              visitor id with payments.
            </p>
          ) : (
            <table id="journey-visitors">
              <caption>Visitors linked to the customer</caption>
              <thead>
                <tr>
                  <th scope="col">Visitor</th>
                  <th scope="col">Linked by</th>
                  <th scope="col">Linked at</th>
                  <th scope="col">First touch</th>
                </tr>
              </thead>
              <tbody>
                {data.visitors.map((v) => (
                  <tr key={v.visitorId}>
                    <th scope="row">
                      <code>{v.visitorId}</code>
                    </th>
                    <td>{v.link}</td>
                    <td>{utcTime(v.linkedAt)}</td>
                    <td>{touch(v.firstTouch)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <table id="journey-payments">
            <caption>The customer's payments, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Payment</th>
                <th scope="col">Paid at</th>
                <th scope="col">Amount</th>
                <th scope="col">Kind</th>
                <th scope="col">Status</th>
                <th scope="col">Channel</th>
              </tr>
            </thead>
            <tbody>
              {data.payments.map((p) => (
                <tr key={p.paymentId}>
                  <th scope="row">{p.paymentId}</th>
                  <td>{utcTime(p.paidAt)}</td>
                  <td>{money(p.amount)}</td>
                  <td>{p.kind}</td>
                  <td>{p.status}</td>
                  <td>{p.channel}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <form method="dialog">
        <button type="submit" autofocus>
          Close
        </button>
      </form>
    </dialog>
  );
}
