/** The setup page's states: checking the link, the form, done (with the key, shown once). */
import { useEffect, useState } from "preact/hooks";
import { storeToken } from "../src/api.js";
import { checkToken, completeSetup, type SetupDone, SetupRefused } from "./setup-api.js";

type State =
  | { step: "checking" }
  | { step: "refused"; message: string }
  | { step: "form"; error?: string; busy?: boolean }
  | { step: "done"; done: SetupDone };

/** The time zones this browser knows (IANA names), UTC first. */
function timeZones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (what: string) => string[] };
  const all = intl.supportedValuesOf?.("timeZone") ?? [];
  return ["UTC", ...all.filter((z) => z !== "UTC")];
}

/** The browser's own time zone, when it is one of the list. */
function localZone(zones: string[]): string {
  const here = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return here && zones.includes(here) ? here : "UTC";
}

const message = (err: unknown) =>
  err instanceof SetupRefused ? err.message : "Something went wrong. Try again in a moment.";

export function SetupApp() {
  // Read once, then dropped from the address bar and history: the link is a secret.
  const [token] = useState(() => new URLSearchParams(location.search).get("token") ?? "");
  const [state, setState] = useState<State>({ step: "checking" });
  const [zones] = useState(timeZones);
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const [hosts, setHosts] = useState(location.hostname);
  const [zone, setZone] = useState(() => localZone(zones));

  useEffect(() => {
    history.replaceState(null, "", location.pathname);
    checkToken(token).then(
      () => setState({ step: "form" }),
      (err: unknown) => setState({ step: "refused", message: message(err) }),
    );
  }, [token]);

  if (state.step === "checking") {
    return (
      <main class="sign-in">
        <h1>Set up</h1>
        <p>Checking the setup link…</p>
      </main>
    );
  }
  if (state.step === "refused") {
    return (
      <main class="sign-in">
        <h1>Set up</h1>
        <p class="error" role="alert" id="setup-error">
          {state.message}
        </p>
      </main>
    );
  }
  if (state.step === "done") {
    const { done } = state;
    return (
      <main class="sign-in">
        <h1>Ready</h1>
        <p>
          Your account, your site and a reports key for this dashboard are created. Keep the key: it
          is shown this once, and you sign in with it from now on.
        </p>
        <dl class="setup-result">
          <dt>Reports key</dt>
          <dd>
            <code id="reports-key">{done.reports_key}</code>
          </dd>
          <dt>Site id</dt>
          <dd>
            <code id="site-id">{done.site_id}</code>
          </dd>
          <dt>Owner user id (the admin CLI's --as)</dt>
          <dd>
            <code id="owner-user-id">{done.owner_user_id}</code>
          </dd>
          <dt>Account id</dt>
          <dd>
            <code id="account-id">{done.account_id}</code>
          </dd>
        </dl>
        <button type="button" onClick={() => location.assign(`/dashboard?site=${done.site_id}`)}>
          Open the dashboard
        </button>
      </main>
    );
  }
  return (
    <main class="sign-in">
      <h1>Set up</h1>
      <p>
        This service has no account yet. Create yours: you become its owner, with a first site and a
        reports key to sign in to the dashboard.
      </p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setState({ step: "form", busy: true });
          completeSetup(token, {
            owner_email: email.trim(),
            account_name: name.trim(),
            hostnames: hosts
              .split(/[\s,]+/)
              .map((h) => h.trim())
              .filter((h) => h !== ""),
            time_zone: zone,
          }).then(
            (done) => {
              // Signed in as when a key is typed on the sign-in screen.
              storeToken(done.reports_key);
              setState({ step: "done", done });
            },
            (err: unknown) => setState({ step: "form", error: message(err) }),
          );
        }}
      >
        <label for="owner-email">Your email</label>
        <input
          id="owner-email"
          type="email"
          autocomplete="email"
          required
          value={email}
          onInput={(e) => setEmail(e.currentTarget.value)}
        />
        <label for="account-name">Account name</label>
        <input
          id="account-name"
          aria-describedby="account-name-hint"
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <p class="hint" id="account-name-hint">
          Optional: your company or project; the site's first hostname when empty.
        </p>
        <label for="hostnames">Site hostnames</label>
        <input
          id="hostnames"
          aria-describedby="hostnames-hint"
          required
          value={hosts}
          onInput={(e) => setHosts(e.currentTarget.value)}
        />
        <p class="hint" id="hostnames-hint">
          The hostnames your pages are served from (example.com www.example.com), separated by
          spaces or commas: events from other hosts are refused.
        </p>
        <label for="time-zone">Time zone</label>
        <select id="time-zone" value={zone} onChange={(e) => setZone(e.currentTarget.value)}>
          {zones.map((z) => (
            <option key={z} value={z}>
              {z}
            </option>
          ))}
        </select>
        {state.error && (
          <p class="error" role="alert" id="setup-error">
            {state.error}
          </p>
        )}
        <button type="submit" disabled={state.busy}>
          Create and sign in
        </button>
      </form>
    </main>
  );
}
