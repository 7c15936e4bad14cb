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
  LinkedVisitor,
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
import { QueryView } from "./query-view.js";
import { SignIn } from "./sign-in.js";

const PERIOD_LABELS: Record<Period, string> = {
  today: "Today",
  "7d": "Last 7 days",
  "30d": "Last 30 days",
  "90d": "Last 90 days",
  mtd: "Month to date",
  last_month: "Last month",
  "12m": "Last 12 months",
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
  const [hostnames, setHostnames] = useState<{ site: string; names: string[] } | undefined>();
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
    // Only the site and the period change what SiteOverview answers.
  }, [token, view.site, view.period, view.from, view.to, signOut]);

  // The site's host names, to show it by name (GetAccess with the site).
  useEffect(() => {
    const c = client.current;
    if (!token || !c || !view.site || hostnames?.site === view.site) return;
    let current = true;
    c.getAccess({ siteId: view.site }).then(
      (access) => current && setHostnames({ site: view.site, names: access.hostnames }),
      // The overview's own call says what went wrong; the id is shown meanwhile.
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, [token, view.site, hostnames]);

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
        <SiteName
          id={view.site}
          names={hostnames?.site === view.site ? hostnames.names : undefined}
        />
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
          <Overview
            overview={load.overview}
            client={client.current}
            view={view}
            onChange={navigate}
            onOpenPayment={setJourney}
          />
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

/** The site by its first host name, its id beside it; the id alone until the names are known. */
function SiteName(props: { id: string; names: string[] | undefined }) {
  const [name] = props.names ?? [];
  return (
    <p class="site" id="site-name">
      {name ? (
        <>
          <strong>{name}</strong>{" "}
          <span class="muted">
            (site <code>{props.id}</code>)
          </span>
        </>
      ) : (
        <>
          Site <code>{props.id}</code>
        </>
      )}
    </p>
  );
}

/** The currencies of a period's amounts, most net revenue first (then by code). */
export function currenciesByNet(o: SiteOverviewResponse): string[] {
  const net = new Map<string, bigint>();
  for (const c of o.channels) {
    for (const r of c.revenue) {
      net.set(r.currency, (net.get(r.currency) ?? 0n) + (r.net?.minorUnits ?? 0n));
    }
  }
  for (const d of o.days)
    for (const m of d.netRevenue) net.set(m.currency, net.get(m.currency) ?? 0n);
  return [...net]
    .sort((a, b) => (a[1] === b[1] ? a[0].localeCompare(b[0]) : a[1] > b[1] ? -1 : 1))
    .map(([c]) => c);
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
  client: Client<typeof ReportsService> | undefined;
  view: ViewState;
  onChange(next: ViewState): void;
  onOpenPayment(p: RecentPayment): void;
}) {
  const o = props.overview;
  const { view } = props;
  const site = view.site;
  const currencies = currenciesByNet(o);
  // The URL's currency when the period has it, else the one with most net revenue.
  const currency = currencies.includes(view.currency) ? view.currency : currencies[0];
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
            <code>{`<script defer src="${location.origin}/js/script.js" data-site="${site}"></script>`}</code>
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
      {currencies.length > 1 && currency && (
        <p class="currency">
          <label for="currency">Currency of the amounts</label>{" "}
          <select
            id="currency"
            value={currency}
            onChange={(e) => props.onChange({ ...view, currency: e.currentTarget.value })}
          >
            {currencies.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>{" "}
          <span class="muted">Amounts are never added across currencies.</span>
        </p>
      )}
      {props.client && (
        <QueryView
          client={props.client}
          view={view}
          currency={currency}
          onChange={props.onChange}
        />
      )}
      <ChannelSection channels={o.channels} currency={currency} />
      <section aria-labelledby="per-day">
        <h2 id="per-day">Per day</h2>
        <DailyChart days={o.days} currency={currency} />
        <details>
          <summary>The daily numbers as a table</summary>
          <table class="stack">
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
                  <td data-label="Visitors">{count(d.visitors)}</td>
                  <td data-label="Pageviews">{count(d.pageviews)}</td>
                  <td data-label="Net revenue">{amounts(d.netRevenue)}</td>
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
          currency={currency}
        />
        <TopList
          title="Campaigns"
          byVisitors={o.topCampaignsByVisitors}
          byRevenue={o.topCampaignsByRevenue}
          currency={currency}
        />
        <TopList
          title="Landing pages"
          byVisitors={o.topLandingPagesByVisitors}
          byRevenue={o.topLandingPagesByRevenue}
          currency={currency}
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

/**
 * Net per channel in the selected currency (never one bar for two
 * currencies). Bars are as long as the amount's size against the largest
 * one; a negative net (refunds above charges) is drawn as long, in its own
 * colour, with its minus sign.
 */
function ChannelBars(props: { channels: ChannelOverview[]; currency: string | undefined }) {
  const rows = props.channels.flatMap((c) =>
    c.revenue.filter((r) => r.currency === props.currency).map((r) => ({ channel: c.channel, r })),
  );
  if (!props.currency || rows.length === 0) return null;
  const abs = (v: bigint) => (v < 0n ? -v : v);
  const max = rows.reduce((m, x) => {
    const v = abs(x.r.net?.minorUnits ?? 0n);
    return v > m ? v : m;
  }, 0n);
  return (
    <div class="bars" aria-hidden="true">
      <div class="bar-group">
        <h3>Net revenue ({props.currency})</h3>
        {rows.map((x) => {
          const v = x.r.net?.minorUnits ?? 0n;
          const width = max > 0n ? Number((abs(v) * 1000n) / max) / 10 : 0;
          return (
            <div class="bar-row" key={x.channel}>
              <span class="bar-label">{x.channel}</span>
              <span class={v < 0n ? "bar negative" : "bar"} style={{ width: `${width}%` }} />
              <span class="bar-value">{x.r.net?.decimal}</span>
            </div>
          );
        })}
      </div>
    </div>
  );
}

function ChannelSection(props: { channels: ChannelOverview[]; currency: string | undefined }) {
  return (
    <section aria-labelledby="by-channel">
      <h2 id="by-channel">Revenue by channel</h2>
      <ChannelBars channels={props.channels} currency={props.currency} />
      <div class="scroll">
        <table id="channel-table" class="stack">
          <caption>
            Revenue by first-touch channel and currency (net = gross − refunds − chargebacks;
            conversion = paying customers ÷ new visitors of the period, which can exceed 100 % when
            customers first came before the period)
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
                      <td data-label="Currency">–</td>
                      <td data-label="Gross">–</td>
                      <td data-label="Refunds">–</td>
                      <td data-label="Chargebacks">–</td>
                      <td data-label="Net">–</td>
                      <td data-label="Paying customers">0</td>
                      <td data-label="New visitors">{count(c.newVisitors)}</td>
                      <td data-label="Conversion">{percent(0, c.newVisitors)}</td>
                    </tr>,
                  ]
                : c.revenue.map((r) => (
                    <tr key={`${c.channel}/${r.currency}`}>
                      <th scope="row">{c.channel}</th>
                      <td data-label="Currency">{r.currency}</td>
                      <td data-label="Gross">{r.gross?.decimal}</td>
                      <td data-label="Refunds">{r.refunds?.decimal}</td>
                      <td data-label="Chargebacks">{r.chargebacks?.decimal}</td>
                      <td data-label="Net">{r.net?.decimal}</td>
                      <td data-label="Paying customers">{count(r.payingCustomers)}</td>
                      <td data-label="New visitors">{count(c.newVisitors)}</td>
                      <td data-label="Conversion">{percent(r.payingCustomers, c.newVisitors)}</td>
                    </tr>
                  )),
            )}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function TopList(props: {
  title: string;
  byVisitors: TopEntry[];
  byRevenue: TopEntry[];
  currency: string | undefined;
}) {
  // By net revenue in the selected currency only: an entry per currency would repeat.
  const byRevenue = props.byRevenue.flatMap((e) => {
    const m = e.netRevenue.find((x) => x.currency === props.currency);
    return m ? [{ value: e.value, net: m }] : [];
  });
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
      <h4>By net revenue{props.currency ? ` (${props.currency})` : ""}</h4>
      {byRevenue.length === 0 ? (
        <p class="muted">None in this period.</p>
      ) : (
        <ol>
          {byRevenue.map((e) => (
            <li key={e.value}>
              <span class="value">{e.value}</span> <span>{money(e.net)}</span>
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
          <table id="payments-table" class="stack">
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
                  <td data-label="Paid at">{utcTime(p.paidAt)}</td>
                  <td data-label="Amount">{money(p.amount)}</td>
                  <td data-label="Kind">{p.kind}</td>
                  <td data-label="Channel">{p.channel}</td>
                  <td data-label="Source">{p.source ?? "–"}</td>
                  <td data-label="Landing page" class="wrap">
                    {p.landingPage ?? "–"}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** One browser: a persistent visitor (or a visitor alone) and the daily ids stitched to it. */
export interface Person {
  visitor: LinkedVisitor;
  stitched: LinkedVisitor[];
}

/**
 * The linked visitors grouped by browser: each persistent id (`p:…`) with
 * the daily ids stitched to it under it; a daily id whose persistent id is
 * not linked, or that has none, stands alone. In the service's order.
 */
export function groupVisitors(visitors: LinkedVisitor[]): Person[] {
  const linked = new Set(visitors.map((v) => v.visitorId));
  const people = new Map<string, Person>();
  for (const v of visitors) {
    if (v.persistentId && linked.has(v.persistentId)) continue;
    people.set(v.visitorId, { visitor: v, stitched: [] });
  }
  for (const v of visitors) {
    if (v.persistentId && linked.has(v.persistentId)) {
      people.get(v.persistentId)?.stitched.push(v);
    }
  }
  return [...people.values()];
}

/** A line of the journey's timeline: a first visit or a payment, by time. */
interface Moment {
  at: string;
  what: string;
  detail: string;
}

function timeline(data: CustomerJourneyResponse): Moment[] {
  const moments: Moment[] = [];
  for (const v of data.visitors) {
    const t = v.firstTouch;
    if (!t) continue;
    moments.push({
      at: t.touchedAt,
      what: "First visit",
      detail: `${t.landingPage} from ${t.channel}${t.source ? ` (${t.source})` : ""}${t.campaign ? `, campaign ${t.campaign}` : ""}`,
    });
  }
  for (const p of data.payments) {
    moments.push({
      at: p.paidAt,
      what: `Payment ${p.status}`,
      detail: `${money(p.amount)} (${p.kind}) ${p.paymentId}`,
    });
  }
  return moments.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}

/** The customer of a payment (CustomerJourney): who they are, their browsers, a timeline, their payments. */
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
  const who = data?.customer;
  const title = who?.name ?? who?.email ?? `Customer ${payment.customerId}`;
  return (
    <dialog ref={dialog} class="journey" aria-labelledby="journey-title" onClose={onClose}>
      <h2 id="journey-title">{data ? title : `Customer ${payment.customerId}`}</h2>
      {who && (
        <dl class="who" id="journey-who">
          <dt>Customer id</dt>
          <dd>
            <code>{who.customerId}</code>
          </dd>
          {who.name && (
            <>
              <dt>Name</dt>
              <dd>{who.name}</dd>
            </>
          )}
          {who.email && (
            <>
              <dt>Email</dt>
              <dd>{who.email}</dd>
            </>
          )}
        </dl>
      )}
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
            <>
              <h3>Browsers linked to the customer</h3>
              <ul class="people" id="journey-people">
                {groupVisitors(data.visitors).map((p) => (
                  <li key={p.visitor.visitorId}>
                    <code class="id">{p.visitor.visitorId}</code>{" "}
                    <span class="muted">
                      linked by {p.visitor.link} at {utcTime(p.visitor.linkedAt)}
                    </span>
                    <div>First touch: {touch(p.visitor.firstTouch)}</div>
                    {p.stitched.length > 0 && (
                      <details>
                        <summary>
                          {p.stitched.length} daily id{p.stitched.length === 1 ? "" : "s"} of the
                          same browser
                        </summary>
                        <ul>
                          {p.stitched.map((d) => (
                            <li key={d.visitorId}>
                              <code class="id">{d.visitorId}</code>
                              {d.firstTouch ? ` — first visit ${touch(d.firstTouch)}` : ""}
                            </li>
                          ))}
                        </ul>
                      </details>
                    )}
                  </li>
                ))}
              </ul>
            </>
          )}
          <h3>Timeline</h3>
          <ol class="timeline" id="journey-timeline">
            {timeline(data).map((m) => (
              <li key={`${m.at}/${m.what}/${m.detail}`}>
                <time dateTime={m.at}>{utcTime(m.at)}</time> <strong>{m.what}</strong>{" "}
                <span class="wrap">{m.detail}</span>
              </li>
            ))}
          </ol>
          <table id="journey-payments" class="stack">
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
                  <td data-label="Paid at">{utcTime(p.paidAt)}</td>
                  <td data-label="Amount">{money(p.amount)}</td>
                  <td data-label="Kind">{p.kind}</td>
                  <td data-label="Status">{p.status}</td>
                  <td data-label="Channel">{p.channel}</td>
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
