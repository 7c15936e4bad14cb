/**
 * The first run's setup page (`/dashboard/setup?token=…`, printed by the
 * server at start while it has no account): checks the token, then creates
 * the owner's account, the first site and a reports key, stores the key as
 * the sign-in screen does and opens the dashboard. Every refusal shown is the
 * service's own message.
 */
import { render } from "preact";
import { SetupApp } from "./setup-app.js";

const root = document.getElementById("app");
if (root) {
  root.textContent = "";
  render(<SetupApp />, root);
}
