/**
 * The dashboard in Chromium (test/helpers/chromium.ts, as the tracker's
 * tests): sign-in, the site and period in the URL, the channel table read
 * from the page and compared with RevenueByChannel and SiteOverview, a
 * customer's journey (CustomerJourney) opened with the keyboard, a wrong token, the empty
 * state, and 375 px in dark mode. Screenshots go to test-artifacts/dashboard/
 * (not committed). The page's clock is fixed at the server's test clock, so
 * "the last 7 days" are the same days for both at any date.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { launchChromium } from "../helpers/chromium.js";
import { DEMO, seedDashboardDemo } from "../helpers/dashboard-data.js";
import { ROOT } from "../helpers/rpc-clients.js";
import { ADMIN_TOKEN, createTenant, createTestClock, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

// Browser globals used inside page.evaluate: the test program is compiled without the DOM lib.
declare const sessionStorage: { getItem(key: string): string | null };
declare const document: { documentElement: { scrollWidth: number }; body: object };
declare function getComputedStyle(el: object): { backgroundColor: string };

const ARTIFACTS = join(ROOT, "test-artifacts", "dashboard");
const clock = createTestClock(TEST_NOW);
const ctx = useTestServer({ clock });

let browser: Browser | undefined;
let launchError: unknown;
let contexts: BrowserContext[] = [];
let pageErrors: string[] = [];
/** Requests that left the service's origin: there must be none. */
let foreign: string[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await seedDashboardDemo({ url: ctx.url, siteId: ctx.siteId, key: ctx.key, clock });
  try {
    browser = await launchChromium();
  } catch (err) {
    // A missing browser fails every test with this reason (never a skip).
    launchError = err;
  }
});
afterEach(async () => {
  for (const c of contexts) await c.close();
  contexts = [];
  const [errors, elsewhere] = [pageErrors, foreign];
  pageErrors = [];
  foreign = [];
  expect(errors).toEqual([]);
  expect(elsewhere).toEqual([]);
});
afterAll(async () => {
  await browser?.close();
});

/** A new tab of a new browser profile at `path`, its clock fixed at the server's. */
async function open(
  path: string,
  options: { width?: number; colorScheme?: "light" | "dark" } = {},
): Promise<Page> {
  // The launch error names the binary tried and how it was found (test/helpers/chromium.ts).
  if (!browser) throw launchError;
  const context = await browser.newContext({
    viewport: { width: options.width ?? 1280, height: 900 },
    colorScheme: options.colorScheme ?? "light",
    locale: "en-GB",
  });
  contexts.push(context);
  const page = await context.newPage();
  await page.clock.setFixedTime(clock.now());
  page.on("pageerror", (e) => pageErrors.push(e.message));
  // Console errors too (a Content-Security-Policy violation is one), except
  // Chromium's own line for an answer of status 401, which the wrong-token test expects.
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) {
      pageErrors.push(m.text());
    }
  });
  page.on("request", (r) => {
    if (!r.url().startsWith(ctx.url)) foreign.push(r.url());
  });
  await page.goto(`${ctx.url}${path}`);
  return page;
}

async function signIn(page: Page, token: string, site?: string) {
  await page.getByLabel("Token").fill(token);
  if (site !== undefined) await page.getByLabel("Site id").fill(site);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** The channel table's body as text cells, row by row. */
async function channelTable(page: Page): Promise<string[][]> {
  const rows = page.locator("#channel-table tbody tr");
  await rows.first().waitFor();
  return rows.evaluateAll((trs) =>
    trs.map((tr) => [...tr.children].map((c) => (c.textContent ?? "").trim())),
  );
}

/** Waits until the page shows the period starting with `text` (the view of the new URL has loaded). */
async function showsRange(page: Page, text: string) {
  await page.locator("p.range", { hasText: text }).waitFor();
}

const reports = () => ctx.client(ReportsService);
const DAY = 86_400_000;
/** The RPC range of "the last 7 days" at the test clock: [today − 6 days, tomorrow) in UTC. */
function last7Days() {
  const today = Math.floor(clock.now() / DAY) * DAY;
  const iso = (ms: number) => new Date(ms).toISOString().replace(".000Z", "Z");
  return { from: iso(today - 6 * DAY), to: iso(today + DAY) };
}

describe("the dashboard in Chromium", () => {
  it("signs in, keeps site and period in the URL, and shows RevenueByChannel's numbers", async () => {
    const page = await open("/dashboard?period=7d");
    await signIn(page, ADMIN_TOKEN, ctx.siteId);
    const table = await channelTable(page);
    expect(new URL(page.url()).search).toBe(`?site=${ctx.siteId}&period=7d`);
    expect(await page.evaluate(() => sessionStorage.getItem("ingest.dashboard.token"))).toBe(
      ADMIN_TOKEN,
    );
    await expect(page.getByText("All times are UTC.", { exact: false }).count()).resolves.toBe(1);

    // Side by side: the page's rows are the RPCs' rows for the same period.
    const range = last7Days();
    const headers = ctx.adminHeaders;
    const revenue = await reports().revenueByChannel({ siteId: ctx.siteId, ...range }, { headers });
    const overview = await reports().siteOverview({ siteId: ctx.siteId, ...range }, { headers });
    const expected = overview.channels.flatMap((c) =>
      c.revenue.length === 0
        ? [[c.channel, "–", "–", "–", "–", "–", "0", String(c.newVisitors)]]
        : c.revenue.map((r) => [
            c.channel,
            r.currency,
            r.gross?.decimal,
            r.refunds?.decimal,
            r.chargebacks?.decimal,
            r.net?.decimal,
            String(r.payingCustomers),
            String(c.newVisitors),
          ]),
    );
    expect(table.map((row) => row.slice(0, 8))).toEqual(expected);
    const fromRevenue = revenue.rows
      .map((r) =>
        [
          r.channel,
          r.currency,
          r.gross?.decimal,
          r.refunds?.decimal,
          r.chargebacks?.decimal,
          r.net?.decimal,
          String(r.payingCustomers),
        ].join("|"),
      )
      .sort();
    expect(
      table
        .filter((row) => row[1] !== "–")
        .map((row) => row.slice(0, 7).join("|"))
        .sort(),
    ).toEqual(fromRevenue);
    // And the values themselves, so a wrong RPC cannot pass by agreeing with itself.
    expect(table).toEqual([
      ["Paid Social", "–", "–", "–", "–", "–", "0", "2", "0.0%"],
      ["Direct", "JPY", "1500", "0", "0", "1500", "1", "1", "100.0%"],
      ["Email", "USD", "99.00", "0.00", "0.00", "99.00", "1", "1", "100.0%"],
      ["Organic Search", "EUR", "20.00", "0.00", "0.00", "20.00", "1", "1", "100.0%"],
      ["Organic Search", "USD", "49.00", "10.00", "0.00", "39.00", "1", "1", "100.0%"],
      ["unattributed", "USD", "5.00", "0.00", "0.00", "5.00", "1", "0", "–"],
    ]);
    await expect(page.locator("#mrr-list").textContent()).resolves.toBe(
      "8.25 USD from 1 active subscription",
    );
    await page.screenshot({ path: join(ARTIFACTS, "overview-7d.png"), fullPage: true });

    // Another period from the picker: the URL follows, and a reload keeps it.
    await page.getByLabel("Period (UTC days)").selectOption("today");
    await page.waitForURL(`**/dashboard?site=${ctx.siteId}&period=today`);
    await showsRange(page, "2026-03-11 00:00 UTC to 2026-03-12 00:00 UTC");
    const today = await channelTable(page);
    expect(today.map((r) => `${r[0]} ${r[1]}`)).toEqual([
      "Paid Social –",
      "Direct JPY",
      "unattributed USD",
    ]);
    await page.reload();
    await showsRange(page, "2026-03-11 00:00 UTC to 2026-03-12 00:00 UTC");
    expect((await channelTable(page)).map((r) => `${r[0]} ${r[1]}`)).toEqual(
      today.map((r) => `${r[0]} ${r[1]}`),
    );
    // A custom range from the URL (both days inclusive): only 9 March.
    await page.goto(
      `${ctx.url}/dashboard?site=${ctx.siteId}&period=custom&from=2026-03-09&to=2026-03-09`,
    );
    await showsRange(page, "2026-03-09 00:00 UTC to 2026-03-10 00:00 UTC");
    expect((await channelTable(page)).map((r) => `${r[0]} ${r[1]} ${r[5]}`)).toEqual([
      "Organic Search USD 49.00",
    ]);
  });

  it("opens a customer's journey from a payment with the keyboard and closes it with Escape", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`);
    await signIn(page, ADMIN_TOKEN);
    const button = page.getByRole("button", {
      name: `Open the journey of payment ${DEMO.googlePayment}`,
    });
    await button.focus();
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog");
    await dialog.waitFor();
    await expect(dialog.locator("h2").textContent()).resolves.toBe(
      `Customer ${DEMO.googleCustomer}`,
    );
    await expect(page.locator("#journey-first-touch").textContent()).resolves.toBe(
      "First touch: Organic Search (Google), landed on https://example.com/ at 2026-03-09 10:00 UTC",
    );
    const visitors = await page
      .locator("#journey-people > li > code")
      .evaluateAll((cs) => cs.map((c) => (c.textContent ?? "").trim()));
    const customer = await reports().getCustomer(
      { siteId: ctx.siteId, customerId: DEMO.googleCustomer },
      { headers: ctx.adminHeaders },
    );
    // Cookieless daily ids, none stitched: each stands alone.
    expect(visitors).toEqual(customer.visitors.map((v) => v.visitorId));
    expect(visitors.length).toBeGreaterThan(0);
    const payments = await page
      .locator("#journey-payments tbody tr")
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.children].map((c) => (c.textContent ?? "").trim())),
      );
    const journey = await reports().customerJourney(
      { siteId: ctx.siteId, customerId: DEMO.googleCustomer },
      { headers: ctx.adminHeaders },
    );
    expect(payments).toEqual(
      journey.payments.map((p) => [
        p.paymentId,
        `${p.paidAt.slice(0, 10)} ${p.paidAt.slice(11, 16)} UTC`,
        `${p.amount?.decimal} ${p.amount?.currency}`,
        p.kind,
        p.status,
        p.channel,
      ]),
    );
    expect(payments.map((p) => p[0])).toEqual([
      "pay_demo_google_3",
      "pay_demo_google_2",
      DEMO.googlePayment,
    ]);
    await page.screenshot({ path: join(ARTIFACTS, "journey.png") });
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
  });

  it("says a wrong token was not accepted and forgets it", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=30d`);
    await signIn(page, "not-the-token");
    const alert = page.getByRole("alert");
    await alert.waitFor();
    await expect(alert.textContent()).resolves.toBe(
      "This token was not accepted: check it (a reports key or the service's ADMIN_TOKEN) and sign in again. The service said: missing or invalid admin token.",
    );
    await expect(page.getByLabel("Token").count()).resolves.toBe(1);
    expect(await page.evaluate(() => sessionStorage.getItem("ingest.dashboard.token"))).toBeNull();
    await page.screenshot({ path: join(ARTIFACTS, "wrong-token.png") });
  });

  it("signs in with a reports key and no site id: it opens the key's own site", async () => {
    const key = await ctx.keyWith(["reports"]);
    const page = await open("/dashboard?period=7d");
    await signIn(page, key);
    const table = await channelTable(page);
    expect(new URL(page.url()).search).toBe(`?site=${ctx.siteId}&period=7d`);
    const overview = await reports().siteOverview(
      { siteId: ctx.siteId, ...last7Days() },
      { headers: { authorization: `Bearer ${key}` } },
    );
    expect(table.map((row) => row[0])).toEqual(
      overview.channels.flatMap((c) => Array(Math.max(c.revenue.length, 1)).fill(c.channel)),
    );
    await page.screenshot({ path: join(ARTIFACTS, "reports-key.png") });
  });

  it("says a revoked reports key was revoked and forgets it", async () => {
    const { key, keyId } = await ctx.server.admin.createKey({
      siteId: ctx.siteId,
      name: "revoked",
      scopes: ["reports"],
      actorUserId: ctx.tenant.ownerUserId,
    });
    await ctx.server.admin.deleteKey({ keyId, actorUserId: ctx.tenant.ownerUserId });
    const page = await open("/dashboard?period=30d");
    await signIn(page, key);
    const alert = page.getByRole("alert");
    await alert.waitFor();
    await expect(alert.textContent()).resolves.toBe(
      "This key was not accepted: it is unknown or has been revoked. Ask an owner or admin of the site for a new reports key. The service said: unknown or revoked API key.",
    );
    expect(await page.evaluate(() => sessionStorage.getItem("ingest.dashboard.token"))).toBeNull();
    await page.screenshot({ path: join(ARTIFACTS, "revoked-key.png") });
  });

  it("says a reports key of another site reads only its own", async () => {
    const other = await createTenant(ctx.server, { scopes: ["reports"] });
    const page = await open(`/dashboard?site=${ctx.siteId}&period=30d`);
    await signIn(page, other.key);
    const alert = page.getByRole("alert");
    await alert.waitFor();
    await expect(alert.textContent()).resolves.toBe(
      "This key reads another site only: sign in again with the site id left empty to open its own site. The service said: api key does not belong to this site.",
    );
  });

  it("tells a site without data what to do next", async () => {
    const empty = await createTenant(ctx.server);
    const page = await open(`/dashboard?site=${empty.siteId}&period=30d`);
    await signIn(page, ADMIN_TOKEN);
    await page.getByRole("heading", { name: "No visits in this period" }).waitFor();
    await expect(page.locator("section.empty code").first().textContent()).resolves.toBe(
      `<script defer src="${ctx.url}/js/script.js" data-site="${empty.siteId}"></script>`,
    );
    await page.getByRole("heading", { name: "No payments in this period" }).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, "empty.png"), fullPage: true });
  });

  it("is usable at 375 px wide in dark mode: nothing overflows the page", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`, {
      width: 375,
      colorScheme: "dark",
    });
    await signIn(page, ADMIN_TOKEN);
    await channelTable(page);
    const widths = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      background: getComputedStyle(document.body).backgroundColor,
    }));
    expect(widths.page).toBeLessThanOrEqual(375);
    expect(widths.background).toBe("rgb(15, 18, 22)");
    // Tables scroll inside their own box; the payment buttons stay reachable.
    await page
      .getByRole("button", { name: `Open the journey of payment ${DEMO.googlePayment}` })
      .click();
    await page.getByRole("dialog").waitFor();
    await page.screenshot({ path: join(ARTIFACTS, "narrow-dark.png"), fullPage: true });
  });
});
