/**
 * The attribution story in a real browser (Chromium driven by
 * playwright-core, as test/tracker/browser.test.ts does): a visitor lands
 * from a newsletter, the page's Buy button opens a Stripe Payment Link with
 * `?client_reference_id=` set from `ingest.visitorId()`, Stripe's
 * `checkout.session.completed` carries it back through the connector, and
 * the charge that follows is credited to the newsletter campaign.
 *
 * Stripe's pages are stood in for by request interception: nothing leaves
 * the machine. There is no skip: without Chromium this fails.
 */
import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DESKTOP_UA, launchChromium } from "../helpers/chromium.js";
import { charge, checkoutSession, signStripe, stripeEvent } from "../helpers/stripe-events.js";
import { postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const SECRET = "whsec_browser_story_0123456789";
const NOW_S = 1773230400;
const PAYMENT_LINK = "https://buy.stripe.com/test_28o5lR0cX";

declare const ingest: { visitorId(): Promise<string | undefined> };
declare const window: Record<string, unknown>;

const ctx = useTestServer();
let browser: Browser;
let context: BrowserContext;
let path: string;
/** The Payment Link URLs the browser opened. */
const opened: string[] = [];

/** The shop's page: the tracker snippet and a Buy button that adds the visitor id to the Payment Link. */
function shopPage(siteId: string): string {
  return `<!doctype html><html><head><title>Shop</title>
<script defer src="${ctx.server.url}/js/script.js" data-site="${siteId}"></script>
<script>window.ingest=window.ingest||((...a)=>new Promise((r)=>{ingest.q=ingest.q||[];ingest.q.push([a,r])}));for(const m of["track","identify","visitorId"])ingest[m]=ingest[m]||((...a)=>ingest(m,...a));</script>
</head><body><a id="buy" href="${PAYMENT_LINK}">Buy</a>
<script>
document.getElementById("buy").addEventListener("click", async (e) => {
  e.preventDefault();
  const id = await ingest.visitorId();
  location.href = "${PAYMENT_LINK}" + (id ? "?client_reference_id=" + encodeURIComponent(id) : "");
});
</script></body></html>`;
}

beforeAll(async () => {
  path = (
    await ctx.server.admin.createConnector({
      siteId: ctx.tenant.siteId,
      provider: "stripe",
      secret: SECRET,
      actorUserId: ctx.tenant.ownerUserId,
    })
  ).urlPath;
  browser = await launchChromium();
  context = await browser.newContext({ userAgent: DESKTOP_UA });
  await context.route(/^https:\/\/example\.com\//, (route) =>
    route.fulfill({
      status: 200,
      contentType: "text/html; charset=utf-8",
      body: shopPage(ctx.tenant.siteId),
    }),
  );
  await context.route(/^https:\/\/buy\.stripe\.com\//, (route) => {
    opened.push(route.request().url());
    return route.fulfill({ status: 200, contentType: "text/html", body: "<p>Stripe Checkout</p>" });
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

describe("Stripe Checkout attribution in Chromium", () => {
  it("credits the charge to the campaign the visitor landed from, through client_reference_id", async () => {
    const page = await context.newPage();
    await page.goto(
      "https://example.com/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=spring",
    );
    await page.waitForFunction(() => typeof window.ingest === "function");
    const visitorId = await page.evaluate(() => ingest.visitorId());
    expect(visitorId).toMatch(/^[0-9a-f]{32}$/);

    await page.click("#buy");
    await page.waitForURL(/buy\.stripe\.com/);
    const link = new URL(opened[0] as string);
    expect(link.searchParams.get("client_reference_id")).toBe(visitorId);

    // What Stripe then sends: the completed session with the reference, and the charge.
    const session = checkoutSession({
      client_reference_id: link.searchParams.get("client_reference_id"),
      payment_link: "plink_1Test",
      payment_intent: "pi_browser_1",
    });
    const ch = charge({
      customer: null,
      payment_intent: "pi_browser_1",
      currency: "eur",
      amount: 4900,
    });
    for (const event of [
      stripeEvent("checkout.session.completed", session, NOW_S),
      stripeEvent("charge.succeeded", ch, NOW_S + 1),
    ]) {
      const { payload, header } = signStripe(event, SECRET, NOW_S);
      const res = await postJson(`${ctx.server.url}${path}`, payload, {
        headers: { "stripe-signature": header },
      });
      expect(res.status).toBe(200);
    }

    const payment = await ctx.server.store.getPayment(ctx.tenant.siteId, ch.id as string);
    expect(payment).toMatchObject({
      customerId: "guest_pi_browser_1",
      currency: "EUR",
      amountMinor: 4900,
    });
    expect(payment?.attribution).toMatchObject({
      channel: "Email",
      source: "newsletter",
      medium: "email",
      campaign: "spring",
      landingPage: expect.stringContaining("example.com/pricing"),
      visitorId,
      via: "visitor_id",
    });
    expect(
      await ctx.server.store.getCustomer(ctx.tenant.siteId, "guest_pi_browser_1"),
    ).toMatchObject({
      visitorId,
      // The charge's billing details came last, and a guest keeps them.
      email: "ada@example.com",
      country: "GB",
    });
  });
});
