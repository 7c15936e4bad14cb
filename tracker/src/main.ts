/**
 * The browser tracking script served at /js/script.js. Bundled and minified
 * by esbuild (tracker/build.ts); budget: 2 KB gzipped. See docs/tracker.md.
 *
 * Rules that shape the code:
 *  - it never throws into the page: every entry point is guarded and every
 *    promise it hands out resolves (to undefined when something failed);
 *  - it sends text/plain JSON (a CORS "simple request": no preflight) and
 *    never custom headers or cookies;
 *  - cookieless by default; with consent (`data-persist`, `ingest.consent(true)`,
 *    or the `ingest_vid` cookie a consent left) it keeps a random visitor id in
 *    that first-party cookie and sends it as `vid`; never under Global Privacy
 *    Control;
 *  - the first event goes with fetch, whose answer (readable thanks to CORS)
 *    carries the visitor id the service stored; later events use
 *    navigator.sendBeacon, which survives page unloads but cannot read answers.
 */
import { clickEvent } from "./clicks.js";

type Props = Record<string, unknown>;
type Resolve = (value?: unknown) => void;
/** What the queue stub of docs/tracker.md pushes: the call's arguments and its promise's resolve. */
type Queued = [ArrayLike<unknown>, Resolve];

const w = window as unknown as Record<string, unknown> & Window;
const d = document;
const loc = location;
const nav = navigator;
const script = d.currentScript as HTMLScriptElement | null;
const has = (name: string) => !!script && script.hasAttribute(`data-${name}`);
const attr = (name: string) => script?.getAttribute(`data-${name}`) || "";
const site = attr("site");
const endpoint = attr("api") || `${script ? new URL(script.src).origin : ""}/api/v1/collect`;
const hashRouting = has("hash");

let visitor: string | undefined;
/** The persistent visitor id while persisting (the `ingest_vid` cookie's). */
let vid: string | undefined;
/** Whether an event of this page went without `vid` (consent then carries the visit over). */
let cookieless = false;
/** The fetch that will tell the visitor id, while it runs. */
let inFlight: Promise<string | undefined> | undefined;
let sent = false;
let warned = false;
let lastPath: string | undefined;
const waiting: Resolve[] = [];

/** Why events from this page are not sent, or "" when they are. */
function exclusion(): string {
  if (!site) return "the script tag has no data-site";
  if (
    !has("local") &&
    (/^(localhost|127(\.\d+){3}|\[::1\])$/.test(loc.hostname) || loc.protocol === "file:")
  ) {
    return "localhost (add data-local to send)";
  }
  if (nav.webdriver || w.Cypress || w._phantom || w.callPhantom || w.__nightmare) {
    return "automated browser";
  }
  try {
    if (localStorage.getItem("ingest_ignore") === "true") return "localStorage ingest_ignore";
  } catch {
    // Storage blocked: no opt-out can have been set.
  }
  return "";
}

/** POSTs with fetch and resolves with the stored visitor id (undefined on any failure). */
function post(body: string): Promise<string | undefined> {
  return fetch(endpoint, { method: "POST", body, keepalive: true, credentials: "omit" })
    .then((res) => (res.status === 200 ? res.json() : undefined))
    .then(
      (json) => json?.data?.visitor_id || undefined,
      () => undefined,
    );
}

function send(name: string, extra?: { p?: Props; uid?: string }): void {
  const why = exclusion();
  if (why) {
    if (!warned) console.warn(`ingest: not sending events: ${why}`);
    warned = true;
    return;
  }
  const body = JSON.stringify(
    Object.assign(
      {
        s: site,
        e: name,
        u: hashRouting ? loc.href : loc.href.split("#")[0],
        vid,
        r: d.referrer || undefined,
        t: d.title || undefined,
        w: w.innerWidth,
        l: nav.language,
      },
      extra,
    ),
  );
  sent = true;
  cookieless = cookieless || !vid;
  if (vid || visitor || inFlight) {
    // sendBeacon returns false when it cannot queue the body: fall back to fetch.
    if (!nav.sendBeacon?.(endpoint, body)) post(body);
    return;
  }
  const request = post(body).then((id) => {
    // Only a cookieless event's answer is the daily id (a vid's is the vid).
    visitor = visitor || (vid ? undefined : id);
    inFlight = undefined;
    for (const resolve of waiting.splice(0)) resolve(visitor);
    return visitor;
  });
  inFlight = request;
}

function pageview(): void {
  const path = loc.pathname + (hashRouting ? loc.hash : "");
  if (path === lastPath) return;
  lastPath = path;
  send("pageview");
}

/** Writes the `ingest_vid` cookie for `age` seconds (0 deletes it). */
function cookie(value: string, age: number): void {
  const domain = attr("cookie-domain");
  // biome-ignore lint/suspicious/noDocumentCookie: the Cookie Store API is missing from Firefox and Safari before 18.4, and the value is our own [0-9a-f] id.
  d.cookie = `ingest_vid=${value};Path=/;Max-Age=${age};SameSite=Lax${domain ? `;Domain=${domain}` : ""}${loc.protocol === "https:" ? ";Secure" : ""}`;
}

/**
 * Consent on: the cookie's id, or a new one (17 random bytes, 34 hex
 * characters: never the 32 of a daily id), renewed for 400 days; a page that
 * already sent cookieless events sends `Consent` with the id, which joins
 * them to it. Off, under Global Privacy Control, or on an excluded page (the
 * opt-out, localhost, automation): the cookie is deleted.
 */
function consent(on: unknown): void {
  if (on && !(nav as { globalPrivacyControl?: boolean }).globalPrivacyControl && !exclusion()) {
    vid =
      (/(?:^|; )ingest_vid=([\w-]{16,64})(;|$)/.exec(d.cookie) || [])[1] ||
      Array.from(crypto.getRandomValues(new Uint8Array(17)), (b) =>
        (b | 256).toString(16).slice(1),
      ).join("");
    cookie(vid, 34560000);
    if (cookieless) send("Consent");
  } else {
    vid = undefined;
    cookie("", 0);
  }
}

/** Runs `fn`, swallowing anything it throws: the page must never see our errors. */
function guard<A extends unknown[], R>(fn: (...args: A) => R) {
  return (...args: A): R | undefined => {
    try {
      return fn(...args);
    } catch {
      return undefined;
    }
  };
}

const api = {
  /** A custom event with optional properties. */
  track: guard((name: string, props?: Props) => send(String(name), props ? { p: props } : {})),
  /** Links this visitor to the site's own user id. */
  identify: guard((userId: string) => send("$identify", { uid: String(userId) })),
  /** The persistent id while persisting, else the daily id the service stores (undefined when none). */
  visitorId: guard(
    (): Promise<string | undefined> =>
      vid || visitor || exclusion() || (sent && !inFlight)
        ? Promise.resolve(exclusion() ? undefined : vid || visitor)
        : inFlight || new Promise((resolve) => waiting.push(resolve as Resolve)),
  ),
  /** Consent to the persistent visitor id (true) or its withdrawal (false). */
  consent: guard(consent),
};

/** `ingest("track", "Signup", {plan: "pro"})`: the same as `ingest.track("Signup", …)`. */
const ingest = Object.assign(
  guard((method: string, ...args: unknown[]): unknown => {
    const fn = (api as Record<string, unknown>)[method];
    return typeof fn === "function" ? fn(...args) : undefined;
  }),
  api,
);

guard(() => {
  const queued = (w.ingest as { q?: Queued[] } | undefined)?.q || [];
  w.ingest = ingest;
  // data-persist, or a consent given on an earlier page (its cookie): persistent from the first event.
  if (has("persist") || /(^|; )ingest_vid=/.test(d.cookie)) api.consent(1);

  const patch = (method: "pushState" | "replaceState") => {
    const original = history[method];
    history[method] = function (this: History, ...args: Parameters<History["pushState"]>) {
      const result = original.apply(this, args);
      guard(pageview)();
      return result;
    };
  };
  patch("pushState");
  patch("replaceState");
  addEventListener("popstate", guard(pageview));
  if (hashRouting) addEventListener("hashchange", guard(pageview));

  const onClick = guard((event: MouseEvent) => {
    const found = clickEvent(event, loc.host, {
      outbound: has("outbound"),
      downloads: has("downloads") ? attr("downloads") : undefined,
    });
    if (found) api.track(found[0], found[1]);
  });
  d.addEventListener("click", onClick, true);
  d.addEventListener("auxclick", onClick, true);

  // A prerendered page counts once the visitor actually sees it.
  const start = () => {
    const doc = d as Document & { prerendering?: boolean };
    if (doc.prerendering || (doc.visibilityState as string) === "prerender") {
      d.addEventListener(doc.prerendering ? "prerenderingchange" : "visibilitychange", start, {
        once: true,
      });
      return;
    }
    pageview();
  };
  guard(start)();

  // The documented stub queues [arguments, resolve]; a bare `arguments` (other stubs) works too.
  for (const entry of queued) {
    const [args, resolve] = typeof entry[1] === "function" ? entry : [entry as ArrayLike<unknown>];
    const result = ingest(...(Array.from(args) as [string]));
    if (resolve) resolve(result);
  }
})();
