/**
 * The dashboard's Query part in Chromium, compared with what
 * ReportsService.Query answers for the same request: the top row (each
 * metric and its change against the previous period), the panels' rows, a
 * clicked row filtering the whole page (a removable chip, in the URL), the
 * attribution model and the comparison switch (in the URL too), and the
 * panels' tabs by keyboard. The page's clock is fixed at the server's test
 * clock, so "the last 7 days" are 2026-03-05 to 2026-03-11 at any date.
 */
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { type MetricValue, ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { useDashboardBrowser } from "../helpers/dashboard-browser.js";
import { seedDashboardDemo } from "../helpers/dashboard-data.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { whenQuerySlotFree } from "../helpers/query-slots.js";
import { ADMIN_TOKEN, createTestClock, postJson, TEST_NOW } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";
import { useTestServer } from "../helpers/use-test-server.js";

const clock = createTestClock(TEST_NOW);
/** A value the page reaches once its calls have answered: generous under a loaded machine. */
const poll = <T>(read: () => Promise<T> | T) =>
  expect.poll(read, { timeout: scaled(30_000), interval: 100 });
const HOUR = 3_600_000;
const ctx = useTestServer({ clock });

const dashboard = useDashboardBrowser(ctx);

/** Sends an event at `hoursAgo` (the clock moved there: the API stamps old events with receipt). */
async function event(ip: string, hoursAgo: number, body: Record<string, unknown>) {
  const now = clock.now();
  clock.set(now - hoursAgo * HOUR);
  const res = await postJson(
    `${ctx.url}/api/v1/events`,
    { s: ctx.siteId, ip, ua: BROWSER_UA, ...body },
    { key: ctx.key },
  );
  clock.set(now);
  expect(res.status).toBe(204);
}

beforeAll(async () => {
  await seedDashboardDemo({ url: ctx.url, siteId: ctx.siteId, key: ctx.key, clock });
  // One customer identified on two days (two daily ids) who came from two
  // channels before a 60 USD payment: a case where models may credit differently.
  await event("198.51.100.21", 40, {
    e: "pageview",
    u: "https://example.com/",
    r: "https://www.google.com/",
  });
  await event("198.51.100.21", 39.9, {
    e: "$identify",
    u: "https://example.com/app",
    uid: "user-two",
  });
  await event("198.51.100.22", 29, {
    e: "pageview",
    u: "https://example.com/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=spring",
  });
  await event("198.51.100.22", 28.9, {
    e: "$identify",
    u: "https://example.com/app",
    uid: "user-two",
  });
  const paid = await postJson(
    `${ctx.url}/api/v1/payments`,
    {
      kind: "charge",
      payment_id: "pay_two_visits",
      customer: { id: "cus_two_visits", user_id: "user-two" },
      amount: 60,
      currency: "USD",
      paid_at: new Date(clock.now() - 28 * HOUR).toISOString(),
    },
    { key: ctx.key },
  );
  expect(paid.status).toBe(200);
  // Goals: custom events of the two visitors of user-two (one signed up, one opened a newsletter).
  await event("198.51.100.22", 28.95, { e: "signup", u: "https://example.com/pricing" });
  await event("198.51.100.21", 39.95, { e: "newsletter_open", u: "https://example.com/" });
  // The Direct visitor of today again, two minutes ago: the realtime count's one visitor.
  await event("198.51.100.15", 2 / 60, { e: "pageview", u: "https://example.com/pricing" });
});

const TOP = [
  "visitors",
  "visits",
  "pageviews",
  "bounce_rate",
  "visit_duration",
  "net_revenue",
  "paying_customers",
  "conversion_rate",
  "revenue_per_visitor",
];
const LABELS = [
  "Visitors",
  "Visits",
  "Pageviews",
  "Bounce rate",
  "Visit duration",
  "Net revenue",
  "Paying customers",
  "Conversion rate",
  "Revenue per visitor",
];
const PERIOD = { fromDay: "2026-03-05", toDay: "2026-03-11" };

/** How the page must write a value (docs/dashboard.md): written out here, not imported from the page. */
function shown(name: string, v: MetricValue | undefined): string {
  const value = v?.value;
  if (!value || value.case === undefined) return "–";
  if (value.case === "count") return Number(value.value).toLocaleString("en-GB");
  if (value.case === "money") return `${value.value.decimal} ${value.value.currency}`;
  if (name === "visit_duration") {
    const s = Math.round(value.value);
    return s >= 60 ? `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s` : `${s}s`;
  }
  return name.endsWith("_rate") ? `${value.value.toFixed(1)}%` : value.value.toFixed(1);
}

function num(v: MetricValue | undefined): number | undefined {
  const value = v?.value;
  if (!value || value.case === undefined) return undefined;
  if (value.case === "count") return Number(value.value);
  if (value.case === "money") return Number(value.value.decimal);
  return value.value;
}

function change(name: string, a?: MetricValue, b?: MetricValue): string {
  const [x, y] = [num(a), num(b)];
  if (x === undefined || y === undefined) return "–";
  const sign = (n: number) => (n > 0 ? "+" : n < 0 ? "−" : "");
  if (name.endsWith("_rate")) return `${sign(x - y)}${Math.abs(x - y).toFixed(1)} pp`;
  if (y === 0) return x === 0 ? "0.0%" : "new";
  const pct = ((x - y) / Math.abs(y)) * 100;
  return `${sign(pct)}${Math.abs(pct).toFixed(1)}%`;
}

/**
 * Query as the test's own client: the page's calls may be using the site's
 * two query slots (ANALYTICS_QUERIES_PER_SITE), so a refusal waits for one.
 */
function query(request: Parameters<ReturnType<typeof reports>["query"]>[0]) {
  return whenQuerySlotFree(() => reports().query(request, { headers: ctx.adminHeaders }));
}
const reports = () => ctx.client(ReportsService);

/** Funnel as the test's own client, waiting for a slot as {@link query} does. */
function funnel(request: Parameters<ReturnType<typeof reports>["funnel"]>[0]) {
  return whenQuerySlotFree(() => reports().funnel(request, { headers: ctx.adminHeaders }));
}

/** A signed-in tab at `path`, its clock fixed at the server's. */
const open = (path: string) => dashboard.open(path, { token: ADMIN_TOKEN });

/** The top row as [label, value, change] once it has loaded. */
async function topRow(page: Page): Promise<string[][]> {
  await page.locator("#top-row .tile").first().waitFor();
  return page
    .locator("#top-row .tile")
    .evaluateAll((tiles) =>
      tiles.map((t) => [...t.children].map((c) => (c.textContent ?? "").trim())),
    );
}

/** What the top row must show for `request`'s answer. */
async function expectedTopRow(request: {
  filters?: { dimension: string; op: string; values: string[] }[];
  model?: string;
  compare?: boolean;
}): Promise<string[][]> {
  const compare = request.compare ?? true;
  const r = await query({
    siteId: ctx.siteId,
    metrics: TOP,
    filters: request.filters ?? [],
    period: PERIOD,
    compare: compare ? "previous_period" : "",
    model: request.model ?? "first_touch",
    currency: "USD",
  });
  return TOP.map((name, i) => {
    const row = [LABELS[i] as string, shown(name, r.totals[i])];
    if (compare) row.push(change(name, r.totals[i], r.comparisonTotals[i]));
    return row;
  });
}

/** A panel's rows as text cells once loaded. */
async function panelRows(page: Page, panel: string): Promise<string[][]> {
  const rows = page.locator(`#panel-${panel} tbody tr`);
  await rows.first().waitFor();
  // The detail view's toggle is no number: left out.
  return rows.evaluateAll((trs) =>
    trs.map((tr) =>
      [...tr.children]
        .filter((c) => c.getAttribute("data-label") !== "Details")
        .map((c) => (c.textContent ?? "").trim()),
    ),
  );
}

async function expectedRows(
  dimension: string,
  filters: { dimension: string; value: string }[] = [],
  model = "first_touch",
) {
  const r = await query({
    siteId: ctx.siteId,
    metrics: ["visitors", "net_revenue", "revenue_per_visitor"],
    dimensions: [dimension],
    filters: filters.map((f) => ({ dimension: f.dimension, op: "is", values: [f.value] })),
    period: PERIOD,
    model,
    currency: "USD",
    limit: 10,
  });
  return r.rows.map((row) => [
    row.dimensions[0] ?? "",
    ...["visitors", "net_revenue", "revenue_per_visitor"].map((m, i) => shown(m, row.metrics[i])),
  ]);
}

describe("the dashboard's numbers are Query's", () => {
  it("shows the top row and its changes as Query answers them, and the site's time zone", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`);
    const shownRow = await topRow(page);
    expect(shownRow).toEqual(await expectedTopRow({}));
    // And the values themselves, so a wrong answer cannot pass by agreeing with itself.
    expect(shownRow[0]?.slice(0, 2)).toEqual(["Visitors", "7"]);
    expect(shownRow[5]?.slice(0, 2)).toEqual(["Net revenue", "203.00 USD"]);
    await expect(page.locator("#query-period").textContent()).resolves.toContain(
      "Days 2026-03-05 to the day before 2026-03-12 in the site's time zone, UTC",
    );
    expect(await panelRows(page, "acquisition")).toEqual(await expectedRows("channel"));
  });

  it("filters the whole page by a clicked row, shows it as a removable chip and keeps it in the URL", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`);
    await panelRows(page, "acquisition");
    await page.getByRole("button", { name: "Filter by channel Email" }).click();
    await page.waitForURL(`**/dashboard?site=${ctx.siteId}&period=7d&f.channel=Email`);
    await expect(page.getByRole("list", { name: "Filters" }).textContent()).resolves.toBe(
      "channel is Email×",
    );
    const filter = [{ dimension: "channel", op: "is", values: ["Email"] }];
    await poll(() => topRow(page)).toEqual(await expectedTopRow({ filters: filter }));
    expect((await topRow(page))[0]?.slice(0, 2)).toEqual(["Visitors", "2"]);
    await poll(() => panelRows(page, "pages")).toEqual(
      await expectedRows("page", [{ dimension: "channel", value: "Email" }]),
    );
    // A reload keeps the filter; removing the chip takes it away.
    await page.reload();
    await poll(() => topRow(page)).toEqual(await expectedTopRow({ filters: filter }));
    await page.getByRole("button", { name: "Remove the filter channel is Email" }).click();
    await page.waitForURL(`**/dashboard?site=${ctx.siteId}&period=7d`);
    await poll(() => topRow(page)).toEqual(await expectedTopRow({}));
  });

  it("answers with the chosen attribution model and without comparison when switched off", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`);
    await topRow(page);
    await poll(() => page.locator(".query-view [role=status]").count()).toBe(0);
    // The Query requests the page sends from now on (Connect JSON bodies).
    const sent: { metrics: string[]; model?: string }[] = [];
    page.on("request", (r) => {
      if (r.url().endsWith("/ingest.v1.ReportsService/Query")) sent.push(r.postDataJSON());
    });
    await page.getByLabel("Attribution model").selectOption("linear");
    await page.waitForURL(`**/dashboard?site=${ctx.siteId}&period=7d&model=linear`);
    await expect(page.locator("#model-text").textContent()).resolves.toBe(
      "A payment is split evenly across every visit before it.",
    );
    await poll(() => topRow(page)).toEqual(await expectedTopRow({ model: "linear" }));
    // Every revenue query the page sent since asks for the linear model; the channels' rows are linear's.
    await poll(() => panelRows(page, "acquisition")).toEqual(
      await expectedRows("channel", [], "linear"),
    );
    const revenueQueries = sent.filter((b) => b.metrics.includes("net_revenue"));
    expect(revenueQueries.length).toBeGreaterThan(0);
    expect(revenueQueries.map((b) => b.model)).toEqual(revenueQueries.map(() => "linear"));
    await page.getByLabel("Compare with the previous period").uncheck();
    await page.waitForURL(`**/dashboard?site=${ctx.siteId}&period=7d&compare=off&model=linear`);
    await poll(() => topRow(page)).toEqual(
      await expectedTopRow({ model: "linear", compare: false }),
    );
  });

  it("counts the visitors of the last 5 minutes as Query does over those instants", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`);
    const now = clock.now();
    const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
    const r = await query({
      siteId: ctx.siteId,
      metrics: ["visitors"],
      period: { from: iso(now - 5 * 60_000), to: iso(now) },
    });
    expect(r.totals[0]?.value).toEqual({ case: "count", value: 1n });
    await poll(() => page.locator("#realtime").textContent()).toBe(
      " 1 visitor in the last 5 minutes",
    );
  });

  it("offers month to date, last month and the last 12 months, in the URL", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`);
    await topRow(page);
    const cases: [string, string, string][] = [
      ["Month to date", "mtd", "Days 2026-03-01 to the day before 2026-03-12"],
      ["Last month", "last_month", "Days 2026-02-01 to the day before 2026-03-01"],
      ["Last 12 months", "12m", "Days 2025-04-01 to the day before 2026-03-12"],
    ];
    for (const [label, period, days] of cases) {
      await page.getByLabel("Period", { exact: true }).selectOption({ label });
      await page.waitForURL(`**/dashboard?site=${ctx.siteId}&period=${period}`);
      await poll(() => page.locator("#query-period").textContent()).toContain(days);
    }
  });

  it("switches a panel's tabs by keyboard and shows that tab's rows", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`);
    await panelRows(page, "acquisition");
    await page.getByRole("tab", { name: "Channels" }).focus();
    await page.keyboard.press("ArrowRight");
    await expect(
      page.getByRole("tab", { name: "Sources" }).getAttribute("aria-selected"),
    ).resolves.toBe("true");
    await poll(() => panelRows(page, "acquisition")).toEqual(await expectedRows("source"));
    const sources = await panelRows(page, "acquisition");
    expect(sources.map((r) => r[0])).toContain("Google");
  });

  it("shows goals (custom events, not pageviews) as Query answers them, with their converters' revenue as Funnel answers it", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`);
    const r = await query({
      siteId: ctx.siteId,
      metrics: ["visitors", "conversions", "conversion_rate"],
      dimensions: ["event"],
      filters: [{ dimension: "event", op: "is_not", values: ["pageview"] }],
      period: PERIOD,
      limit: 10,
    });
    const expected = [];
    for (const row of r.rows) {
      const goal = row.dimensions[0] ?? "";
      const f = await funnel({
        siteId: ctx.siteId,
        steps: [
          { kind: "page_prefix", value: "/" },
          { kind: "event", value: goal },
        ],
        period: PERIOD,
        model: "first_touch",
        currency: "USD",
      });
      expected.push([
        goal,
        ...["visitors", "conversions", "conversion_rate"].map((m, i) => shown(m, row.metrics[i])),
        `${f.completersNetRevenue?.decimal} ${f.completersNetRevenue?.currency}`,
      ]);
    }
    await poll(() => panelRows(page, "goals")).toEqual(expected);
    // The values themselves: no pageview, no (none) row. user-two's 60 USD goes, by first
    // touch, to its first visitor (the Google visit that opened the newsletter), not to the
    // daily id that signed up.
    expect(expected).toEqual([
      ["newsletter_open", "1", "1", "100.0%", "60.00 USD"],
      ["signup", "1", "1", "100.0%", "0.00 USD"],
    ]);
  });

  it("opens a channel's detail view by medium, term and content with Query's numbers", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`);
    await panelRows(page, "acquisition");
    await page
      .getByRole("button", { name: "Details of channel Email by medium, term and content" })
      .focus();
    await page.keyboard.press("Enter");
    const rows = page.locator("#panel-acquisition table.details tbody tr");
    await rows.first().waitFor();
    const r = await query({
      siteId: ctx.siteId,
      metrics: ["visitors", "net_revenue", "revenue_per_visitor"],
      dimensions: ["medium", "term", "content"],
      filters: [{ dimension: "channel", op: "is", values: ["Email"] }],
      period: PERIOD,
      model: "first_touch",
      currency: "USD",
      limit: 20,
    });
    const cells = await rows.evaluateAll((trs) =>
      trs.map((tr) => [...tr.children].map((c) => (c.textContent ?? "").trim())),
    );
    expect(cells).toEqual(
      r.rows.map((row) => [
        ...row.dimensions,
        ...["visitors", "net_revenue", "revenue_per_visitor"].map((m, i) =>
          shown(m, row.metrics[i]),
        ),
      ]),
    );
    expect(cells[0]?.slice(0, 3)).toEqual(["email", "(none)", "(none)"]);
  });

  it("draws a funnel defined on the page, kept in the URL, with Funnel's numbers", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`);
    await topRow(page);
    await page.getByLabel("Step 1 kind").selectOption("page_prefix");
    await page.getByLabel("Step 1 value").fill("/");
    await page.getByLabel("Step 2 value").fill("signup");
    await page.getByRole("button", { name: "Add a step" }).click();
    await page.getByLabel("Step 3 kind").selectOption("page");
    await page.getByLabel("Step 3 value").fill("/pricing");
    await page.getByRole("button", { name: "Remove step 3" }).click();
    await page.getByRole("button", { name: "Show the funnel" }).click();
    await poll(() => decodeURIComponent(new URL(page.url()).search)).toBe(
      `?site=${ctx.siteId}&period=7d&step=page_prefix:/&step=event:signup`,
    );
    const f = await funnel({
      siteId: ctx.siteId,
      steps: [
        { kind: "page_prefix", value: "/" },
        { kind: "event", value: "signup" },
      ],
      period: PERIOD,
      model: "first_touch",
      currency: "USD",
    });
    const rows = page.locator("#funnel-table tbody tr");
    const cells = () =>
      rows.evaluateAll((trs) =>
        trs.map((tr) => [...tr.children].map((c) => (c.textContent ?? "").trim())),
      );
    const first = Number(f.steps[0]?.visitors);
    const second = Number(f.steps[1]?.visitors);
    await poll(cells).toEqual([
      ["1. /", String(first), "–", "100.0%", "100.0%"],
      [
        "2. signup",
        String(second),
        `${first - second} (${(100 - (f.steps[1]?.conversionFromPrevious ?? 0)).toFixed(1)}%)`,
        `${f.steps[1]?.conversionFromPrevious.toFixed(1)}%`,
        `${f.steps[1]?.conversionOverall.toFixed(1)}%`,
      ],
    ]);
    expect([first, second]).toEqual([7, 1]);
    await expect(page.locator("#funnel-revenue").textContent()).resolves.toBe(
      `Net revenue of the visitors who completed every step: ${f.completersNetRevenue?.decimal} USD (first touch).`,
    );
    // A reload draws it again from the URL.
    await page.reload();
    await poll(cells).toHaveLength(2);
  });

  it("shows time to convert and the customers as Query answers them, and opens a customer's journey", async () => {
    const page = await open(`/dashboard?site=${ctx.siteId}&period=7d`);
    const spread = await query({
      siteId: ctx.siteId,
      metrics: ["paying_customers"],
      dimensions: ["days_to_first_payment"],
      period: PERIOD,
      model: "first_touch",
      currency: "USD",
      limit: 20,
    });
    const counts = new Map(
      spread.rows.map((r) => [r.dimensions[0], shown("paying_customers", r.metrics[0])]),
    );
    const table = page.locator("#ttc-table tbody tr");
    await table.first().waitFor();
    const shownCounts = await table.evaluateAll((trs) =>
      trs.map((tr) => (tr.lastElementChild?.textContent ?? "").trim()),
    );
    const buckets = ["0", "1", "2-3", "4-7", "8-14", "15-30", "31-60", "61-90", "91+"];
    expect(shownCounts).toEqual(buckets.map((b) => counts.get(b) ?? "0"));
    expect(shownCounts[0]).toBe("3");
    const medians = await query({
      siteId: ctx.siteId,
      metrics: ["median_days_to_first_payment", "median_visits_to_first_payment"],
      dimensions: ["channel"],
      period: PERIOD,
      model: "first_touch",
      currency: "USD",
      limit: 20,
    });
    const channelRows = page.locator("#ttc-channels tbody tr");
    await channelRows.first().waitFor();
    expect(
      await channelRows.evaluateAll((trs) =>
        trs.map((tr) => [...tr.children].map((c) => (c.textContent ?? "").trim())),
      ),
    ).toEqual(
      medians.rows.map((r) => [
        r.dimensions[0],
        shown("median_days_to_first_payment", r.metrics[0]),
        shown("median_visits_to_first_payment", r.metrics[1]),
      ]),
    );
    const customers = await query({
      siteId: ctx.siteId,
      metrics: ["net_revenue", "payments"],
      dimensions: ["customer"],
      period: PERIOD,
      model: "first_touch",
      currency: "USD",
      limit: 20,
    });
    const customerRows = page.locator("#customers-table tbody tr");
    await customerRows.first().waitFor();
    expect(
      await customerRows.evaluateAll((trs) =>
        trs.map((tr) => [...tr.children].map((c) => (c.textContent ?? "").trim())),
      ),
    ).toEqual(
      customers.rows.map((r) => [
        r.dimensions[0],
        shown("net_revenue", r.metrics[0]),
        shown("payments", r.metrics[1]),
      ]),
    );
    await page.getByRole("button", { name: "Open the journey of customer cus_two_visits" }).focus();
    await page.keyboard.press("Enter");
    await expect(page.getByRole("dialog").locator("h2").textContent()).resolves.toBe(
      "Customer cus_two_visits",
    );
    await page.keyboard.press("Escape");
    await page.getByRole("dialog").waitFor({ state: "detached" });
  });
});
