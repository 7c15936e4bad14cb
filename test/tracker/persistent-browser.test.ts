/**
 * Persistent visitor ids (issue 22) in real headless Chromium with a
 * persistent profile (playwright-core's launchPersistentContext on a user
 * data directory, closed and opened again between "days"), against the real
 * service whose injected clock the tests move across days. Pages are served
 * on the site's hostnames (www.shop.test, app.shop.test) by request
 * interception; the site's "server" (its /checkout route) reads the
 * ingest_vid cookie from the request and records the payment.
 *
 * There is no skip: without a Chromium (test/helpers/chromium.ts) these tests fail.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ReportsService, type StoredEvent } from "../../gen/ingest/v1/reports_pb.js";
import { launchPersistentChromium } from "../helpers/chromium.js";
import { listEvents } from "../helpers/events.js";
import {
  ADMIN_TOKEN,
  createTenant,
  createTestClock,
  postJson,
  startTestServer,
  type Tenant,
  type TestServer,
} from "../helpers/test-server.js";

const DAY = 86_400_000;
const DAY0 = Date.UTC(2026, 4, 4, 9, 0, 0);
/** The cookie's lifetime: 400 days, in seconds. */
const LIFETIME = 400 * 86_400;
/** The queue stub of docs/tracker.md, verbatim. */
const STUB =
  'window.ingest=window.ingest||((...a)=>new Promise((r)=>{ingest.q=ingest.q||[];ingest.q.push([a,r])}));for(const m of["track","identify","visitorId","consent"])ingest[m]=ingest[m]||((...a)=>ingest(m,...a));';

type Ingest = {
  track(name: string, props?: Record<string, unknown>): void;
  identify(userId: string): void;
  visitorId(): Promise<string | undefined>;
  consent(on: boolean): void;
};
declare const ingest: Ingest;
declare const window: Record<string, unknown>;
declare const document: { cookie: string };
declare const navigator: object;
declare const localStorage: { setItem(k: string, v: string): void };
declare function fetch(url: string, init: { method: string; body: string }): Promise<unknown>;

const clock = createTestClock(DAY0);
let server: TestServer;
const dirs: string[] = [];
let contexts: BrowserContext[] = [];
let pageErrors: string[] = [];
/** Pages served by interception, by full URL without query. */
const pages = new Map<string, string>();
/** Payments the site's checkout recorded: payment id → the cookie value it read. */
const checkouts = new Map<string, string | undefined>();
let shop: Tenant;

beforeAll(async () => {
  server = await startTestServer({ clock });
}, 60_000);

afterAll(async () => {
  await server?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

afterEach(async () => {
  for (const c of contexts) await c.close();
  contexts = [];
  expect(pageErrors).toEqual([]);
  pageErrors = [];
});

const reports = () =>
  createClient(ReportsService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
const adminHeaders = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };

async function newShop(): Promise<Tenant> {
  shop = await createTenant(server, { hostnames: ["www.shop.test", "app.shop.test"] });
  return shop;
}

/** A fresh profile directory, removed after the file. */
function profile(): string {
  const dir = mkdtempSync(join(tmpdir(), "chromium-profile-"));
  dirs.push(dir);
  return dir;
}

/** Chromium on `dir`, serving the shop's pages and its checkout. */
async function openBrowser(dir: string, options: { gpc?: boolean } = {}): Promise<BrowserContext> {
  const context = await launchPersistentChromium(dir);
  contexts.push(context);
  if (options.gpc) {
    // Chromium does not send Global Privacy Control itself; the signal as browsers that do expose it.
    await context.addInitScript(() => {
      Object.defineProperty(Object.getPrototypeOf(navigator), "globalPrivacyControl", {
        get: () => true,
      });
    });
  }
  await context.route(/^https:\/\/(www|app)\.shop\.test\//, async (route) => {
    const request = route.request();
    const url = request.url().split("?")[0] as string;
    if (url.endsWith("/checkout")) {
      // The site's server: reads the cookie of the request and records the payment with it.
      const cookie = (await request.allHeaders()).cookie ?? "";
      const vid = /(?:^|; )ingest_vid=([\w-]+)/.exec(cookie)?.[1];
      const order = JSON.parse(request.postData() ?? "{}") as { paymentId: string };
      checkouts.set(order.paymentId, vid);
      const res = await postJson(
        `${server.url}/api/v1/payments`,
        {
          payment_id: order.paymentId,
          amount: 49,
          currency: "EUR",
          kind: "charge",
          paid_at: new Date(clock.now()).toISOString(),
          customer: { id: `cus_${order.paymentId}`, ...(vid ? { visitor_id: vid } : {}) },
        },
        { key: shop.key },
      );
      return route.fulfill({ status: res.status, contentType: "application/json", body: res.text });
    }
    const html = pages.get(url);
    return route.fulfill(
      html === undefined
        ? { status: 404, body: "not found" }
        : { status: 200, contentType: "text/html; charset=utf-8", body: html },
    );
  });
  return context;
}

/** A shop page with the snippet; `attrs` are extra attributes of the script tag. */
function servePage(url: string, options: { attrs?: string; head?: string } = {}): string {
  pages.set(
    url.split(/[?#]/)[0] as string,
    `<!doctype html><html><head><title>Shop</title>${options.head ?? ""}` +
      `<script defer src="${server.url}/js/script.js" data-site="${shop.siteId}" ${options.attrs ?? ""}></script>` +
      "</head><body></body></html>",
  );
  return url;
}

async function visit(context: BrowserContext, url: string, referer?: string): Promise<Page> {
  const page = await context.newPage();
  page.on("pageerror", (err) => pageErrors.push(err.message));
  await page.goto(url, referer ? { referer } : {});
  await page.waitForFunction(() => typeof window.ingest === "function");
  return page;
}

/** The shop's stored events once there are `n`, oldest first. */
async function eventsOf(n: number): Promise<StoredEvent[]> {
  let events: StoredEvent[] = [];
  for (let i = 0; i < 100; i++) {
    events = await listEvents(server.url, shop.siteId);
    if (events.length >= n) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(events).toHaveLength(n);
  return [...events].reverse();
}

async function vidCookie(context: BrowserContext, url = "https://www.shop.test/") {
  return (await context.cookies(url)).find((c) => c.name === "ingest_vid");
}

async function attributionOf(paymentId: string) {
  const { payment } = await reports().getPayment({ siteId: shop.siteId, paymentId }, adminHeaders);
  const a = payment?.attribution;
  return {
    channel: payment?.channel,
    landingPage: a?.landingPage,
    visitorId: a?.visitorId,
    link: a?.link,
    touchedAt: a?.touchedAt,
  };
}

/** Checkout from the page: the site's own endpoint, which reads the cookie server-side. */
async function checkout(page: Page, paymentId: string): Promise<void> {
  await page.evaluate(async (id) => {
    await fetch("/checkout", { method: "POST", body: JSON.stringify({ paymentId: id }) });
  }, paymentId);
}

const NEWSLETTER = "https://www.shop.test/?utm_source=newsletter&utm_medium=email";
const VID = /^[0-9a-f]{34}$/;

describe("persistent visitor id in Chromium, across days", () => {
  it("credits the day-0 newsletter landing to a payment by user id after a direct return on day 3 and identify on day 10", async () => {
    await newShop();
    clock.set(DAY0);
    const dir = profile();
    const attrs = "data-persist";
    servePage(NEWSLETTER, { attrs });
    servePage("https://www.shop.test/pricing", { attrs });
    servePage("https://www.shop.test/app", { attrs });

    // Day 0: the newsletter landing. The cookie is issued, as the issue says.
    let browser = await openBrowser(dir);
    let page = await visit(browser, NEWSLETTER, "https://mail.example.net/");
    const cookie = await vidCookie(browser);
    expect(cookie).toMatchObject({
      name: "ingest_vid",
      value: expect.stringMatching(VID),
      domain: "www.shop.test",
      path: "/",
      secure: true,
      httpOnly: false,
      sameSite: "Lax",
    });
    const vid = cookie?.value as string;
    expect(Math.abs((cookie?.expires ?? 0) - (Date.now() / 1000 + LIFETIME))).toBeLessThan(300);
    expect(await page.evaluate(() => ingest.visitorId())).toBe(vid);
    const [landing] = await eventsOf(1);
    expect(landing).toMatchObject({
      name: "pageview",
      visitorId: `p:${vid}`,
      utmSource: "newsletter",
    });
    await browser.close();

    // Day 3: the browser restarted, a direct return. The cookie was cut short meanwhile: renewed to 400 days.
    clock.set(DAY0 + 3 * DAY);
    browser = await openBrowser(dir);
    await browser.addCookies([
      { ...(cookie as NonNullable<typeof cookie>), expires: Math.floor(Date.now() / 1000) + 3600 },
    ]);
    page = await visit(browser, "https://www.shop.test/pricing");
    const renewed = await vidCookie(browser);
    expect(renewed?.value).toBe(vid);
    expect(Math.abs((renewed?.expires ?? 0) - (Date.now() / 1000 + LIFETIME))).toBeLessThan(300);
    await eventsOf(2);
    await browser.close();

    // Day 10: sign-up, identify, pay by user id.
    clock.set(DAY0 + 10 * DAY);
    browser = await openBrowser(dir);
    page = await visit(browser, "https://www.shop.test/app");
    await page.evaluate(() => ingest.identify("user_day10"));
    const events = await eventsOf(4);
    expect(events.map((e) => [e.name, e.visitorId])).toEqual([
      ["pageview", `p:${vid}`],
      ["pageview", `p:${vid}`],
      ["pageview", `p:${vid}`],
      ["$identify", `p:${vid}`],
    ]);
    const res = await postJson(
      `${server.url}/api/v1/payments`,
      {
        payment_id: "pay_uid",
        amount: 49,
        currency: "EUR",
        kind: "charge",
        paid_at: new Date(clock.now()).toISOString(),
        customer: { id: "cus_uid", user_id: "user_day10" },
      },
      { key: shop.key },
    );
    expect(res.status).toBe(200);
    expect(await attributionOf("pay_uid")).toEqual({
      channel: "Email",
      landingPage: "https://www.shop.test/",
      visitorId: `p:${vid}`,
      link: "user_id",
      touchedAt: new Date(DAY0).toISOString(),
    });
  }, 60_000);

  it("credits it when the site's server pays with customer.visitor_id read from the ingest_vid cookie", async () => {
    await newShop();
    clock.set(DAY0);
    const dir = profile();
    servePage(NEWSLETTER, { attrs: "data-persist" });
    servePage("https://www.shop.test/cart", { attrs: "data-persist" });

    let browser = await openBrowser(dir);
    await visit(browser, NEWSLETTER);
    await eventsOf(1);
    await browser.close();

    clock.set(DAY0 + 6 * DAY);
    browser = await openBrowser(dir);
    const page = await visit(browser, "https://www.shop.test/cart");
    const vid = (await vidCookie(browser))?.value as string;
    await checkout(page, "pay_cookie");
    expect(checkouts.get("pay_cookie")).toBe(vid);
    expect(await attributionOf("pay_cookie")).toEqual({
      channel: "Email",
      landingPage: "https://www.shop.test/",
      visitorId: `p:${vid}`,
      link: "visitor_id",
      touchedAt: new Date(DAY0).toISOString(),
    });
  }, 60_000);

  it("carries a cookieless campaign landing over when the page calls ingest.consent(true)", async () => {
    await newShop();
    clock.set(DAY0);
    const dir = profile();
    const url = servePage(
      "https://www.shop.test/spring?utm_source=google&utm_medium=cpc&utm_campaign=spring",
    );
    servePage("https://www.shop.test/cart", { attrs: "data-persist" });

    let browser = await openBrowser(dir);
    let page = await visit(browser, url);
    const [landing] = await eventsOf(1);
    // Cookieless until consent: the daily id, no cookie.
    expect(landing?.visitorId).toMatch(/^[0-9a-f]{32}$/);
    expect(await vidCookie(browser)).toBeUndefined();
    expect(await page.evaluate(() => ingest.visitorId())).toBe(landing?.visitorId);

    await page.evaluate(() => ingest.consent(true));
    const vid = (await vidCookie(browser))?.value as string;
    expect(vid).toMatch(VID);
    expect(await page.evaluate(() => ingest.visitorId())).toBe(vid);
    const events = await eventsOf(2);
    expect(events[1]).toMatchObject({ name: "Consent", visitorId: `p:${vid}` });
    await browser.close();

    // Days later the checkout (cookie read server-side) is credited to the campaign landing.
    clock.set(DAY0 + 8 * DAY);
    browser = await openBrowser(dir);
    page = await visit(browser, "https://www.shop.test/cart");
    await checkout(page, "pay_consent");
    expect(checkouts.get("pay_consent")).toBe(vid);
    expect(await attributionOf("pay_consent")).toEqual({
      channel: "Paid Search",
      landingPage: "https://www.shop.test/spring",
      visitorId: landing?.visitorId,
      link: "visitor_id",
      touchedAt: new Date(DAY0).toISOString(),
    });
  }, 60_000);

  it("shares the id across subdomains with data-cookie-domain", async () => {
    await newShop();
    clock.set(DAY0);
    const dir = profile();
    const attrs = 'data-persist data-cookie-domain=".shop.test"';
    servePage(NEWSLETTER, { attrs });
    servePage("https://app.shop.test/billing", { attrs });

    let browser = await openBrowser(dir);
    await visit(browser, NEWSLETTER);
    const cookie = await vidCookie(browser);
    expect(cookie).toMatchObject({
      domain: ".shop.test",
      path: "/",
      secure: true,
      sameSite: "Lax",
    });
    await eventsOf(1);
    await browser.close();

    clock.set(DAY0 + 2 * DAY);
    browser = await openBrowser(dir);
    const page = await visit(browser, "https://app.shop.test/billing");
    expect(await page.evaluate(() => ingest.visitorId())).toBe(cookie?.value);
    const events = await eventsOf(2);
    expect(events.map((e) => [e.url, e.visitorId])).toEqual([
      [NEWSLETTER, `p:${cookie?.value}`],
      ["https://app.shop.test/billing", `p:${cookie?.value}`],
    ]);
    await checkout(page, "pay_app");
    expect(checkouts.get("pay_app")).toBe(cookie?.value);
    expect(await attributionOf("pay_app")).toMatchObject({
      channel: "Email",
      landingPage: "https://www.shop.test/",
      visitorId: `p:${cookie?.value}`,
    });
  }, 60_000);

  it("never gives a cookie to a browser that sends Global Privacy Control, whatever the page says", async () => {
    await newShop();
    clock.set(DAY0);
    const browser = await openBrowser(profile(), { gpc: true });
    const page = await visit(browser, servePage(NEWSLETTER, { attrs: "data-persist" }));
    const [ev] = await eventsOf(1);
    expect(ev?.visitorId).toMatch(/^[0-9a-f]{32}$/);
    await page.evaluate(() => ingest.consent(true));
    await page.evaluate(() => ingest.track("After consent"));
    const events = await eventsOf(2);
    expect(events[1]).toMatchObject({ name: "After consent", visitorId: ev?.visitorId });
    expect(await page.evaluate(() => ingest.visitorId())).toBe(ev?.visitorId);
    expect(await page.evaluate(() => document.cookie)).toBe("");
    expect(await browser.cookies()).toEqual([]);
  }, 60_000);

  it("deletes the cookie on ingest.consent(false) and goes back to daily ids", async () => {
    await newShop();
    clock.set(DAY0);
    const browser = await openBrowser(profile());
    const page = await visit(browser, servePage(NEWSLETTER, { attrs: "data-persist" }));
    const vid = (await vidCookie(browser))?.value as string;
    await eventsOf(1);
    await page.evaluate(() => ingest.consent(false));
    expect(await vidCookie(browser)).toBeUndefined();
    expect(await page.evaluate(() => document.cookie)).toBe("");
    const daily = await page.evaluate(() => {
      ingest.track("Withdrawn");
      return ingest.visitorId();
    });
    const events = await eventsOf(2);
    expect(events.map((e) => [e.name, e.visitorId])).toEqual([
      ["pageview", `p:${vid}`],
      ["Withdrawn", daily],
    ]);
    expect(daily).toMatch(/^[0-9a-f]{32}$/);
    // A later page of the same browser stays cookieless.
    const next = await visit(browser, servePage("https://www.shop.test/next"));
    expect(await next.evaluate(() => ingest.visitorId())).toBe(daily);
    expect(await browser.cookies()).toEqual([]);
  }, 60_000);

  it("sets no cookie for a visitor who opted out with localStorage ingest_ignore, and drops one set before", async () => {
    await newShop();
    clock.set(DAY0);
    const browser = await openBrowser(profile());
    const page = await visit(browser, servePage(NEWSLETTER, { attrs: "data-persist" }));
    expect(await vidCookie(browser)).toBeDefined();
    await page.evaluate(() => localStorage.setItem("ingest_ignore", "true"));
    const next = await visit(
      browser,
      servePage("https://www.shop.test/next", { attrs: "data-persist" }),
    );
    expect(await vidCookie(browser)).toBeUndefined();
    await next.evaluate(() => ingest.consent(true));
    expect(await vidCookie(browser)).toBeUndefined();
    expect(await next.evaluate(() => ingest.visitorId())).toBeUndefined();
    expect(await eventsOf(1)).toHaveLength(1);
  }, 60_000);

  it("replays a queued consent(true) and visitorId() from the stub", async () => {
    await newShop();
    clock.set(DAY0);
    const browser = await openBrowser(profile());
    const page = await visit(
      browser,
      servePage("https://www.shop.test/early", {
        head: `<script>${STUB}</script><script>ingest.consent(true);window.early=ingest.visitorId();</script>`,
      }),
    );
    const early = await page.evaluate(() => window.early as Promise<string | undefined>);
    const vid = (await vidCookie(browser))?.value;
    expect(early).toBe(vid);
    expect(vid).toMatch(VID);
    const events = await eventsOf(2);
    // The pageview goes by fetch, Consent by sendBeacon: either may be stored first.
    expect(events.map((e) => [e.name, e.visitorId.startsWith("p:")]).sort()).toEqual([
      ["Consent", true],
      ["pageview", false],
    ]);
  }, 60_000);
});
