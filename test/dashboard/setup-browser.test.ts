/**
 * The first run as a self-hoster meets it: the real service (a child
 * process) on an empty store prints one setup URL; Chromium opens it, fills
 * the form and lands on a signed-in dashboard. The URL then refuses a second
 * use, a restart with still no account prints a new one (the old one is
 * refused), the output holds no secret but that URL, and the sign-in page
 * shows the service's own reason for a refusal (ADMIN_TOKEN unset). The
 * expired token (an injected clock) is test/foundation/first-run.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChildServer, startChildServer } from "../helpers/child-server.js";
import { DESKTOP_UA } from "../helpers/chromium.js";
import { useDashboardBrowser } from "../helpers/dashboard-browser.js";
import { ROOT } from "../helpers/rpc-clients.js";
import { postJson } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";

declare const sessionStorage: { getItem(key: string): string | null };

const ARTIFACTS = join(ROOT, "test-artifacts", "dashboard");
const LINE =
  /^No account yet: open (http:\/\/127\.0\.0\.1:\d+\/dashboard\/setup\?token=[A-Za-z0-9_-]{43}) to create the owner's account, first site and dashboard key \(one use, valid 60 minutes; a restart prints a new link\)\.$/m;
const USED = "this setup link has already been used: sign in with the reports key it created";
const INVALID =
  "this setup link is not valid: open the setup URL the server printed at its last start";

let dir: string;
const children: ChildServer[] = [];
const dashboard = useDashboardBrowser();

/** The service on `db` with no ADMIN_TOKEN, its info logs on, as `npm start` runs it. */
async function start(db: string): Promise<ChildServer> {
  const child = await startChildServer({
    STORE_URL: `sqlite:${join(dir, db)}`,
    ADMIN_TOKEN: "",
    LOG_LEVEL: "info",
  });
  children.push(child);
  return child;
}

async function stop(child: ChildServer): Promise<void> {
  child.proc.kill("SIGTERM");
  await child.exited;
}

/** The setup URL the child printed (it prints it right after listening). */
async function setupUrlOf(child: ChildServer): Promise<string> {
  for (let i = 0; i < 400; i++) {
    const m = LINE.exec(child.output());
    if (m?.[1]) return m[1];
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no setup URL in the output:\n${child.output()}`);
}

/** A new tab of a new profile at `url`, as a desktop browser. */
const open = (url: string) => dashboard.open(url, { userAgent: DESKTOP_UA });

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ingest-first-run-"));
  mkdirSync(ARTIFACTS, { recursive: true });
});
afterAll(async () => {
  for (const c of children) if (c.proc.exitCode === null) await stop(c);
  rmSync(dir, { recursive: true, force: true });
});

describe("first run in Chromium", () => {
  let child: ChildServer;
  let setupUrl: string;
  let reportsKey: string;

  beforeAll(async () => {
    child = await start("first.sqlite");
    setupUrl = await setupUrlOf(child);
  });

  it("prints the setup URL once, as one plain line", () => {
    expect(child.output().match(new RegExp(LINE.source, "gm"))).toHaveLength(1);
  });

  it("creates the owner's account, site and reports key on the page and lands signed in", async () => {
    const page = await open(setupUrl);
    await page.getByLabel("Your email").fill("owner@shop.example");
    // The token is dropped from the address bar and history as soon as the page has it.
    expect(page.url()).toBe(`${child.url}/dashboard/setup`);
    await page.getByLabel("Account name").fill("My shop");
    await page.getByLabel("Site hostnames").fill("shop.example, www.shop.example");
    await page.getByLabel("Time zone").selectOption("Europe/Paris");
    await page.screenshot({ path: join(ARTIFACTS, "setup-form.png") });
    await page.getByRole("button", { name: "Create and sign in" }).click();
    const key = page.locator("#reports-key");
    await key.waitFor();
    reportsKey = (await key.textContent()) ?? "";
    expect(reportsKey).toMatch(/^mk_live_[0-9a-f]{48}$/);
    const siteId = (await page.locator("#site-id").textContent()) ?? "";
    expect(siteId).toMatch(/^site_[0-9a-f]{24}$/);
    expect(await page.locator("#owner-user-id").textContent()).toMatch(/^user_[0-9a-f]{24}$/);
    await page.screenshot({ path: join(ARTIFACTS, "setup-done.png") });

    const overview = page.waitForResponse(
      (r) => r.url().endsWith("/ingest.v1.ReportsService/Query") && r.status() === 200,
    );
    await page.getByRole("button", { name: "Open the dashboard" }).click();
    await overview;
    expect(page.url()).toMatch(new RegExp(`/dashboard\\?site=${siteId}(&|$)`));
    await expect(page.getByLabel("Token").count()).resolves.toBe(0);
    expect(await page.evaluate(() => sessionStorage.getItem("ingest.dashboard.token"))).toBe(
      reportsKey,
    );
    await page.screenshot({ path: join(ARTIFACTS, "setup-signed-in.png") });
  });

  it("refuses the same URL a second time, on the page and over HTTP", async () => {
    const page = await open(setupUrl);
    const alert = page.getByRole("alert");
    await alert.waitFor();
    await expect(alert.textContent()).resolves.toBe(USED);
    const token = new URL(setupUrl).searchParams.get("token");
    const r = await postJson(`${child.url}/dashboard/setup`, {
      token,
      owner_email: "someone@else.example",
      hostnames: ["else.example"],
    });
    expect([r.status, r.body]).toEqual([
      401,
      { ok: false, error: { code: "unauthorized", message: USED } },
    ]);
  });

  it("keeps every secret but the setup URL out of the output", () => {
    const out = child.output();
    expect(out).not.toContain(reportsKey);
    expect(out).not.toContain("owner@shop.example");
    const token = new URL(setupUrl).searchParams.get("token") as string;
    expect(out.split(token)).toHaveLength(2);
  });

  it("the sign-in page shows the service's own reason: ADMIN_TOKEN is not set", async () => {
    const page = await open(`${child.url}/dashboard?site=site_x`);
    await page.getByLabel("Token").fill("some-token-someone-typed");
    await page.getByRole("button", { name: "Sign in" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    await expect(alert.textContent()).resolves.toBe(
      "This token was not accepted: check it (a reports key or the service's ADMIN_TOKEN) and sign in again. The service said: admin API is disabled: ADMIN_TOKEN is not set.",
    );
  });
});

// Two and three starts of the real process: each takes seconds on a loaded machine.
describe("first run across a restart", { timeout: scaled(120_000) }, () => {
  it("prints a new URL when restarted with still no account; the old one is refused", async () => {
    const first = await start("restart.sqlite");
    const before = await setupUrlOf(first);
    await stop(first);
    const second = await start("restart.sqlite");
    const after = await setupUrlOf(second);
    expect(after).not.toBe(before);
    const tokenOf = (u: string) => new URL(u).searchParams.get("token");
    const old = await postJson(`${second.url}/dashboard/setup/check`, { token: tokenOf(before) });
    expect([old.status, old.body]).toEqual([
      401,
      { ok: false, error: { code: "unauthorized", message: INVALID } },
    ]);
    const now = await postJson(`${second.url}/dashboard/setup/check`, { token: tokenOf(after) });
    expect(now.status).toBe(204);
    await stop(second);
  });

  it("prints nothing once an account exists", async () => {
    const child = await start("restart.sqlite");
    await postJson(`${child.url}/dashboard/setup`, {
      token: new URL(await setupUrlOf(child)).searchParams.get("token"),
      owner_email: "owner@shop.example",
      hostnames: ["shop.example"],
    });
    await stop(child);
    const again = await start("restart.sqlite");
    // The listening line comes first; the setup line would follow it at once.
    for (let i = 0; i < 400 && !again.output().includes('"msg":"listening"'); i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    await stop(again);
    expect(again.output()).toContain('"msg":"listening"');
    expect(again.output()).not.toContain("No account yet");
  });
});
