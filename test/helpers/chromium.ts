/**
 * Debian's Chromium driven by playwright-core with the flags and user agent
 * of the browser tests (see docs/tracker.md, Tests): a plain browser, or a
 * persistent profile whose cookies outlive a restart on the same user data
 * directory.
 */
import { type Browser, type BrowserContext, chromium } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";

/** A normal desktop user agent: the default one says HeadlessChrome, which the bot filter drops. */
export const DESKTOP_UA =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";

export const CHROMIUM_ARGS = [
  "--disable-blink-features=AutomationControlled",
  "--disable-features=LocalNetworkAccessChecks",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Our environment without libfaketime. The suite is also run under faketime to
 * check the server at odd hours (docs/events.md, Time), and Chromium spins
 * under its LD_PRELOAD; the page's own clock is not under test.
 */
export function browserEnv(): Record<string, string | undefined> {
  return Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k !== "LD_PRELOAD" && !k.startsWith("FAKETIME")),
  );
}

/** Chromium with a fresh profile per context. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, env: browserEnv(), args: CHROMIUM_ARGS });
}

/** Chromium on the profile in `userDataDir` (created when missing). */
export function launchPersistentChromium(userDataDir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    env: browserEnv(),
    args: CHROMIUM_ARGS,
    headless: true,
    userAgent: DESKTOP_UA,
    viewport: { width: 1280, height: 800 },
    locale: "en-GB",
  });
}
