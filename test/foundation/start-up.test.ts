/**
 * Start-up failures of the real process: one line on stderr naming the
 * variable and the path or host, exit code 2; WORKERS gives up instead of
 * restarting forever. And the start-up log line an operator looks for.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redactStoreUrl } from "../../src/start-up.js";
import {
  freePort,
  startChildServer,
  stopChildServer,
  waitForOutput,
} from "../helpers/child-server.js";
import { startFakeMongo } from "../helpers/mongo/fake-server.js";
import { ROOT } from "../helpers/rpc-clients.js";
import { ADMIN_TOKEN } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";

let dir: string;
let storeUrl: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ingest-start-"));
  storeUrl = `sqlite:${join(dir, "db.sqlite")}`;
  writeFileSync(join(dir, "not-a-db.txt"), "hello\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Starts the service with `env`, expects it to stop by itself with code 2 and
 * returns its output. (A process that keeps running fails the test by its time limit.)
 */
async function failedStart(env: Record<string, string>): Promise<string> {
  const child = await startChildServer({ STORE_URL: storeUrl, ...env }, { until: "exit" });
  try {
    expect(await child.exited, child.output()).toBe(2);
  } finally {
    await stopChildServer(child, "SIGKILL");
  }
  return child.output();
}

/** Holds a port on 127.0.0.1 as another program would (answering 503 to the health poll). */
async function occupiedPort(): Promise<{ port: number; server: Server }> {
  const port = await freePort();
  const server = createServer((_req, res) => res.writeHead(503, { connection: "close" }).end());
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  return { port, server };
}

describe("start-up errors", () => {
  it("GEOIP_DB that does not exist", async () => {
    const path = join(dir, "missing.mmdb");
    expect(await failedStart({ GEOIP_DB: path })).toBe(
      `cannot start: GEOIP_DB: cannot open ${path}: no such file or directory\n`,
    );
  });

  it("GEOIP_DB that is not an MMDB file", async () => {
    const path = join(dir, "not-a-db.txt");
    expect(await failedStart({ GEOIP_DB: path })).toBe(
      `cannot start: GEOIP_DB: cannot open ${path}: not a MaxMind DB (MMDB) file\n`,
    );
  });

  it("HOST that does not resolve", async () => {
    const out = await failedStart({ HOST: "no-such-host.invalid" });
    expect(out).toMatch(/^cannot start: HOST: cannot resolve no-such-host\.invalid: [^\n]+\n$/);
  });

  it("HOST that is not an address of this machine", async () => {
    // 192.0.2.0/24 is TEST-NET-1: never assigned to a machine.
    expect(await failedStart({ HOST: "192.0.2.1" })).toBe(
      "cannot start: HOST: 192.0.2.1 is not an address of this machine\n",
    );
  });

  it("PORT already in use", async () => {
    const { port, server } = await occupiedPort();
    try {
      expect(await failedStart({ PORT: String(port) })).toBe(
        `cannot start: PORT: ${port} is already in use on 127.0.0.1\n`,
      );
    } finally {
      server.close();
    }
  });

  it("STORE_URL naming a file that is not a SQLite database", async () => {
    const path = join(dir, "not-a-db.txt");
    expect(await failedStart({ STORE_URL: `sqlite:${path}` })).toBe(
      `cannot start: STORE_URL: cannot open the SQLite database ${path}: the file is not a SQLite database\n`,
    );
  });

  it("STORE_URL whose directory cannot be created", async () => {
    const path = join(dir, "not-a-db.txt", "db.sqlite");
    expect(await failedStart({ STORE_URL: `sqlite:${path}` })).toBe(
      `cannot start: STORE_URL: cannot open the SQLite database ${path}: a part of the path is a file, not a directory\n`,
    );
  });

  it("STORE_URL naming a MongoDB that cannot be reached, without echoing its credentials", async () => {
    const port = await freePort();
    const out = await failedStart({
      STORE_URL: `mongodb://ingest:s3cret-pw@127.0.0.1:${port}/analytics?authSource=admin`,
    });
    expect(out).toMatch(
      new RegExp(
        `^cannot start: STORE_URL: cannot reach MongoDB at 127\\.0\\.0\\.1:${port}: [^\\n]+\\n$`,
      ),
    );
    expect(out).not.toContain("s3cret-pw");
  });

  it("STORE_URL naming a reachable MongoDB whose schema was never migrated", async () => {
    const fake = await startFakeMongo();
    try {
      const empty = (cmd: Document) => ({
        cursor: { id: 0n, ns: `fresh.${String(cmd.listCollections ?? "$cmd")}`, firstBatch: [] },
        ok: 1,
      });
      fake.answer.set("listCollections", empty);
      const out = await failedStart({ STORE_URL: fake.url("fresh") });
      expect(out).toMatch(
        /^cannot start: STORE_URL: the MongoDB database at 127\.0\.0\.1:\d+ is not migrated \(\d+ missing, first collection accounts\); run `npm run admin -- store migrate`\n$/,
      );
    } finally {
      await fake.close();
    }
  });

  // Forking workers that each load TypeScript is slow on a busy machine.
  it("WORKERS: gives up after repeated start-up failures with the workers' error", {
    timeout: scaled(120_000),
  }, async () => {
    const { port, server } = await occupiedPort();
    try {
      const out = await failedStart({ PORT: String(port), WORKERS: "2" });
      const lines = out.trimEnd().split("\n");
      expect(lines.at(-1)).toBe(
        `cannot start: PORT: ${port} is already in use on 127.0.0.1 (3 workers failed to start in a row; giving up)`,
      );
      // Two restarts at most before giving up, each saying why.
      expect(lines.slice(0, -1)).toHaveLength(2);
      for (const line of lines.slice(0, -1)) {
        expect(line).toMatch(
          new RegExp(
            `^worker \\d+: cannot start: PORT: ${port} is already in use on 127\\.0\\.0\\.1; starting another$`,
          ),
        );
      }
    } finally {
      server.close();
    }
  });
});

describe("the start-up line", () => {
  it("says where it listens, its version, its store and whether ADMIN_TOKEN is set", async () => {
    const child = await startChildServer({ STORE_URL: storeUrl, LOG_LEVEL: "info", ADMIN_TOKEN });
    try {
      // Ready (/readyz 200) can come before the line reaches the pipe on a busy machine.
      await waitForOutput(child, /"msg":"listening"[^\n]*\n/);
      const line = child
        .output()
        .split("\n")
        .find((l) => l.includes('"msg":"listening"'));
      const version = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;
      expect(JSON.parse(line ?? "{}")).toMatchObject({
        level: 30,
        url: child.url,
        port: child.port,
        version,
        store: "sqlite",
        storeUrl,
        adminToken: "set",
      });
      expect(child.output()).not.toContain(ADMIN_TOKEN);
    } finally {
      child.proc.kill("SIGTERM");
      await child.exited;
    }
  });

  it("prints a MongoDB URL without user, password or options", () => {
    expect(
      redactStoreUrl("mongodb://ingest:pw@db1:27017,db2:27017/analytics?replicaSet=rs&tls=true"),
    ).toBe("mongodb://***@db1:27017,db2:27017/analytics?…");
    expect(redactStoreUrl("mongodb+srv://u:p@cluster0.example.net/?retryWrites=true")).toBe(
      "mongodb+srv://***@cluster0.example.net/?…",
    );
    expect(redactStoreUrl("mongodb://localhost:27017")).toBe("mongodb://localhost:27017");
    expect(redactStoreUrl("sqlite:./data/ingest.sqlite")).toBe("sqlite:./data/ingest.sqlite");
  });
});
