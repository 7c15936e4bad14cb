/** The dashboard's entry: mounts the app into the page served by the dashboard door. */
// First: a locale Intl refuses would stop uPlot's module from loading.
import "./locale-guard.js";
import { render } from "preact";
import { App } from "./app.js";
import "uplot/dist/uPlot.min.css";
import "./style.css";

const root = document.getElementById("app");
if (root) {
  root.textContent = "";
  render(<App />, root);
}
