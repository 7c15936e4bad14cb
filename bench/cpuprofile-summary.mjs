/**
 * Summarises V8 .cpuprofile files (from `node --cpu-prof`): self time by
 * function + script, and by package (node_modules/<pkg>, node: internals,
 * the service's own dist/ files), highest first.
 *
 *   node bench/cpuprofile-summary.mjs <file-or-dir>… [--top 40]
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";

const args = process.argv.slice(2);
const topIdx = args.indexOf("--top");
const TOP = topIdx >= 0 ? Number(args.splice(topIdx, 2)[1]) : 40;
const files = args.flatMap((a) =>
  statSync(a).isDirectory()
    ? readdirSync(a)
        .filter((f) => f.endsWith(".cpuprofile"))
        .map((f) => join(a, f))
    : [a],
);
if (files.length === 0) {
  process.stderr.write("usage: node bench/cpuprofile-summary.mjs <file-or-dir>… [--top N]\n");
  process.exit(2);
}

/** Where a script belongs: an npm package, node internals, or the service's own code. */
function ownerOf(url) {
  if (!url) return "(native/V8)";
  if (url.startsWith("node:")) return "node internals";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/");
    return rest[0].startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const dist = url.indexOf("/dist/");
  if (dist >= 0)
    return `service ${url
      .slice(dist + 6)
      .split("/")
      .slice(0, 2)
      .join("/")}`;
  return url.replace(/^file:\/\//, "");
}

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  // Self time: each sample is attributed to its leaf node; deltas are the time between samples.
  const selfUs = new Map();
  const { samples, timeDeltas } = profile;
  for (let i = 0; i < samples.length; i++) {
    const dt = timeDeltas[i + 1] ?? 0;
    selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + Math.max(0, dt));
  }
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const byFn = new Map();
  const byOwner = new Map();
  for (const [id, us] of selfUs) {
    const { callFrame: cf } = byId.get(id);
    const short = cf.url
      ? cf.url.replace(/^.*node_modules\//, "").replace(/^.*\/dist\//, "dist/")
      : "";
    const fnKey = `${cf.functionName || "(anonymous)"}  ${short}${cf.url ? `:${cf.lineNumber + 1}` : ""}`;
    byFn.set(fnKey, (byFn.get(fnKey) ?? 0) + us);
    const owner = ["(idle)", "(program)", "(garbage collector)"].includes(cf.functionName)
      ? cf.functionName
      : ownerOf(cf.url);
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + us);
  }
  // Inclusive time: a node's self time plus its descendants', counted once per function per stack.
  const inclusive = new Map();
  const fnKeyOf = (n) => {
    const cf = n.callFrame;
    const short = cf.url
      ? cf.url.replace(/^.*node_modules\//, "").replace(/^.*\/dist\//, "dist/")
      : "";
    return `${cf.functionName || "(anonymous)"}  ${short}${cf.url ? `:${cf.lineNumber + 1}` : ""}`;
  };
  const walk = (id, onStack) => {
    const n = byId.get(id);
    const key = fnKeyOf(n);
    let sub = selfUs.get(id) ?? 0;
    const fresh = !onStack.has(key);
    if (fresh) onStack.add(key);
    for (const c of n.children ?? []) sub += walk(c, onStack);
    if (fresh) {
      onStack.delete(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + sub);
    }
    return sub;
  };
  walk(profile.nodes[0].id, new Set());
  const pct = (us) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
  const ms = (us) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
  process.stdout.write(`\n## ${basename(file)}: ${(total / 1e6).toFixed(1)} s sampled\n\n`);
  process.stdout.write("By owner (self time):\n");
  for (const [k, us] of [...byOwner].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
    process.stdout.write(`${pct(us)} ${ms(us)}  ${k}\n`);
  }
  process.stdout.write(`\nTop ${TOP} functions (self time):\n`);
  for (const [k, us] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
    process.stdout.write(`${pct(us)} ${ms(us)}  ${k}\n`);
  }
  if (process.env.INCLUSIVE) {
    process.stdout.write(`\nTop ${TOP} functions (inclusive time):\n`);
    for (const [k, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
      process.stdout.write(`${pct(us)} ${ms(us)}  ${k}\n`);
    }
  }
}
