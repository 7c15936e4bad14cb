/**
 * Rules of docs/architecture.md that a reader cannot see from one file:
 * every error is built through its catalogue; doors keep per-request state on
 * the request (`decorateRequest`), not in WeakMaps; no door leaks its hooks to
 * the root through fastify-plugin; the wiring registers doors, it does not
 * branch on the store's kind.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../helpers/rpc-clients.js";

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

const SRC = sourceFiles(join(ROOT, "src")).map((path) => ({
  path: relative(ROOT, path).replaceAll("\\", "/"),
  text: readFileSync(path, "utf8"),
}));

/** The files under `prefix` whose text matches `pattern`. */
const filesMatching = (pattern: RegExp, prefix = "src/") =>
  SRC.filter((f) => f.path.startsWith(prefix) && pattern.test(f.text)).map((f) => f.path);

describe("door rules", () => {
  it("builds every domain error through errors.* and every door error through doorErrors.*", () => {
    expect(filesMatching(/new DomainError\(/)).toEqual(["src/domain/errors.ts"]);
    expect(filesMatching(/new DoorError\(/)).toEqual(["src/edge/door-errors.ts"]);
  });

  it("keeps per-request state on the request, not in WeakMaps, in the doors, the edge and metrics", () => {
    for (const folder of ["src/http/", "src/rpc/", "src/edge/", "src/metrics/"]) {
      expect(filesMatching(/new WeakMap\b/, folder), folder).toEqual([]);
    }
  });

  it("never leaks a door's hooks to the root through fastify-plugin", () => {
    expect(filesMatching(/fastify-plugin|skip-override/)).toEqual([]);
  });

  it("wires by the store port's capabilities, never by the store's kind", () => {
    const wiring = ["src/app.ts", "src/server.ts", "src/services.ts"];
    expect(SRC.filter((f) => wiring.includes(f.path))).toHaveLength(3);
    const branching = SRC.filter(
      (f) =>
        wiring.includes(f.path) &&
        /kind\s*[!=]==?\s*["'](sqlite|mongodb)["']|["'](sqlite|mongodb)["']\s*[!=]==?\s*\S*kind/.test(
          f.text,
        ),
    );
    expect(branching.map((f) => f.path)).toEqual([]);
  });
});
