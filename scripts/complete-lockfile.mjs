#!/usr/bin/env node
/**
 * The npm registry these machines reach does not mirror every platform build
 * of a package (e.g. @biomejs/cli-darwin-arm64). `npm install` then leaves
 * those optional dependencies out of package-lock.json, and `npm ci` refuses
 * the lock as out of sync. This adds the missing optional platform packages
 * as lock entries whose os/cpu/libc say where they apply, so `npm ci` skips
 * them here as it would any other platform's build. Run after `npm install`.
 */
import { readFileSync, writeFileSync } from "node:fs";

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const packages = lock.packages;

const OS = ["android", "darwin", "linux", "win32", "freebsd", "openbsd", "netbsd", "sunos", "aix"];
const CPU = {
  arm64: "arm64",
  x64: "x64",
  armv7: "arm",
  arm: "arm",
  ia32: "ia32",
  ppc64: "ppc64",
  s390x: "s390x",
};

/** os, cpu and libc from a platform package name such as cli-linux-x64-musl or buf-win32-arm64. */
function platformOf(name) {
  const parts = name.split("/").pop().split("-");
  const os = parts.find((p) => OS.includes(p));
  const cpuPart = parts.find((p) => p in CPU);
  if (!os || !cpuPart) return undefined;
  const out = { os: [os], cpu: [CPU[cpuPart]] };
  if (parts.includes("musl")) out.libc = ["musl"];
  else if (os === "linux") out.libc = ["glibc"];
  return out;
}

let added = 0;
for (const [key, entry] of Object.entries(packages)) {
  if (!key.startsWith("node_modules/") || !entry.optionalDependencies) continue;
  const base = key.slice(0, key.lastIndexOf("node_modules/"));
  for (const [dep, version] of Object.entries(entry.optionalDependencies)) {
    const depKey = `${base}node_modules/${dep}`;
    if (packages[depKey] || packages[`node_modules/${dep}`]) continue;
    const platform = platformOf(dep);
    if (!platform) continue;
    packages[depKey] = {
      version,
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      ...platform,
    };
    added += 1;
  }
}

writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: added ${added} optional platform entr${added === 1 ? "y" : "ies"}`);
