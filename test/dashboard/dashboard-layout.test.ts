/**
 * The dashboard in Chromium at desktop (1280, 1366 px) and phone (375 px)
 * widths, light and dark: the site shown by its host name; amounts drawn in
 * one selected currency (kept in the URL); chart axis labels with WCAG AA
 * contrast on both themes; no text clipped or hidden behind a scroll in any
 * table, panel or dialog (tables become stacked rows on a phone); an
 * axe-core scan of each view with no serious or critical violation; and a
 * customer's journey that shows the customer by name and email, one browser
 * (a persistent visitor with its stitched daily ids) as one person, and a
 * timeline. Screenshots go to test-artifacts/dashboard/ (not committed).
 */

import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { Client } from "@connectrpc/connect";
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { useDashboardBrowser } from "../helpers/dashboard-browser.js";
import { DEMO, seedDashboardDemo } from "../helpers/dashboard-data.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { whenQuerySlotFree } from "../helpers/query-slots.js";
import { ROOT } from "../helpers/rpc-clients.js";
import {
  ADMIN_TOKEN,
  createTenant,
  createTestClock,
  postJson,
  TEST_NOW,
  type Tenant,
} from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";
import { useTestServer } from "../helpers/use-test-server.js";

// Browser globals used inside page.evaluate: the test program is compiled without the DOM lib.
declare const document: {
  documentElement: { scrollWidth: number };
  body: object;
  querySelectorAll(s: string): ArrayLike<BrowserElement>;
  querySelector(s: string): BrowserElement | null;
};
declare const window: { innerWidth: number; devicePixelRatio: number };
declare const axe: {
  run(
    ctx: object,
    options: object,
  ): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }>;
};
interface BrowserElement {
  scrollWidth: number;
  clientWidth: number;
  width: number;
  height: number;
  tagName: string;
  className: string;
  closest(s: string): BrowserElement | null;
  textContent: string | null;
  getBoundingClientRect(): { left: number; right: number; width: number };
  getContext(kind: "2d"): {
    getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> };
  };
}
declare function getComputedStyle(el: object): {
  backgroundColor: string;
  color: string;
  overflowX: string;
  display: string;
  visibility: string;
  clipPath: string;
};

const ARTIFACTS = join(ROOT, "test-artifacts", "dashboard");
const AXE_SOURCE = readFileSync(
  createRequire(import.meta.url).resolve("axe-core/axe.min.js"),
  "utf8",
);
const clock = createTestClock(TEST_NOW);
/** A value the page reaches once its calls have answered: generous under a loaded machine. */
const poll = <T>(read: () => Promise<T> | T) =>
  expect.poll(read, { timeout: scaled(30_000), interval: 100 });
const ctx = useTestServer({ clock });
const HOUR = 3_600_000;
const VID = "journeyBrowser0001";

const dashboard = useDashboardBrowser(ctx);
/** A second site: one customer who came back on a second day in the same browser. */
let person: Tenant;

/** Sends an event at `ts` (the clock moved there, as the API stamps old events with receipt). */
async function event(t: Tenant, ip: string, ts: number, body: Record<string, unknown>) {
  clock.set(ts);
  const res = await postJson(
    `${ctx.url}/api/v1/events`,
    { s: t.siteId, ip, ua: BROWSER_UA, ...body },
    { key: t.key },
  );
  expect(res.status).toBe(204);
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await seedDashboardDemo({ url: ctx.url, siteId: ctx.siteId, key: ctx.key, clock });
  person = await createTenant(ctx.server, { hostnames: ["shop.example.org"] });
  const now = clock.now();
  // Day 1: a cookieless landing from Google, then consent (the vid): the daily id is stitched.
  await event(person, "203.0.113.7", now - 50 * HOUR, {
    e: "pageview",
    u: "https://shop.example.org/",
    r: "https://www.google.com/",
  });
  await event(person, "203.0.113.7", now - 49.9 * HOUR, {
    e: "pageview",
    u: "https://shop.example.org/pricing",
    vid: VID,
  });
  // Day 2, another address: a new daily id, stitched to the same browser again.
  await event(person, "203.0.113.8", now - 26 * HOUR, {
    e: "pageview",
    u: "https://shop.example.org/blog/launch-notes-for-the-spring-release",
  });
  await event(person, "203.0.113.8", now - 25.9 * HOUR, {
    e: "pageview",
    u: "https://shop.example.org/checkout",
    vid: VID,
  });
  clock.set(now);
  const res = await postJson(
    `${ctx.url}/api/v1/payments`,
    {
      kind: "charge",
      payment_id: "pay_person_1",
      customer: {
        id: "cus_person",
        email: "ada@example.org",
        name: "Ada Lovelace",
        visitor_id: VID,
      },
      amount: 120,
      currency: "EUR",
      paid_at: new Date(now - 25 * HOUR).toISOString(),
    },
    { key: person.key },
  );
  expect(res.status).toBe(200);
});

type Scheme = "light" | "dark";

/** A signed-in tab at `path`, its clock fixed at the server's, once its top row is drawn. */
async function open(path: string, width: number, colorScheme: Scheme = "light"): Promise<Page> {
  const page = await dashboard.open(path, { width, colorScheme, token: ADMIN_TOKEN });
  await page.locator("#top-row .tile").first().waitFor();
  return page;
}

/** Query as the test's own client, waiting for a slot when the page's calls hold the site's two. */
function query(request: Parameters<Client<typeof ReportsService>["query"]>[0]) {
  return whenQuerySlotFree(() =>
    ctx.client(ReportsService).query(request, { headers: ctx.adminHeaders }),
  );
}

/** axe-core's serious and critical violations of the page as it is (the script is evaluated, not injected, so the CSP stays on). */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(() =>
    axe
      .run(document, { resultTypes: ["violations"] })
      .then((r) =>
        r.violations
          .filter((v) => v.impact === "serious" || v.impact === "critical")
          .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`),
      ),
  );
  return result;
}

/**
 * Elements whose content is cut or hidden behind a scroll: wider than their
 * box where the overflow is not visible, or reaching past the viewport's
 * right edge; and the page's own horizontal scroll.
 */
async function clipped(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const out: string[] = [];
    const vw = window.innerWidth;
    if (document.documentElement.scrollWidth > vw) {
      out.push(`page scrolls: ${document.documentElement.scrollWidth} > ${vw}`);
    }
    const all = document.querySelectorAll("main *, dialog *, header *");
    for (let i = 0; i < all.length; i++) {
      const el = all[i] as BrowserElement;
      const style = getComputedStyle(el);
      if (style.display === "none" || style.visibility === "hidden") continue;
      // Headers kept for screen readers only (the stacked tables' thead) are meant to be hidden.
      if (
        el.closest(".stack thead") &&
        getComputedStyle(el.closest("thead") as object).clipPath !== "none"
      ) {
        continue;
      }
      const box = el.getBoundingClientRect();
      if (box.width === 0) continue;
      const name = `${el.tagName.toLowerCase()}.${el.className}: ${(el.textContent ?? "").trim().slice(0, 40)}`;
      if (style.overflowX !== "visible" && el.scrollWidth > el.clientWidth + 1) {
        out.push(`cut or scrolled (${el.scrollWidth} > ${el.clientWidth}) ${name}`);
      }
      if (box.right > vw + 1) out.push(`past the right edge (${Math.round(box.right)}) ${name}`);
    }
    return out;
  });
}

/** WCAG relative luminance of an sRGB colour. */
function luminance([r, g, b]: number[]): number {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r ?? 0) + 0.7152 * lin(g ?? 0) + 0.0722 * lin(b ?? 0);
}

function contrast(a: number[], b: number[]): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/**
 * The contrast of the chart's left axis (its tick labels, drawn on the
 * canvas) against the page: the pixel of the axis strip that stands out most
 * from the background is a glyph's core.
 */
async function axisContrast(page: Page): Promise<number> {
  const { pixels, background } = await page.evaluate(() => {
    const canvas = document.querySelector("#metric-chart canvas") as BrowserElement;
    const strip = Math.round(40 * window.devicePixelRatio);
    const data = canvas.getContext("2d").getImageData(0, 0, strip, canvas.height).data;
    return {
      pixels: Array.from(data),
      background: getComputedStyle(document.body).backgroundColor,
    };
  });
  const bg = (background.match(/\d+/g) ?? []).slice(0, 3).map(Number);
  let best = 1;
  for (let i = 0; i < pixels.length; i += 4) {
    const alpha = (pixels[i + 3] ?? 0) / 255;
    if (alpha === 0) continue;
    // The canvas is transparent: blend each pixel over the page's background.
    const rgb = [0, 1, 2].map((k) => (pixels[i + k] ?? 0) * alpha + (bg[k] ?? 0) * (1 - alpha));
    best = Math.max(best, contrast(rgb, bg));
  }
  return best;
}

describe("the dashboard's layout, themes and accessibility", () => {
  it("shows the site by its host name, its id beside it", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`, 1280);
    await page.locator("#site-name strong").waitFor();
    await expect(page.locator("#site-name").textContent()).resolves.toBe(
      `example.com (site ${ctx.siteId})`,
    );
    const access = await ctx
      .client(ReportsService)
      .getAccess({ siteId: ctx.siteId }, { headers: ctx.adminHeaders });
    expect(access.hostnames).toEqual(["example.com", "www.example.com"]);
  });

  it("draws amounts in one currency, the one with most net revenue unless the URL names another", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`, 1280);
    // Net of the 7 days: USD 143.00 (14,300 minor units), JPY 1,500, EUR 20.00.
    await expect(page.getByLabel("Currency of the amounts").inputValue()).resolves.toBe("USD");
    const options = await page
      .locator("#currency option")
      .evaluateAll((os) => os.map((o) => o.textContent));
    // The selector's currencies are Query's by currency, in its order (most net revenue first).
    const byCurrency = await query({
      siteId: ctx.siteId,
      metrics: ["net_revenue"],
      dimensions: ["currency"],
      period: { fromDay: "2026-03-05", toDay: "2026-03-11" },
      limit: 100,
    });
    expect(options).toEqual(byCurrency.rows.map((r) => r.dimensions[0]));
    // Compared in minor units (no exchange rate): 14,300 > 2,000 > 1,500.
    expect(options).toEqual(["USD", "EUR", "JPY"]);
    const net = () =>
      page.locator("#top-row .tile", { hasText: "Net revenue" }).locator(".tile-value");
    await poll(() => net().textContent()).toBe("143.00 USD");
    await page.getByLabel("Currency of the amounts").selectOption("EUR");
    await page.waitForURL(`**/dashboard?site=${ctx.siteId}&period=7d&currency=EUR`);
    await poll(() => net().textContent()).toBe("20.00 EUR");
    await page.reload();
    await page.locator("#top-row .tile").first().waitFor();
    await expect(page.getByLabel("Currency of the amounts").inputValue()).resolves.toBe("EUR");
  });

  for (const scheme of ["light", "dark"] as const) {
    it(`draws the chart's axis labels with at least 4.5:1 contrast in the ${scheme} theme`, async () => {
      const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`, 1280, scheme);
      await page.locator("#metric-chart canvas").waitFor();
      expect(await axisContrast(page)).toBeGreaterThanOrEqual(4.5);
    });
  }

  const views: [number, Scheme][] = [
    [1280, "light"],
    [1366, "dark"],
    [375, "light"],
    [375, "dark"],
  ];
  for (const [width, scheme] of views) {
    it(`at ${width} px in the ${scheme} theme: nothing clipped, the journey dialog included, and no serious axe violation`, async () => {
      const page = await open(
        `/dashboard?site=${ctx.siteId}&period=7d&step=page:/&step=page_prefix:/pricing`,
        width,
        scheme,
      );
      await page.locator("#site-name strong").waitFor();
      // Every Query part drawn (the top row, the chart, each panel, the funnel, time to
      // convert, the customers) before looking.
      await page.locator("#top-row .tile").first().waitFor();
      await page.locator("#funnel-table").waitFor();
      await page.locator("#customers-table").waitFor();
      await page.locator("#ttc-table").waitFor();
      await poll(() => page.locator("main [role=status]").count()).toBe(0);
      await poll(() => page.locator(".panel table").count()).toBeGreaterThanOrEqual(3);
      await page.screenshot({ path: join(ARTIFACTS, `top-${width}-${scheme}.png`) });
      // A channel's detail view, opened by keyboard, is checked too.
      await page
        .getByRole("button", { name: /^Details of channel / })
        .first()
        .focus();
      await page.keyboard.press("Enter");
      await page.locator("table.details").waitFor();
      await poll(() => page.locator("main [role=status]").count()).toBe(0);
      expect(await clipped(page)).toEqual([]);
      expect(await seriousViolations(page)).toEqual([]);
      await page.screenshot({
        path: join(ARTIFACTS, `layout-${width}-${scheme}.png`),
        fullPage: true,
      });
      for (const id of ["panel-pages", "funnel-section", "time-to-convert", "customers-section"]) {
        await page
          .locator(`#${id}`)
          .screenshot({ path: join(ARTIFACTS, `${id}-${width}-${scheme}.png`) });
      }
      const button = page.getByRole("button", {
        name: `Open the journey of customer ${DEMO.googleCustomer}`,
      });
      await button.focus();
      await page.keyboard.press("Enter");
      await page.locator("#journey-timeline li").first().waitFor();
      expect(await clipped(page)).toEqual([]);
      expect(await seriousViolations(page)).toEqual([]);
      await page.screenshot({ path: join(ARTIFACTS, `journey-${width}-${scheme}.png`) });
      await page.keyboard.press("Escape");
      await page.getByRole("dialog").waitFor({ state: "detached" });
    });
  }

  it("has no serious axe violation on the sign-in screen", async () => {
    const page = await dashboard.open("/dashboard", { width: 375, height: 800 });
    await page.getByLabel("Token").waitFor();
    expect(await seriousViolations(page)).toEqual([]);
  });

  it("shows a customer by name and email, one browser as one person, and a timeline", async () => {
    const page = await open(`/dashboard?site=${person.siteId}&period=7d`, 375, "dark");
    await page.getByRole("button", { name: "Open the journey of customer cus_person" }).click();
    await page.locator("#journey-timeline li").first().waitFor();
    await expect(page.locator("#journey-title").textContent()).resolves.toBe("Ada Lovelace");
    await expect(page.locator("#journey-who").textContent()).resolves.toBe(
      "Customer idcus_personNameAda LovelaceEmailada@example.org",
    );
    const journey = await ctx
      .client(ReportsService)
      .customerJourney(
        { siteId: person.siteId, customerId: "cus_person" },
        { headers: ctx.adminHeaders },
      );
    const persistent = `p:${VID}`;
    const daily = journey.visitors.filter((v) => v.visitorId !== persistent);
    // The service names the browser of each daily id.
    expect(journey.visitors.map((v) => v.visitorId)).toContain(persistent);
    expect(daily).toHaveLength(2);
    expect(daily.map((v) => v.persistentId)).toEqual([persistent, persistent]);
    // The page: one person, the two daily ids under it.
    const people = page.locator("#journey-people > li");
    await expect(people.count()).resolves.toBe(1);
    await expect(people.locator("> code").textContent()).resolves.toBe(persistent);
    await expect(people.locator("summary").textContent()).resolves.toBe(
      "2 daily ids of the same browser",
    );
    await people.locator("summary").click();
    const ids = await people
      .locator("details li code")
      .evaluateAll((cs) => cs.map((c) => c.textContent));
    expect(ids.sort()).toEqual(daily.map((v) => v.visitorId).sort());
    const timeline = await page
      .locator("#journey-timeline li")
      .evaluateAll((lis) => lis.map((li) => (li.textContent ?? "").trim()));
    expect(timeline[0]).toMatch(
      /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC First visit https:\/\/shop\.example\.org\/ from Organic Search \(Google\)$/,
    );
    expect(timeline.at(-1)).toMatch(/ Payment succeeded 120\.00 EUR \(charge\) pay_person_1$/);
    expect(await clipped(page)).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, "journey-person-375-dark.png"), fullPage: true });
  });
});
