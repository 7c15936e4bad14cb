/**
 * The dashboard: sign-in, then one site and one view (period, comparison,
 * model, currency, filters, funnel: all in the URL), drawn from
 * ReportsService.Query and Funnel; a customer opens their journey
 * (CustomerJourney). Every number comes from the service as is.
 */
import type { Client } from "@connectrpc/connect";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type {
  CustomerJourneyResponse,
  LinkedVisitor,
  ReportsService,
} from "../../gen/ingest/v1/reports_pb.js";
import { describeError, reportsClient, storedToken, storeToken } from "./api.js";
import { useQuery } from "./calls.js";
import { money, utcTime } from "./format.js";
import { daysOf, PERIODS, type Period, readState, type ViewState, writeState } from "./period.js";
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

export function App() {
  const [token, setToken] = useState(storedToken());
  const [view, setView] = useState<ViewState>(() => readState(location.search));
  const [signInError, setSignInError] = useState<string | undefined>();
  const [journey, setJourney] = useState<string | undefined>();
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
    setSignInError(message);
  }, []);

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
      <main>
        {client.current && (
          <SiteView
            client={client.current}
            view={view}
            onChange={navigate}
            onOpenCustomer={setJourney}
            onAuthError={signOut}
          />
        )}
      </main>
      {journey && client.current && (
        <Journey
          client={client.current}
          site={view.site}
          customerId={journey}
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
      <label for="period">Period</label>
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

/**
 * The site's view: the period's currencies (Query: net revenue by
 * currency, most first; the URL's currency when the period has it), the
 * empty states, and the Query view in the selected currency.
 */
function SiteView(props: {
  client: Client<typeof ReportsService>;
  view: ViewState;
  onChange(next: ViewState): void;
  onOpenCustomer(customerId: string): void;
  onAuthError(message: string): void;
}) {
  const { view, client } = props;
  const days = daysOf(view, Date.now());
  const answer = useQuery(
    client,
    "error" in days
      ? undefined
      : {
          siteId: view.site,
          metrics: ["net_revenue"],
          dimensions: ["currency"],
          period: days,
          limit: 100,
        },
  );
  const { onAuthError } = props;
  const authMessage = answer.state === "error" && answer.auth ? answer.message : undefined;
  useEffect(() => {
    if (authMessage) onAuthError(authMessage);
  }, [authMessage, onAuthError]);
  if ("error" in days) {
    return (
      <p class="error" role="alert">
        {days.error}
      </p>
    );
  }
  if (answer.state === "loading") return <p role="status">Loading…</p>;
  // A refused token signs out (the effect above): the sign-in screen says why,
  // so this view shows no alert of its own for the frame before it goes.
  if (answer.state === "error" && answer.auth) return <p role="status">Signing out…</p>;
  if (answer.state === "error") {
    return (
      <p class="error" role="alert">
        {answer.message}
      </p>
    );
  }
  // Most net revenue first (Query's order: compared in minor units, ties by code).
  const currencies = answer.r.rows.map((r) => r.dimensions[0] ?? "");
  const currency = currencies.includes(view.currency) ? view.currency : currencies[0];
  return (
    <>
      {currencies.length === 0 && (
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
      <QueryView
        client={client}
        view={view}
        currency={currency}
        onChange={props.onChange}
        onOpenCustomer={props.onOpenCustomer}
      />
    </>
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

/** A customer (CustomerJourney): who they are, their browsers, a timeline, their payments. */
function Journey(props: {
  client: Client<typeof ReportsService>;
  site: string;
  customerId: string;
  onClose(): void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [data, setData] = useState<CustomerJourneyResponse | undefined>();
  const [error, setError] = useState<string | undefined>();
  const { client, site, customerId, onClose } = props;
  useEffect(() => {
    dialog.current?.showModal();
    client
      .customerJourney({ siteId: site, customerId })
      .then(setData, (err) => setError(describeError(err)));
  }, [client, site, customerId]);
  const touch = (a: CustomerJourneyResponse["firstTouch"]) =>
    a
      ? `${a.channel}${a.source ? ` (${a.source})` : ""}, landed on ${a.landingPage} at ${utcTime(a.touchedAt)}`
      : "unknown";
  const who = data?.customer;
  const title = who?.name ?? who?.email ?? `Customer ${customerId}`;
  return (
    <dialog ref={dialog} class="journey" aria-labelledby="journey-title" onClose={onClose}>
      <h2 id="journey-title">{data ? title : `Customer ${customerId}`}</h2>
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
