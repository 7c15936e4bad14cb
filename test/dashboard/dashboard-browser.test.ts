/**
 * The dashboard in Chromium (test/helpers/chromium.ts, as the tracker's
 * tests): sign-in, the site and period in the URL, no data call but Query,
 * Funnel, GetAccess and CustomerJourney (never SiteOverview), a
 * customer's journey (CustomerJourney) opened with the keyboard, a wrong token, the empty
 * state, and 375 px in dark mode. Screenshots go to test-artifacts/dashboard/
 * (not committed). The page's clock is fixed at the server's test clock, so
 * "the last 7 days" are the same days for both at any date.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { signIn, useDashboardBrowser } from "../helpers/dashboard-browser.js";
import { DEMO, seedDashboardDemo } from "../helpers/dashboard-data.js";
import { whenQuerySlotFree } from "../helpers/query-slots.js";
import { ROOT } from "../helpers/rpc-clients.js";
import { ADMIN_TOKEN, createTenant, createTestClock, TEST_NOW } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";
import { useTestServer } from "../helpers/use-test-server.js";

// Browser globals used inside page.evaluate: the test program is compiled without the DOM lib.
declare const sessionStorage: { getItem(key: string): string | null };
declare const document: { documentElement: { scrollWidth: number }; body: object };
declare function getComputedStyle(el: object): { backgroundColor: string };

const ARTIFACTS = join(ROOT, "test-artifacts", "dashboard");
/** A value the page reaches once its calls have answered: generous under a loaded machine. */
const poll = <T>(read: () => Promise<T> | T) =>
  expect.poll(read, { timeout: scaled(30_000), interval: 100 });
const clock = createTestClock(TEST_NOW);
const ctx = useTestServer({ clock });

/** A new tab of a new browser profile at `path`, its clock fixed at the server's. */
const { open } = useDashboardBrowser(ctx);

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await seedDashboardDemo({ url: ctx.url, siteId: ctx.siteId, key: ctx.key, clock });
});

const reports = () => ctx.client(ReportsService);

/** The top row's tiles once drawn. */
async function topRow(page: Page): Promise<string[]> {
  await page.locator("#top-row .tile").first().waitFor();
  return page.locator("#top-row .tile").evaluateAll((ts) => ts.map((t) => t.textContent ?? ""));
}

/** The days the page's Query answers cover, as it prints them. */
async function showsDays(page: Page, text: string) {
  await page.locator("#query-period", { hasText: text }).waitFor();
}

describe("the dashboard in Chromium", () => {
  it("signs in, keeps site and period in the URL, and calls only Query, Funnel, GetAccess and CustomerJourney", async () => {
    const page = await open(`/dashboard?period=7d&step=page:/&step=event:signup`);
    const methods = new Set<string>();
    page.on("request", (r) => {
      const m = /\/ingest\.v1\.ReportsService\/(\w+)$/.exec(r.url());
      if (m?.[1]) methods.add(m[1]);
    });
    await signIn(page, ADMIN_TOKEN, ctx.siteId);
    await topRow(page);
    expect(new URL(page.url()).search).toBe(
      `?site=${ctx.siteId}&period=7d&step=page%3A%2F&step=event%3Asignup`,
    );
    expect(await page.evaluate(() => sessionStorage.getItem("ingest.dashboard.token"))).toBe(
      ADMIN_TOKEN,
    );
    await showsDays(page, "Days 2026-03-05 to the day before 2026-03-12");
    await page.locator("#funnel-table").waitFor();
    await page.locator("#customers-table").waitFor();
    await page.screenshot({ path: join(ARTIFACTS, "overview-7d.png"), fullPage: true });

    // Another period from the picker: the URL follows, and a reload keeps it.
    await page.getByLabel("Period", { exact: true }).selectOption("today");
    await page.waitForURL(`**/dashboard?site=${ctx.siteId}&period=today&**`);
    await showsDays(page, "Days 2026-03-11 to the day before 2026-03-12");
    await page.reload();
    await showsDays(page, "Days 2026-03-11 to the day before 2026-03-12");
    // A custom range from the URL (both days inclusive): only 9 March.
    await page.goto(
      `${ctx.url}/dashboard?site=${ctx.siteId}&period=custom&from=2026-03-09&to=2026-03-09`,
    );
    await showsDays(page, "Days 2026-03-09 to the day before 2026-03-10");
    await page
      .getByRole("button", { name: `Open the journey of customer ${DEMO.googleCustomer}` })
      .click();
    await page.getByRole("dialog").waitFor();
    await poll(() => [...methods].sort()).toEqual([
      "CustomerJourney",
      "Funnel",
      "GetAccess",
      "Query",
    ]);
  });

  it("opens a customer's journey from the customers with the keyboard and closes it with Escape", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`);
    await signIn(page, ADMIN_TOKEN);
    const button = page.getByRole("button", {
      name: `Open the journey of customer ${DEMO.googleCustomer}`,
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
    const tiles = await topRow(page);
    expect(new URL(page.url()).search).toBe(`?site=${ctx.siteId}&period=7d`);
    const r = await whenQuerySlotFree(() =>
      reports().query(
        {
          siteId: ctx.siteId,
          metrics: ["visitors"],
          period: { fromDay: "2026-03-05", toDay: "2026-03-11" },
        },
        { headers: { authorization: `Bearer ${key}` } },
      ),
    );
    expect(r.totals[0]?.value).toEqual({ case: "count", value: 5n });
    expect(tiles[0]?.startsWith("Visitors5")).toBe(true);
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
    await expect(
      page.locator("section[aria-labelledby=no-traffic] code").textContent(),
    ).resolves.toBe(
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
    await topRow(page);
    const widths = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      background: getComputedStyle(document.body).backgroundColor,
    }));
    expect(widths.page).toBeLessThanOrEqual(375);
    expect(widths.background).toBe("rgb(15, 18, 22)");
    // Tables stack; the customers' buttons stay reachable.
    await page
      .getByRole("button", { name: `Open the journey of customer ${DEMO.googleCustomer}` })
      .click();
    await page.getByRole("dialog").waitFor();
    await page.screenshot({ path: join(ARTIFACTS, "narrow-dark.png"), fullPage: true });
  });
});
