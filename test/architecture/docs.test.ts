/**
 * What README.md and docs/ state about the code stays true of it: the
 * configuration table lists every variable the server reads, with its real
 * default, and nothing else; relative links never climb with `../` and resolve inside the repository;
 * every repository path a doc names exists. Operators configure the service
 * from that table, and a stale path sends a reader to nothing.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { ROOT } from "../helpers/rpc-clients.js";

/** The user-facing documents: the README, every page of docs/, the examples' README. */
const DOCS = [
  "README.md",
  "examples/README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

const read = (doc: string) => readFileSync(join(ROOT, doc), "utf8");

/** `FOO_BAR` → `fooBar`, the Config key of a variable. */
const configKey = (variable: string) =>
  variable.toLowerCase().replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/** The rows of README's Configuration table: variable → the Default cell. */
function configurationTable(): Map<string, string> {
  const readme = read("README.md");
  const section = readme.slice(readme.indexOf("## Configuration"));
  const table = section.slice(0, section.indexOf("\n## "));
  const rows = new Map<string, string>();
  for (const match of table.matchAll(/^\| `([A-Z0-9_]+)` +\| ([^|]+?) +\|/gm)) {
    rows.set(match[1] as string, match[2] as string);
  }
  return rows;
}

/** A Default cell as the value loadConfig({}) gives: `x` → "x"; "unset" or prose → undefined. */
function documentedDefault(cell: string): string | undefined {
  const code = /^`([^`]*)`$/.exec(cell);
  return code ? code[1] : undefined;
}

describe("README's configuration table", () => {
  const rows = configurationTable();
  const defaults = loadConfig({}) as unknown as Record<string, unknown>;

  it("lists every setting the server reads, and nothing it does not read", () => {
    expect(rows.size).toBeGreaterThan(20);
    const documented = [...rows.keys()].map(configKey).sort();
    expect(documented).toEqual(Object.keys(defaults).sort());
  });

  it("gives each setting's real default", () => {
    for (const [variable, cell] of rows) {
      const actual = defaults[configKey(variable)];
      expect({ variable, default: documentedDefault(cell) }).toEqual({
        variable,
        default: actual === undefined ? undefined : String(actual),
      });
    }
  });
});

/** Relative link targets of a markdown document (images and links; anchors and URLs left out). */
function relativeLinks(text: string): string[] {
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1] as string)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith("#"))
    .map((target) => target.split("#")[0] as string);
}

/**
 * Repository paths a document names (`src/app.ts`, `test/helpers/`,
 * `proto/ingest/v1/*.proto`), not those under dist/ or URL paths.
 */
function namedPaths(text: string): string[] {
  const roots = "src|test|bench|tools|scripts|tracker|proto|gen|openapi|examples|docs";
  const pattern = new RegExp(`(?<![\\w./-])(?:${roots})/[\\w./*-]*`, "g");
  return [...text.matchAll(pattern)].map((m) => m[0].replace(/[.,]+$/, ""));
}

/** Whether a named path exists; a `*` stands for any file of its folder. */
function exists(path: string): boolean {
  if (!path.includes("*")) return existsSync(join(ROOT, path));
  const dir = join(ROOT, dirname(path));
  const name = new RegExp(`^${path.split("/").pop()?.replace(/\./g, "\\.").replace(/\*/g, ".*")}$`);
  return existsSync(dir) && readdirSync(dir).some((entry) => name.test(entry));
}

describe.each(DOCS)("%s", (doc) => {
  const text = read(doc);

  it("links only to files of this repository that exist", () => {
    for (const target of relativeLinks(text)) {
      // No `../` at all: a document read outside its folder (a package page, a copy) cannot follow it.
      expect({ target, climbs: target.startsWith("../") }).toEqual({ target, climbs: false });
      const path = resolve(ROOT, dirname(doc), target);
      expect({ target, inside: !relative(ROOT, path).startsWith("..") }).toEqual({
        target,
        inside: true,
      });
      expect({ target, exists: existsSync(path) }).toEqual({ target, exists: true });
    }
  });

  it("names only repository paths that exist", () => {
    for (const path of namedPaths(text)) {
      expect({ path, exists: exists(path) }).toEqual({ path, exists: true });
    }
  });
});
