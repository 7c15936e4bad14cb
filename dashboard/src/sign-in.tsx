/** The sign-in screen: a token (the service's ADMIN_TOKEN) and a site id. */
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
      <p>Sign in with the service's admin token. It is kept in this tab only (sessionStorage).</p>
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
          required
          value={site}
          onInput={(e) => setSite(e.currentTarget.value)}
        />
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
