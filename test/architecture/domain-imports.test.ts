/**
 * The floors of src/ (docs/architecture.md, "Floors"): the domain owns its
 * port and depends on no door and no adapter; the store adapters depend on
 * the domain, never on a door; the two doors' folders, src/http and src/rpc,
 * never import each other (what both need lives below them, in src/edge or
 * src/lib); src/edge and src/lib import no door; only the wiring (src/app.ts,
 * src/server.ts, src/services.ts, src/main.ts) sees everything.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../helpers/rpc-clients.js";

const SRC = join(ROOT, "src");
const WIRING = ["src/app.ts", "src/main.ts", "src/server.ts", "src/services.ts"];
const DOORS = ["src/http/", "src/rpc/", "src/cli/"];

/** A floor and what it must not reach. */
interface Rule {
  /** The folder whose files the rule reads. */
  folder: string;
  /** Source folders (ending in /) and files it must not import. */
  forbiddenPaths: string[];
  /** Packages it must not import. */
  forbiddenPackages: RegExp[];
}

const RULES: Rule[] = [
  {
    folder: "src/domain/",
    forbiddenPaths: ["src/store/", "src/edge/", "src/metrics/", ...DOORS, ...WIRING],
    forbiddenPackages: [
      /^fastify$/,
      /^@fastify\//,
      /^@connectrpc\//,
      /^@bufbuild\//,
      /^mongodb$/,
      /^better-sqlite3$/,
    ],
  },
  {
    folder: "src/store/",
    forbiddenPaths: ["src/edge/", ...DOORS, ...WIRING],
    forbiddenPackages: [/^fastify$/, /^@fastify\//, /^@connectrpc\//],
  },
  { folder: "src/http/", forbiddenPaths: ["src/rpc/", ...WIRING], forbiddenPackages: [] },
  { folder: "src/rpc/", forbiddenPaths: ["src/http/", ...WIRING], forbiddenPackages: [] },
  { folder: "src/edge/", forbiddenPaths: [...DOORS, ...WIRING], forbiddenPackages: [] },
  { folder: "src/lib/", forbiddenPaths: [...DOORS, "src/edge/", ...WIRING], forbiddenPackages: [] },
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

/** What is wrong with `file` importing `spec` under `rule`, or undefined. */
function violation(rule: Rule, file: string, spec: string): string | undefined {
  if (spec.startsWith(".")) {
    const target = relative(ROOT, resolve(dirname(file), spec)).replaceAll("\\", "/");
    const bad = rule.forbiddenPaths.find((p) =>
      p.endsWith("/") ? target.startsWith(p) : target.replace(/\.js$/, ".ts") === p,
    );
    return bad && `${relative(ROOT, file)} imports ${spec} (${bad})`;
  }
  return rule.forbiddenPackages.some((p) => p.test(spec))
    ? `${relative(ROOT, file)} imports the package ${spec}`
    : undefined;
}

function problemsOf(rule: Rule): string[] {
  const files = sourceFiles(join(ROOT, rule.folder));
  expect(files.length, rule.folder).toBeGreaterThan(0);
  return files.flatMap((f) =>
    specifiers(readFileSync(f, "utf8")).flatMap((s) => violation(rule, f, s) ?? []),
  );
}

const ruleOf = (folder: string) => RULES.find((r) => r.folder === folder) as Rule;

describe("architecture", () => {
  it("src/domain imports no adapter, door, wiring or driver", () => {
    expect(sourceFiles(join(SRC, "domain")).length).toBeGreaterThan(20);
    expect(problemsOf(ruleOf("src/domain/"))).toEqual([]);
  });

  it("the store adapters import no door, no edge and no wiring", () => {
    expect(problemsOf(ruleOf("src/store/"))).toEqual([]);
  });

  it("src/http and src/rpc never import each other, nor the wiring", () => {
    expect(problemsOf(ruleOf("src/http/"))).toEqual([]);
    expect(problemsOf(ruleOf("src/rpc/"))).toEqual([]);
  });

  it("src/edge and src/lib, below the doors, import no door", () => {
    expect(problemsOf(ruleOf("src/edge/"))).toEqual([]);
    expect(problemsOf(ruleOf("src/lib/"))).toEqual([]);
  });

  it("the check catches each way of reaching an adapter or a door", () => {
    const file = join(SRC, "domain", "events", "record-events.ts");
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
    const problems = specifiers(text).flatMap(
      (s) => violation(ruleOf("src/domain/"), file, s) ?? [],
    );
    expect(problems).toHaveLength(7);
  });

  it("the check catches a door importing the other door or the wiring", () => {
    const rest = join(SRC, "http", "rest", "rest-door.ts");
    const rpc = join(SRC, "rpc", "rpc-door.ts");
    const fromRest = [
      'import { x } from "../../rpc/connect-errors.js";',
      'import type { Services } from "../../services.js";',
    ];
    const fromRpc = [
      'import { sendError } from "../http/envelope.js";',
      'import { ok } from "../edge/door-errors.js";',
    ];
    expect(
      specifiers(fromRest.join("\n")).flatMap((s) => violation(ruleOf("src/http/"), rest, s) ?? []),
    ).toHaveLength(2);
    expect(
      specifiers(fromRpc.join("\n")).flatMap((s) => violation(ruleOf("src/rpc/"), rpc, s) ?? []),
    ).toHaveLength(1);
  });
});
