/**
 * The sign-in screen: a token (the service's ADMIN_TOKEN or a site's reports
 * key) and a site id, which a reports key does not need (it reads its own site).
 */
import { useState } from "preact/hooks";

export function SignIn(props: {
  site: string;
  error?: string;
  onSubmit(token: string, site: string): void;
}) {
  const [token, setToken] = useState("");
  const [site, setSite] = useState(props.site);
  return (
    <main class="sign-in">
      <h1>Revenue dashboard</h1>
      <p>
        Sign in with a reports key of your site (<code>mk_live_…</code>, created by an owner or
        admin with the <code>reports</code> scope) or the service's admin token. It is kept in this
        tab only (sessionStorage).
      </p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          props.onSubmit(token.trim(), site.trim());
        }}
      >
        <label for="token">Token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          required
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        <label for="site">Site id</label>
        <input
          id="site"
          name="site"
          aria-describedby="site-hint"
          value={site}
          onInput={(e) => setSite(e.currentTarget.value)}
        />
        <p class="hint" id="site-hint">
          Optional with a reports key: it opens its own site. Required with the admin token.
        </p>
        {props.error && (
          <p class="error" role="alert" id="sign-in-error">
            {props.error}
          </p>
        )}
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}
