/**
 * The collect rate limit holds across WORKERS: the real service with two
 * worker processes, requests on fresh connections (the cluster spreads them
 * over both workers), one allowance per client address in total.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { startChildServer, stopChildServer, waitForOutput } from "../helpers/child-server.js";
import { BROWSER_UA } from "../helpers/collect.js";
import { seedTenantFile } from "../helpers/test-server.js";

let dir: string;
let path: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ingest-collect-workers-"));
  path = join(dir, "db.sqlite");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One POST on its own connection (no keep-alive), so the cluster may pick any worker. */
function postOnNewConnection(url: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        agent: false,
        headers: { "content-type": "text/plain", "user-agent": BROWSER_UA, connection: "close" },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("COLLECT_RATE_LIMIT under WORKERS", () => {
  it("counts one allowance per client across all worker processes", async () => {
    const { siteId } = await seedTenantFile(path);
    const child = await startChildServer({
      STORE_URL: `sqlite:${path}`,
      WORKERS: "2",
      COLLECT_RATE_LIMIT: "4",
      LOG_LEVEL: "info",
    });
    try {
      await waitForOutput(child, /"msg":"listening"/, 2);
      const body = JSON.stringify({ s: siteId, e: "pageview", u: "https://example.com/" });
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        statuses.push(await postOnNewConnection(`${child.url}/api/v1/collect`, body));
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(4);
      expect(statuses.slice(4)).toEqual(Array(4).fill(429));
      // Both workers answered collect requests, so the count really was shared.
      const pids = new Set(
        [...child.output().matchAll(/"pid":(\d+)[^\n]*"url":"\/api\/v1\/collect"/g)].map(
          (m) => m[1],
        ),
      );
      expect(pids.size).toBe(2);
    } finally {
      await stopChildServer(child);
    }
    expect(await child.exited).toBe(0);
  });
});

describe("the per-site collect ceiling under WORKERS", () => {
  it("counts one ceiling per site across all worker processes", async () => {
    const db = join(dir, "ceiling.sqlite");
    const { siteId } = await seedTenantFile(db);
    const store = createSqliteStore(db);
    await store.setCollectPerMinute(siteId, 100);
    await store.close();
    const child = await startChildServer({
      STORE_URL: `sqlite:${db}`,
      WORKERS: "2",
      COLLECT_RATE_LIMIT: "1000000",
      LOG_LEVEL: "info",
    });
    try {
      await waitForOutput(child, /"msg":"listening"/, 2);
      const body = JSON.stringify({
        s: siteId,
        b: Array.from({ length: 50 }, () => ({ e: "pageview", u: "https://example.com/" })),
      });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        statuses.push(await postOnNewConnection(`${child.url}/api/v1/collect`, body));
      }
      // Each worker counting alone would have let two batches through each.
      expect(statuses).toEqual([200, 200, 429, 429, 429]);
      const pids = new Set(
        [...child.output().matchAll(/"pid":(\d+)[^\n]*"url":"\/api\/v1\/collect"/g)].map(
          (m) => m[1],
        ),
      );
      expect(pids.size).toBe(2);
    } finally {
      await stopChildServer(child);
    }
    expect(await child.exited).toBe(0);
  });
});
