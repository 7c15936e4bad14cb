/** The dashboard's entry: mounts the app into the page served by the dashboard door. */
import { render } from "preact";
import { App } from "./app.js";
import "uplot/dist/uPlot.min.css";
import "./style.css";

const root = document.getElementById("app");
if (root) {
  root.textContent = "";
  render(<App />, root);
}
