/**
 * The dashboard door: `GET /dashboard`, a single-page app for a site's
 * revenue by first-touch channel (docs/dashboard.md), its two built files
 * `/dashboard/app.js` and `/dashboard/app.css` and its icon
 * `/dashboard/favicon.svg`; and the service's front door: `GET /` sends a
 * browser (`Accept: text/html`) to the page and answers anything else as
 * before (the 404 envelope), and `/dashboard/` goes to `/dashboard`. The first run's setup page
 * (setup-routes.ts: `/dashboard/setup`, `/dashboard/setup.js`). Otherwise the door only serves files:
 * the page calls ReportsService over the Connect protocol on this same origin
 * (the RPC door), with the token the user typed, so it decides nothing and
 * holds no secret.
 *
 * Every answer carries a Content-Security-Policy that lets the page load and
 * call only this origin (no CDN, no fonts, no frames), and `no-cache` with an
 * ETag: a new build is picked up at once, an unchanged one costs a 304.
 */
import { createHash } from "node:crypto";
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
<link rel="icon" href="${DASHBOARD_PATH}/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${DASHBOARD_PATH}/app.css">
<script type="module" src="${DASHBOARD_PATH}/app.js"></script>
</head>
<body>
<div id="app"><noscript>The dashboard needs JavaScript.</noscript></div>
</body>
</html>
`,
);

/** The page's icon: a bar chart in the page's accent colour, drawn here (nothing fetched). */
const FAVICON = Buffer.from(
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#2f6fdf"/><path fill="#fff" d="M7 24h4V14H7zm7 0h4V8h-4zm7 0h4V17h-4z"/></svg>`,
);
const FAVICON_ETAG = `"${createHash("sha256").update(FAVICON).digest("base64url").slice(0, 22)}"`;

/**
 * Whether an Accept header asks for HTML by name (a browser's navigation
 * does): `text/html` with a non-zero q. `*\/*` alone does not count, so curl
 * and API clients keep the JSON answer.
 */
export function acceptsHtml(header: string | undefined): boolean {
  if (!header) return false;
  return header
    .toLowerCase()
    .split(",")
    .some((part) => {
      const [type = "", ...params] = part.trim().split(";");
      if (type.trim() !== "text/html") return false;
      const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      return q === undefined || Number(q) > 0;
    });
}

/** The query string of a URL, with its `?` ("" when none). */
function queryOf(url: string): string {
  const at = url.indexOf("?");
  return at < 0 ? "" : url.slice(at);
}

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
  scope.addHook("onRequest", async (request, reply) => {
    // The root answers API clients exactly as before: only the page's own paths carry its headers.
    if (request.routeOptions.url !== "/") secure(reply);
  });
  // Only the setup page posts here: JSON kept as bytes, decoded by the route.
  acceptRawJsonBodies(scope);
  registerSetupRoutes(scope, {
    firstRun: options.firstRun,
    page: bundle ? setupPage(DASHBOARD_PATH) : undefined,
    notBuilt: (reply) => sendError(reply, notBuilt),
  });

  scope.get("/", async (request, reply) => {
    if (acceptsHtml(request.headers.accept)) return reply.redirect(DASHBOARD_PATH, 302);
    return sendError(reply, doorErrors.noRoute(request.method, "/"));
  });
  // A trailing slash is the same page: one address, so bookmarks and the URL state agree.
  scope.get(`${DASHBOARD_PATH}/`, async (request, reply) =>
    reply.redirect(`${DASHBOARD_PATH}${queryOf(request.url)}`, 301),
  );
  scope.get(`${DASHBOARD_PATH}/favicon.svg`, async (request, reply) => {
    reply.header("etag", FAVICON_ETAG);
    if (matches(request.headers["if-none-match"], FAVICON_ETAG)) return reply.code(304).send();
    reply.type("image/svg+xml");
    return reply.send(FAVICON);
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
