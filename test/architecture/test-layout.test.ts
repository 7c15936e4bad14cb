/**
 * Where tests and their support live (test/README.md): support code only in
 * test/helpers/, unit tests in test/internals/ at the path of the src/ module
 * they test, and no test reaching into another test's folder. A helper left
 * next to its first user gets imported across features; a unit test whose
 * module moved would keep testing a path nobody reads.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../helpers/rpc-clients.js";

const TEST = join(ROOT, "test");

/** Every file below `dir`, as paths relative to the repository. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

const files = filesUnder(TEST);
const isTest = (file: string) => file.endsWith(".test.ts");
/**
 * A store contract suite: support code kept next to the runners that apply it
 * to each adapter (test/store/contract/, test/store/<part>-contract.ts).
 */
const isContractSuite = (file: string) =>
  /^test\/store\/(contract(\.ts$|\/)|[a-z-]+-contract\.ts$)/.test(file);

/** The relative modules a file imports (static imports and re-exports), as repository paths of their sources. */
function relativeImports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  return [...text.matchAll(/^(?:import|export)[^;]*?from "(\.{1,2}\/[^"]+)";/gms)].map((m) =>
    relative(ROOT, resolve(dirname(join(ROOT, file)), m[1] as string)).replace(/\.js$/, ".ts"),
  );
}

describe("test layout", () => {
  it("keeps support code in test/helpers/ (the store contract suites aside)", () => {
    const stray = files.filter(
      (f) =>
        /\.(ts|mjs|js)$/.test(f) &&
        !isTest(f) &&
        !f.startsWith("test/helpers/") &&
        !isContractSuite(f),
    );
    expect(stray).toEqual([]);
  });

  it("puts each unit test at the path of its src/ module", () => {
    const orphans = files
      .filter((f) => f.startsWith("test/internals/") && isTest(f))
      .filter(
        (f) =>
          !existsSync(
            join(ROOT, f.replace(/^test\/internals\//, "src/").replace(/\.test\.ts$/, ".ts")),
          ),
      );
    expect(orphans).toEqual([]);
  });

  it("has tests import helpers, never another test's folder", () => {
    const crossings = files
      .filter((f) => isTest(f) || f.startsWith("test/helpers/"))
      .flatMap((f) =>
        relativeImports(f)
          .filter((target) => target.startsWith("test/"))
          .filter((target) => !target.startsWith("test/helpers/") && !isContractSuite(target))
          .map((target) => `${f} -> ${target}`),
      );
    expect(crossings).toEqual([]);
  });
});
