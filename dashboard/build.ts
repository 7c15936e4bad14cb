/**
 * Bundles the dashboard (dashboard/src) into dist/dashboard/app.js and
 * app.css with esbuild: preact, uPlot and connect-web in one minified ES2020
 * module, nothing loaded from elsewhere. Run by `npm run build` and by the
 * tests' global set-up, like the tracker (tracker/build.ts).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";

const ROOT = join(import.meta.dirname, "..");
/** Where the server looks for the bundle (src/http/dashboard/dashboard-bundle.ts). */
export const DASHBOARD_DIR = join(ROOT, "dist", "dashboard");

/** The built files: their text by name (app.js, app.css). */
export type DashboardFiles = Record<"app.js" | "app.css" | "setup.js", string>;

/** Builds the bundle into `outdir` and returns its files. */
export async function buildDashboard(outdir = DASHBOARD_DIR): Promise<DashboardFiles> {
  const result = await build({
    entryPoints: [join(ROOT, "dashboard", "src", "main.tsx")],
    bundle: true,
    minify: true,
    format: "esm",
    target: ["es2020"],
    jsx: "automatic",
    jsxImportSource: "preact",
    legalComments: "none",
    outdir: "/out",
    entryNames: "app",
    write: false,
    logLevel: "silent",
  });
  const files: Partial<DashboardFiles> = {};
  for (const f of result.outputFiles) {
    const name = f.path.endsWith(".css") ? "app.css" : "app.js";
    files[name] = f.text;
  }
  // The first run's setup page (dashboard/setup/): a bundle of its own, styled by app.css.
  const setup = await build({
    entryPoints: [join(ROOT, "dashboard", "setup", "main.tsx")],
    bundle: true,
    minify: true,
    format: "esm",
    target: ["es2020"],
    jsx: "automatic",
    jsxImportSource: "preact",
    legalComments: "none",
    write: false,
    logLevel: "silent",
  });
  mkdirSync(outdir, { recursive: true });
  const built = {
    "app.js": files["app.js"] ?? "",
    "app.css": files["app.css"] ?? "",
    "setup.js": setup.outputFiles[0]?.text ?? "",
  };
  for (const [name, text] of Object.entries(built)) writeFileSync(join(outdir, name), text);
  return built;
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  await buildDashboard();
}
