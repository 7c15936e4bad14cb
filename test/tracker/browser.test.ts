import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ReportsService, type StoredEvent } from "../../gen/ingest/v1/reports_pb.js";
import { freePort } from "../helpers/child-server.js";
import { DESKTOP_UA, launchChromium } from "../helpers/chromium.js";
import { listEvents } from "../helpers/events.js";
import { createTenant, createTestClock, postJson, type Tenant } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

/** The queue stub of docs/tracker.md, verbatim. */
const STUB =
  'window.ingest=window.ingest||((...a)=>new Promise((r)=>{ingest.q=ingest.q||[];ingest.q.push([a,r])}));for(const m of["track","identify","visitorId"])ingest[m]=ingest[m]||((...a)=>ingest(m,...a));';

type Ingest = {
  track(name: string, props?: Record<string, unknown>): void;
  identify(userId: string): void;
  visitorId(): Promise<string | undefined>;
  (method: string, ...args: unknown[]): unknown;
};
declare const ingest: Ingest;
// Browser globals used inside page.evaluate: the test program is compiled without the DOM lib.
declare const window: Record<string, unknown>;
declare const document: {
  cookie: string;
  getElementById(id: string): {
    addEventListener(type: string, fn: (e: { preventDefault(): void }) => void): void;
  } | null;
};
declare const history: {
  pushState(state: unknown, title: string, url: string): void;
  replaceState(state: unknown, title: string, url: string): void;
};
declare const localStorage: { setItem(k: string, v: string): void; removeItem(k: string): void };
declare const location: { href: string; hash: string };
declare const navigator: object;

let browser: Browser;
let context: BrowserContext;
let launchError: unknown;
/** Pages served by interception, by full URL without query. */
const pages = new Map<string, string>();
/** Bodies the data-api "proxy" forwarded. */
const proxied: string[] = [];
let open: Page[] = [];
let pageErrors: string[] = [];
const clock = createTestClock(Date.UTC(2026, 2, 14, 12, 0, 0));

/** A new tab, closed after the test; throws why when Chromium could not start. */
async function newPage(): Promise<Page> {
  if (launchError !== undefined) {
    // Names the binary tried and how it was found (test/helpers/chromium.ts).
    throw launchError;
  }
  const page = await context.newPage();
  open.push(page);
  return page;
}

const ctx = useTestServer({ clock, tenant: false });

beforeAll(async () => {
  // A missing browser fails every test with this reason (never a skip).
  try {
    browser = await launchChromium();
  } catch (err) {
    launchError = err;
    return;
  }
  context = await browser.newContext({
    userAgent: DESKTOP_UA,
    viewport: { width: 1280, height: 800 },
    locale: "en-GB",
  });
  await context.route(/^https?:\/\/(www\.)?(example\.com|other\.test|localhost)\//, (route) => {
    const url = route.request().url().split("?")[0] as string;
    if (url.endsWith("/stats/api/event")) {
      // A proxy under the site's own domain, as docs/tracker.md sets up with nginx or Caddy.
      proxied.push(route.request().postData() ?? "");
      return route
        .fetch({ url: `${ctx.url}/api/v1/collect` })
        .then((response) => route.fulfill({ response }));
    }
    const html = pages.get(url);
    return route.fulfill(
      html === undefined
        ? { status: 404, body: "not found" }
        : { status: 200, contentType: "text/html; charset=utf-8", body: html },
    );
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

afterEach(async () => {
  for (const p of open) await p.close();
  open = [];
  expect(pageErrors).toEqual([]);
  pageErrors = [];
});

/** A page with the snippet of docs/tracker.md; `attrs` are extra attributes of the script tag. */
function servePage(
  url: string,
  site: Tenant | string,
  options: { attrs?: string; head?: string; body?: string; title?: string } = {},
): string {
  const siteId = typeof site === "string" ? site : site.siteId;
  pages.set(
    url.split(/[?#]/)[0] as string,
    `<!doctype html><html><head><title>${options.title ?? "Test page"}</title>${options.head ?? ""}` +
      `<script defer src="${ctx.url}/js/script.js" data-site="${siteId}" ${options.attrs ?? ""}></script>` +
      `</head><body>${options.body ?? ""}</body></html>`,
  );
  return url;
}

/** What the page sent to the collect endpoint: method, resource type, headers. */
interface Sent {
  method: string;
  type: string;
  headers: Promise<Record<string, string>>;
}
const sentBy = new WeakMap<Page, Sent[]>();

async function visit(url: string, referer?: string): Promise<Page> {
  const page = await newPage();
  page.on("pageerror", (err) => pageErrors.push(err.message));
  const sent: Sent[] = [];
  sentBy.set(page, sent);
  page.on("request", (r) => {
    if (!r.url().startsWith(`${ctx.url}/api/v1/collect`)) return;
    sent.push({ method: r.method(), type: r.resourceType(), headers: r.allHeaders() });
  });
  await page.goto(url, referer ? { referer } : {});
  await page.waitForFunction(() => typeof window.ingest === "function");
  return page;
}

/** The site's stored events once there are `n` (the script sends asynchronously). */
async function eventsOf(siteId: string, n: number): Promise<StoredEvent[]> {
  let events: StoredEvent[] = [];
  for (let i = 0; i < 100; i++) {
    events = await listEvents(ctx.url, siteId);
    if (events.length >= n) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(events).toHaveLength(n);
  return events;
}

const reports = () => ctx.client(ReportsService);

async function pay(tenant: Tenant, paymentId: string, customer: Record<string, string>) {
  const res = await postJson(
    `${ctx.url}/api/v1/payments`,
    {
      payment_id: paymentId,
      customer,
      amount: 49,
      currency: "EUR",
      kind: "charge",
      paid_at: new Date(clock.now()).toISOString(),
    },
    { key: tenant.key },
  );
  expect(res.status).toBe(200);
  const { payment } = await reports().getPayment(
    { siteId: tenant.siteId, paymentId },
    { headers: ctx.adminHeaders },
  );
  return payment;
}

describe("the tracking script in Chromium", () => {
  it("sends a pageview on load with url, title, width, language and referrer; no cookies", async () => {
    const tenant = await createTenant(ctx.server);
    const url = servePage("https://example.com/landing?utm_source=newsletter", tenant, {
      title: "Landing",
    });
    const page = await visit(url, "https://news.example.org/story");
    const [ev] = await eventsOf(tenant.siteId, 1);
    expect(ev).toMatchObject({
      name: "pageview",
      url: "https://example.com/landing?utm_source=newsletter",
      title: "Landing",
      width: 1280,
      language: "en-GB",
      referrer: "https://news.example.org/story",
      referrerHost: "news.example.org",
      utmSource: "newsletter",
      browser: "Chrome",
      os: "Linux",
      device: "desktop",
    });
    expect(await page.evaluate(() => ingest.visitorId())).toBe(ev?.visitorId);
    expect(await page.evaluate(() => document.cookie)).toBe("");
    expect(await context.cookies()).toEqual([]);

    // The first event by fetch (its answer has the id), the next by sendBeacon; text/plain, no preflight.
    await page.evaluate(() => ingest.track("Second"));
    await eventsOf(tenant.siteId, 2);
    const sent = sentBy.get(page) ?? [];
    expect(sent.map((r) => [r.method, r.type])).toEqual([
      ["POST", "fetch"],
      ["POST", "ping"],
    ]);
    for (const r of sent) {
      const headers = await r.headers;
      expect(headers["content-type"]).toBe("text/plain;charset=UTF-8");
      expect(headers.origin).toBe("https://example.com");
      expect(headers.cookie).toBeUndefined();
      expect(headers.authorization).toBeUndefined();
    }
  });

  it("keeps the hash and counts hash changes with data-hash", async () => {
    const tenant = await createTenant(ctx.server);
    const page = await visit(
      servePage("https://example.com/app#/inbox", tenant, { attrs: "data-hash" }),
    );
    await eventsOf(tenant.siteId, 1);
    await page.evaluate(() => {
      location.hash = "#/settings";
    });
    const events = await eventsOf(tenant.siteId, 2);
    expect(events.map((e) => e.url).sort()).toEqual([
      "https://example.com/app#/inbox",
      "https://example.com/app#/settings",
    ]);
  });

  it("counts single-page navigations (pushState, replaceState, popstate), not the same path twice in a row", async () => {
    const tenant = await createTenant(ctx.server);
    const page = await visit(servePage("https://example.com/a", tenant));
    await eventsOf(tenant.siteId, 1);
    await page.evaluate(() => {
      history.pushState({}, "", "/b");
      history.pushState({}, "", "/b");
      history.replaceState({}, "", "/b?tab=2");
      history.pushState({}, "", "/c");
    });
    await eventsOf(tenant.siteId, 3);
    await page.goBack();
    const events = await eventsOf(tenant.siteId, 4);
    expect(events.map((e) => new URL(e.url).pathname).sort()).toEqual(["/a", "/b", "/b", "/c"]);
    expect(new Set(events.map((e) => e.visitorId)).size).toBe(1);
  });

  it("tracks custom events with properties and identify calls, and never throws on bad input", async () => {
    const tenant = await createTenant(ctx.server);
    const page = await visit(servePage("https://example.com/app", tenant));
    await eventsOf(tenant.siteId, 1);
    await page.evaluate(() => {
      ingest.track("Signup", { plan: "pro", seats: 3 });
      ingest.identify("user_42");
      ingest("track", "Upgrade");
      // Refused by the service (400), silently: the page must not notice.
      ingest.track("not a valid name!");
      (ingest as unknown as (m: string) => void)("no-such-method");
    });
    const events = await eventsOf(tenant.siteId, 4);
    const byName = new Map(events.map((e) => [e.name, e]));
    expect(byName.get("Signup")?.props).toEqual({ plan: "pro", seats: 3 });
    expect(byName.get("$identify")?.userId).toBe("user_42");
    expect(byName.has("Upgrade")).toBe(true);
  });

  it("attributes a payment with customer.visitor_id to the browser's landing (Email)", async () => {
    const tenant = await createTenant(ctx.server);
    const page = await visit(
      servePage("https://example.com/?utm_source=newsletter&utm_medium=email", tenant),
    );
    const visitorId = await page.evaluate(() => ingest.visitorId());
    expect(visitorId).toMatch(/^[0-9a-f]{32}$/);
    const payment = await pay(tenant, "pay_browser_1", {
      id: "cus_b1",
      visitor_id: visitorId as string,
    });
    expect(payment?.channel).toBe("Email");
    expect(payment?.attribution).toMatchObject({
      channel: "Email",
      source: "newsletter",
      medium: "email",
      landingPage: "https://example.com/",
      visitorId,
      link: "visitor_id",
    });
  });

  it("attributes a payment with customer.user_id after ingest.identify", async () => {
    const tenant = await createTenant(ctx.server);
    const page = await visit(
      servePage("https://www.example.com/offer?utm_source=newsletter&utm_medium=email", tenant),
    );
    await page.evaluate(() => ingest.identify("user_77"));
    await eventsOf(tenant.siteId, 2);
    const payment = await pay(tenant, "pay_browser_2", { id: "cus_b2", user_id: "user_77" });
    expect(payment?.channel).toBe("Email");
    expect(payment?.attribution).toMatchObject({
      landingPage: "https://www.example.com/offer",
      link: "user_id",
    });
  });

  it("records nothing from a page on another hostname", async () => {
    const tenant = await createTenant(ctx.server);
    const page = await visit(servePage("https://other.test/copied-snippet", tenant));
    await page.evaluate(() => ingest.track("Signup"));
    expect(await page.evaluate(() => ingest.visitorId())).toBeUndefined();
    await new Promise((r) => setTimeout(r, 300));
    expect(await listEvents(ctx.url, tenant.siteId)).toEqual([]);
  });

  it("sends to data-api (a proxy under the site's domain) instead of the script's origin", async () => {
    const tenant = await createTenant(ctx.server);
    const direct: string[] = [];
    const page = await newPage();
    page.on("request", (r) => {
      if (r.url().startsWith(`${ctx.url}/api/v1/collect`)) direct.push(r.url());
    });
    await page.goto(
      servePage("https://example.com/proxied", tenant, { attrs: 'data-api="/stats/api/event"' }),
    );
    const visitorId = await page.evaluate(() => ingest.visitorId());
    const [ev] = await eventsOf(tenant.siteId, 1);
    expect(ev?.url).toBe("https://example.com/proxied");
    expect(visitorId).toBe(ev?.visitorId);
    expect(proxied.map((b) => JSON.parse(b).s)).toContain(tenant.siteId);
    expect(direct).toEqual([]);
  });

  it("replays calls queued by the stub before the script loaded", async () => {
    const tenant = await createTenant(ctx.server);
    const page = await visit(
      servePage("https://example.com/queued", tenant, {
        head:
          `<script>${STUB}</script>` +
          `<script>ingest.track("Early",{n:1});ingest("identify","early_user");window.early=ingest.visitorId();</script>`,
      }),
    );
    const early = await page.evaluate(() => window.early as Promise<string>);
    const events = await eventsOf(tenant.siteId, 3);
    expect(events.map((e) => e.name).sort()).toEqual(["$identify", "Early", "pageview"]);
    expect(events.find((e) => e.name === "Early")?.props).toEqual({ n: 1 });
    expect(early).toBe(events[0]?.visitorId);
  });

  it("counts outbound links, downloads and tagged elements when asked", async () => {
    const tenant = await createTenant(ctx.server);
    pages.set("https://other.test/away", "<!doctype html><title>away</title>");
    const page = await visit(
      servePage("https://example.com/links", tenant, {
        attrs: "data-outbound data-downloads",
        body:
          '<a id="dl" href="/files/report.PDF?v=2" download>report</a>' +
          '<button id="cta" data-ingest-event="CTA Click" data-ingest-prop-place="hero">Buy</button>' +
          '<a id="in" href="/internal">internal</a>' +
          '<a id="out" href="https://other.test/away">away</a>',
      }),
    );
    await page.evaluate(() => ingest.visitorId());
    await page.click("#cta");
    await page.click("#dl");
    await page.evaluate(() =>
      document.getElementById("in")?.addEventListener("click", (e) => e.preventDefault()),
    );
    await page.click("#in");
    await page.click("#out");
    await page.waitForURL("https://other.test/away");
    const events = await eventsOf(tenant.siteId, 4);
    const byName = new Map(events.map((e) => [e.name, e.props]));
    expect(byName.get("CTA Click")).toEqual({ place: "hero" });
    expect(byName.get("File Download")).toEqual({ url: "https://example.com/files/report.PDF" });
    expect(byName.get("Outbound Link Click")).toEqual({ url: "https://other.test/away" });
  });

  it("sends nothing from localhost or after the localStorage opt-out, saying why once", async () => {
    const tenant = await createTenant(ctx.server);
    const warnings: string[] = [];
    const page = await newPage();
    page.on("console", (m) => {
      if (m.type() === "warning") warnings.push(m.text());
    });
    await page.goto(servePage("http://localhost/dev", tenant));
    await page.evaluate(() => ingest.track("Dev"));
    expect(await page.evaluate(() => ingest.visitorId())).toBeUndefined();
    expect(warnings).toEqual(["ingest: not sending events: localhost (add data-local to send)"]);

    const optOut = servePage("https://example.com/owner", tenant);
    await page.goto(optOut);
    await page.evaluate(() => localStorage.setItem("ingest_ignore", "true"));
    await page.reload();
    await page.evaluate(() => ingest.track("Owner"));
    expect(warnings.at(-1)).toBe("ingest: not sending events: localStorage ingest_ignore");
    await page.evaluate(() => localStorage.removeItem("ingest_ignore"));

    // An automated browser (navigator.webdriver) is excluded too.
    await page.addInitScript(() =>
      Object.defineProperty(Object.getPrototypeOf(navigator), "webdriver", { get: () => true }),
    );
    await page.goto(servePage("https://example.com/robot", tenant));
    await page.evaluate(() => ingest.track("Robot"));
    expect(warnings.at(-1)).toBe("ingest: not sending events: automated browser");
    // Only the opt-out page's first load (before the opt-out) was recorded.
    await new Promise((r) => setTimeout(r, 300));
    expect((await listEvents(ctx.url, tenant.siteId)).map((e) => e.url)).toEqual([
      "https://example.com/owner",
    ]);
  });

  it("never throws into the page when the endpoint is down", async () => {
    const tenant = await createTenant(ctx.server);
    const closed = await freePort();
    const page = await visit(
      servePage("https://example.com/down", tenant, {
        attrs: `data-api="http://127.0.0.1:${closed}/api/v1/collect"`,
      }),
    );
    const result = await page.evaluate(async () => {
      ingest.track("Signup", { a: 1 });
      ingest.identify("u1");
      history.pushState({}, "", "/down/2");
      return [await ingest.visitorId(), typeof ingest.track("again")];
    });
    expect(result).toEqual([undefined, "undefined"]);
  });

  it("lets a page read the collect endpoint's answers and errors (CORS), with and without preflight", async () => {
    const tenant = await createTenant(ctx.server);
    const page = await visit(servePage("https://example.com/cors", tenant));
    const endpoint = `${ctx.url}/api/v1/collect`;
    const answers = await page.evaluate(
      async ([endpoint, siteId]) => {
        const send = async (body: unknown, contentType: string) => {
          const res = await fetch(endpoint as string, {
            method: "POST",
            headers: { "content-type": contentType },
            body: JSON.stringify(body),
          });
          return [res.status, await res.json()];
        };
        return [
          await send({ s: siteId, e: "Json", u: location.href }, "application/json"),
          await send({ s: "site_nope", e: "pageview", u: location.href }, "application/json"),
          await send({ s: siteId, e: "pageview", u: location.href, ip: "1.2.3.4" }, "text/plain"),
        ];
      },
      [endpoint, tenant.siteId],
    );
    expect(answers[0]).toEqual([
      200,
      { ok: true, data: { visitor_id: expect.stringMatching(/^[0-9a-f]{32}$/) } },
    ]);
    expect(answers[1]).toEqual([
      404,
      { ok: false, error: { code: "not_found", message: "unknown site" } },
    ]);
    expect(answers[2]?.[0]).toBe(400);
  });
});
