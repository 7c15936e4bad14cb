/**
 * Retakes the dashboard screenshots in docs/ from the demo's data:
 * `npm run screenshots`. A fresh SQLite store in a temporary directory gets
 * `npm run demo`'s month (the same code, src/cli/admin.ts), the service is
 * started on it (from source, a free port), and Chromium (CHROMIUM_PATH, else
 * /usr/bin/chromium) signs in with the admin token and the demo's site and
 * photographs the last 30 days with the demo's funnel: docs/dashboard.png
 * (1280 px, light), dashboard-1366-dark.png, dashboard-phone.png and
 * dashboard-phone-dark.png (375 px; each the whole page) and docs/setup.png (the first run's setup page, on an empty store).
 * Look at them before committing.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const ROOT = join(import.meta.dirname, "..");
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const UA =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** The service on `storeUrl`; resolves once /readyz answers, with its output so far. */
async function serve(
  env: Record<string, string>,
): Promise<{ proc: ChildProcess; url: string; out: () => string }> {
  const port = await freePort();
  const proc = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: ROOT,
    env: { ...process.env, HOST: "127.0.0.1", PORT: String(port), LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  proc.stdout?.on("data", (d) => {
    out += d;
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 3000; i++) {
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return { proc, url, out: () => out };
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill();
  throw new Error("the service did not get ready");
}

const dir = mkdtempSync(join(tmpdir(), "ingest-screenshots-"));
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
try {
  // The setup page: an empty store prints its link.
  const empty = await serve({ STORE_URL: `sqlite:${join(dir, "empty.sqlite")}`, ADMIN_TOKEN: "" });
  try {
    let link: string | undefined;
    for (let i = 0; i < 100 && !link; i++) {
      link = /open (http:\/\/\S+\/dashboard\/setup\?token=\S+) to create/.exec(empty.out())?.[1];
      if (!link) await new Promise((r) => setTimeout(r, 100));
    }
    if (!link) throw new Error("no setup link printed");
    const page = await browser.newPage({ viewport: { width: 1280, height: 760 }, userAgent: UA });
    await page.goto(link);
    await page.getByLabel("Your email").fill("owner@shop.example");
    await page.getByLabel("Site hostnames").fill("shop.example www.shop.example");
    await page.getByLabel("Time zone").selectOption("Europe/Paris");
    await page.screenshot({ path: join(ROOT, "docs", "setup.png") });
    await page.close();
  } finally {
    empty.proc.kill("SIGTERM");
  }

  // The dashboard: the demo's month.
  const storeUrl = `sqlite:${join(dir, "demo.sqlite")}`;
  const exports = execFileSync("npm", ["run", "--silent", "demo"], {
    cwd: ROOT,
    env: { ...process.env, STORE_URL: storeUrl, ADMIN_TOKEN: "" },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const vars = Object.fromEntries(
    exports
      .trim()
      .replace(/^export /, "")
      .split(" ")
      .map((kv) => kv.split("=") as [string, string]),
  );
  const server = await serve({ STORE_URL: storeUrl, ADMIN_TOKEN: vars.ADMIN_TOKEN as string });
  try {
    // Desktop 1280 and 1366 px, phone 375 px, light and dark; the demo's funnel in the URL.
    const shots: [string, number, "light" | "dark"][] = [
      ["dashboard.png", 1280, "light"],
      ["dashboard-1366-dark.png", 1366, "dark"],
      ["dashboard-phone.png", 375, "light"],
      ["dashboard-phone-dark.png", 375, "dark"],
    ];
    for (const [file, width, colorScheme] of shots) {
      const page = await browser.newPage({
        viewport: { width, height: 900 },
        userAgent: UA,
        colorScheme,
      });
      await page.goto(
        `${server.url}/dashboard?site=${vars.SITE}&period=30d&step=page:/pricing&step=event:signup&step=event:checkout`,
      );
      await page.getByLabel("Token").fill(vars.ADMIN_TOKEN as string);
      await page.getByRole("button", { name: "Sign in" }).click();
      // The main chart is drawn once its answer is in; the rest answer one by one:
      // photograph the page once nothing is still loading.
      await page.locator("#metric-chart canvas").waitFor({ timeout: 120_000 });
      await page.locator("#customers-table").waitFor({ timeout: 120_000 });
      // (Polled from here: the page's CSP refuses a string evaluated in it.)
      for (let i = 0; i < 1200; i++) {
        const busy =
          (await page.locator("main [role=status]").count()) +
          (await page.locator("main td", { hasText: /^…$/ }).count());
        if (busy === 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      await page.screenshot({ path: join(ROOT, "docs", file), fullPage: true });
      await page.close();
    }
  } finally {
    server.proc.kill("SIGTERM");
  }
} finally {
  await browser.close();
  rmSync(dir, { recursive: true, force: true });
}
