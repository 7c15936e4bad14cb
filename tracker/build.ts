/**
 * Bundles the tracking script (tracker/src) into dist/tracker/script.js with
 * esbuild: one minified IIFE (ES2020: browsers since 2020). Run by
 * `npm run build` (so by `npm start`) and by the tests' global set-up.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { build } from "esbuild";

const ROOT = join(import.meta.dirname, "..");
/** Where the server looks for the bundle (src/http/tracker-script.ts). */
export const BUNDLE_PATH = join(ROOT, "dist", "tracker", "script.js");

/** Builds the bundle and returns its text. */
export async function buildTracker(outfile = BUNDLE_PATH): Promise<string> {
  const result = await build({
    entryPoints: [join(ROOT, "tracker", "src", "main.ts")],
    bundle: true,
    minify: true,
    format: "iife",
    target: ["es2020"],
    legalComments: "none",
    write: false,
    logLevel: "silent",
  });
  const text = result.outputFiles[0]?.text ?? "";
  mkdirSync(dirname(outfile), { recursive: true });
  writeFileSync(outfile, text);
  return text;
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  await buildTracker();
}
