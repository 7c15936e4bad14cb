/**
 * The dashboard's tests in Chromium (test/dashboard/dashboard-*.test.ts):
 * one browser per file (test/helpers/chromium.ts), a fresh profile per page
 * with the page's clock fixed at the server's, sign-in with a token. Every
 * page error, console error (but Chromium's own line for an answer of
 * status 401, which the wrong-token test expects) and request that leaves
 * the service's origin is collected, and each test ends by checking there
 * were none. A browser that cannot start fails every test with the reason
 * (never a skip).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import type { Clock } from "../../src/domain/clock.js";
import { launchChromium } from "./chromium.js";

export interface DashboardPageOptions {
  /** Viewport width (1280) and height (900). */
  width?: number;
  height?: number;
  colorScheme?: "light" | "dark";
  /** Signs in with this token (the admin token or a reports key) once the page is open. */
  token?: string;
  userAgent?: string;
}

export interface DashboardBrowser {
  /**
   * A new tab of a new profile (en-GB) at `target`: a path on the server, or
   * a whole URL (then requests must stay on its origin); signed in with
   * `token` if given.
   */
  open(target: string, options?: DashboardPageOptions): Promise<Page>;
}

/** Fills the sign-in form (`site` in its site field when given) and sends it. */
export async function signIn(page: Page, token: string, site?: string): Promise<void> {
  await page.getByLabel("Token").fill(token);
  if (site !== undefined) await page.getByLabel("Site id").fill(site);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/**
 * Registers the browser's hooks in the enclosing suite and returns how to
 * open a page. `server` (useTestServer's context, read in the tests) gives
 * the paths' origin and the clock the pages' clocks are fixed at; without
 * it, pages open whole URLs on the browser's own clock (child processes).
 */
export function useDashboardBrowser(server?: {
  readonly url: string;
  readonly clock: Clock;
}): DashboardBrowser {
  let browser: Browser | undefined;
  let launchError: unknown;
  let contexts: BrowserContext[] = [];
  let pageErrors: string[] = [];
  /** Requests that left the service's origin: there must be none. */
  let foreign: string[] = [];

  beforeAll(async () => {
    try {
      browser = await launchChromium();
    } catch (err) {
      // The error names the binary tried and how it was found (chromium.ts).
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

  return {
    async open(target, options = {}) {
      if (!browser) throw launchError;
      const url = server && target.startsWith("/") ? `${server.url}${target}` : target;
      const origin = new URL(url).origin;
      const context = await browser.newContext({
        viewport: { width: options.width ?? 1280, height: options.height ?? 900 },
        colorScheme: options.colorScheme ?? "light",
        locale: "en-GB",
        ...(options.userAgent ? { userAgent: options.userAgent } : {}),
      });
      contexts.push(context);
      const page = await context.newPage();
      if (server) await page.clock.setFixedTime(server.clock.now());
      page.on("pageerror", (e) => pageErrors.push(e.message));
      page.on("console", (m) => {
        if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) {
          pageErrors.push(m.text());
        }
      });
      page.on("request", (r) => {
        if (new URL(r.url()).origin !== origin) foreign.push(r.url());
      });
      await page.goto(url);
      if (options.token !== undefined) await signIn(page, options.token);
      return page;
    },
  };
}
