/**
 * The domain owns its port and depends on no door and no adapter: nothing in
 * src/domain may import src/store (adapters and their helpers), src/http,
 * src/rpc, src/cli, the wiring (src/app.ts, src/main.ts), nor the frameworks
 * and drivers those wrap. Adapters depend on the domain, never the reverse.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../helpers/rpc-clients.js";

const DOMAIN = join(ROOT, "src", "domain");

/** Source folders and files the domain must not reach. */
const FORBIDDEN_PATHS = [
  "src/store/",
  "src/http/",
  "src/rpc/",
  "src/cli/",
  "src/app.ts",
  "src/main.ts",
];
/** Packages that belong to doors and adapters. */
const FORBIDDEN_PACKAGES = [
  /^fastify$/,
  /^@fastify\//,
  /^@connectrpc\//,
  /^@bufbuild\//,
  /^mongodb$/,
  /^better-sqlite3$/,
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

/** Every module a file names: static imports, re-exports, dynamic imports. */
function specifiers(text: string): string[] {
  const found: string[] = [];
  const patterns = [
    /^\s*import\s+(?:type\s+)?(?:[^'"]*?\s+from\s+)?["']([^"']+)["']/gm,
    /^\s*export\s+(?:type\s+)?(?:\*|\{[^}]*\})(?:\s+as\s+\w+)?\s+from\s+["']([^"']+)["']/gm,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const p of patterns) for (const m of text.matchAll(p)) found.push(m[1] as string);
  return found;
}

/** What is wrong with `file` importing `spec`, or undefined. */
function violation(file: string, spec: string): string | undefined {
  if (spec.startsWith(".")) {
    const target = relative(ROOT, resolve(dirname(file), spec)).replaceAll("\\", "/");
    const bad = FORBIDDEN_PATHS.find((p) =>
      p.endsWith("/") ? target.startsWith(p) : target.replace(/\.js$/, ".ts") === p,
    );
    return bad && `${relative(ROOT, file)} imports ${spec} (${bad})`;
  }
  return FORBIDDEN_PACKAGES.some((p) => p.test(spec))
    ? `${relative(ROOT, file)} imports the package ${spec}`
    : undefined;
}

describe("architecture", () => {
  it("src/domain imports no adapter, door, wiring or driver", () => {
    const files = sourceFiles(DOMAIN);
    expect(files.length).toBeGreaterThan(20);
    const problems = files.flatMap((f) =>
      specifiers(readFileSync(f, "utf8")).flatMap((s) => violation(f, s) ?? []),
    );
    expect(problems).toEqual([]);
  });

  it("the check catches each way of reaching an adapter or a door", () => {
    const file = join(DOMAIN, "events", "record-events.ts");
    const text = [
      'import type { Store } from "../../store/port.js";',
      'import { guardStore } from "../../store/guarded-store.js";',
      'export * from "../../http/envelope.js";',
      'const m = await import("../../store/mongo/mongo-store.js");',
      'import { createApp } from "../../app.js";',
      'import { MongoClient } from "mongodb";',
      'import Fastify from "fastify";',
      'import { ok } from "./validate-events.js";',
      'import { Plan } from "../plans.js";',
    ].join("\n");
    const problems = specifiers(text).flatMap((s) => violation(file, s) ?? []);
    expect(problems).toHaveLength(7);
  });
});
