/**
 * The dashboard door: `GET /dashboard`, a single-page app for a site's
 * revenue by first-touch channel (docs/dashboard.md), and its two built files
 * `/dashboard/app.js` and `/dashboard/app.css`, and the first run's setup page
 * (setup-routes.ts: `/dashboard/setup`, `/dashboard/setup.js`). Otherwise the door only serves files:
 * the page calls ReportsService over the Connect protocol on this same origin
 * (the RPC door), with the token the user typed, so it decides nothing and
 * holds no secret.
 *
 * Every answer carries a Content-Security-Policy that lets the page load and
 * call only this origin (no CDN, no fonts, no frames), and `no-cache` with an
 * ETag: a new build is picked up at once, an unchanged one costs a 304.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { FirstRun } from "../../domain/first-run.js";
import { acceptRawJsonBodies } from "../../edge/decode-json.js";
import { doorErrors } from "../../edge/door-errors.js";
import { sendError } from "../envelope.js";
import { registerMethodNotAllowed } from "../method-not-allowed.js";
import { pickEncoding } from "../tracker-script.js";
import {
  type DashboardAsset,
  type DashboardBundle,
  loadDashboardBundle,
} from "./dashboard-bundle.js";
import { registerSetupRoutes, setupPage } from "./setup-routes.js";

/** Where the page is: part of the public interface (bookmarks carry it). */
export const DASHBOARD_PATH = "/dashboard";

/** Only this origin, for everything the page may load or call. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** The page: a shell that loads the bundle; everything else is drawn by app.js. */
const PAGE = Buffer.from(
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>Revenue dashboard</title>
<link rel="stylesheet" href="${DASHBOARD_PATH}/app.css">
<script type="module" src="${DASHBOARD_PATH}/app.js"></script>
</head>
<body>
<div id="app"><noscript>The dashboard needs JavaScript.</noscript></div>
</body>
</html>
`,
);

/** What the dashboard door serves. */
export interface DashboardDoorOptions {
  /** The first run's setup page (setup-routes.ts). */
  firstRun: FirstRun;
  /** The built files; default: what `npm run build` wrote to dist/dashboard/. */
  dashboardBundle?: DashboardBundle;
}

/** Headers of every answer of the door. */
function secure(reply: FastifyReply): void {
  reply.header("content-security-policy", DASHBOARD_CSP);
  reply.header("x-content-type-options", "nosniff");
  reply.header("referrer-policy", "no-referrer");
  reply.header("cache-control", "no-cache");
}

/** Whether an If-None-Match header names this ETag (or `*`). */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header
    .split(",")
    .map((t) => t.trim().replace(/^W\//, ""))
    .some((t) => t === etag || t === "*");
}

function sendAsset(request: FastifyRequest, reply: FastifyReply, a: DashboardAsset) {
  reply.header("etag", a.etag);
  reply.header("vary", "Accept-Encoding");
  if (matches(request.headers["if-none-match"], a.etag)) return reply.code(304).send();
  const encoding = pickEncoding(request.headers["accept-encoding"]);
  reply.type(a.type);
  if (encoding) reply.header("content-encoding", encoding);
  return reply.send(encoding ? a[encoding] : a.identity);
}

/** The dashboard door plugin. */
export const dashboardDoor: FastifyPluginAsync<DashboardDoorOptions> = async (scope, options) => {
  const bundle = options.dashboardBundle ?? loadDashboardBundle();
  const notBuilt = doorErrors.notServed("the dashboard is not built: run npm run build");
  scope.addHook("onRequest", async (_request, reply) => secure(reply));
  // Only the setup page posts here: JSON kept as bytes, decoded by the route.
  acceptRawJsonBodies(scope);
  registerSetupRoutes(scope, {
    firstRun: options.firstRun,
    page: bundle ? setupPage(DASHBOARD_PATH) : undefined,
    notBuilt: (reply) => sendError(reply, notBuilt),
  });

  scope.get(DASHBOARD_PATH, async (_request, reply) => {
    if (!bundle) return sendError(reply, notBuilt);
    reply.type("text/html; charset=utf-8");
    return reply.send(PAGE);
  });
  for (const name of ["app.js", "app.css", "setup.js"] as const) {
    const url = `${DASHBOARD_PATH}/${name}`;
    scope.get(url, async (request, reply) => {
      if (!bundle) return sendError(reply, notBuilt);
      return sendAsset(request, reply, bundle[name]);
    });
    registerMethodNotAllowed(scope, { url, allow: ["GET", "HEAD"], use: "GET" });
  }
  registerMethodNotAllowed(scope, { url: DASHBOARD_PATH, allow: ["GET", "HEAD"], use: "GET" });
};
