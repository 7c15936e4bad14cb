/**
 * Issue 30: an erased person's rows leave the DuckDB file itself while the
 * server runs, at most ANALYTICS_COMPACT_INTERVAL_MS after the erasure: the
 * owner rewrites the file (copy, rename over the old one, reopen) while
 * ingestion and queries go on. A kill -9 during the rewrite leaves the old
 * file whole: after the restart every acknowledged event is there once, and
 * the rewrite the crash interrupted happens again (the file remembers it is
 * due). The real service as a child process; every file of the data
 * directory is grepped, as the customer-erasure test does after a stop.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { postOn, startAnalyticsWorkers } from "../helpers/analytics-workers.js";
import { type ChildServer, startChildServer, waitForOutput } from "../helpers/child-server.js";
import { sendEvents } from "../helpers/events.js";
import { ADMIN_TOKEN, postJson, seedTenantFile } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";

let dir: string;
let path: string;
let tenant: { siteId: string; key: string; ownerUserId: string };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ingest-erasure-rewrite-"));
  path = join(dir, "db.sqlite");
  tenant = await seedTenantFile(path);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const REWRITTEN = /"msg":"analytics file rewritten"/g;

function start(): Promise<ChildServer> {
  return startChildServer({
    STORE_URL: `sqlite:${path}`,
    ADMIN_TOKEN,
    LOG_LEVEL: "info",
    ANALYTICS_FEED_INTERVAL_MS: "50",
    ANALYTICS_COMPACT_INTERVAL_MS: "4000",
  });
}

/** Which files of the data directory hold `value` (as stored, or percent-encoded in a URL). */
function filesHolding(value: string): string[] {
  return readdirSync(dir).filter((f) => {
    const bytes = readFileSync(join(dir, f));
    return bytes.includes(value) || bytes.includes(encodeURIComponent(value));
  });
}

/** `n` pageviews of distinct visitors and pages, in batches of 50; resolves with how many were acknowledged. */
async function ingest(child: ChildServer, n: number, from: number): Promise<number> {
  let acked = 0;
  for (let i = from; i < from + n; i += 50) {
    const b = Array.from({ length: Math.min(50, from + n - i) }, (_, k) => ({
      e: "pageview",
      u: `https://example.com/p/${i + k}`,
      vid: `visitor-${String((i + k) % 997).padStart(8, "0")}`,
    }));
    const res = await sendEvents(child.url, tenant, { s: tenant.siteId, b });
    expect(res.status, res.text).toBe(204);
    acked += b.length;
  }
  return acked;
}

/** One visitor's pageviews with `marker` in their page and visitor id. */
async function markedVisitor(child: ChildServer, marker: string): Promise<string> {
  const vid = `visitor-${marker}`;
  const res = await sendEvents(child.url, tenant, {
    s: tenant.siteId,
    b: [1, 2, 3].map((i) => ({ e: "pageview", u: `https://example.com/u/${marker}/${i}`, vid })),
  });
  expect(res.status, res.text).toBe(204);
  return vid;
}

/** The site's pageviews today, by Query (read-your-writes: the feed applies what was acknowledged). */
async function pageviews(child: ChildServer): Promise<number> {
  const res = await postJson(
    `${child.url}/api/v1/sites/${tenant.siteId}/query`,
    { metrics: ["pageviews"], period: { from_day: "2026-03-11", to_day: "2026-03-11" } },
    { key: ADMIN_TOKEN },
  );
  expect(res.status, res.text).toBe(200);
  return Number((res.body as { totals: { count: string }[] }).totals[0]?.count);
}

async function eraseVisitor(child: ChildServer, visitorId: string) {
  const admin = createClient(
    AdminService,
    createConnectTransport({ baseUrl: child.url, httpVersion: "1.1" }),
  );
  await admin.eraseVisitor(
    { siteId: tenant.siteId, visitorId, actorUserId: tenant.ownerUserId },
    { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
  );
}

describe("the analytics file rewritten while the server runs", () => {
  let expected = 0;

  it("holds no byte of an erased visitor once the interval passed, while events are acknowledged and queries answered throughout", {
    timeout: scaled(120_000),
  }, async () => {
    const child = await start();
    try {
      expected += await ingest(child, 5_000, 0);
      const erased = await markedVisitor(child, "erase-me-7f3a9c");
      expected += await ingest(child, 5_000, 5_000);
      expect(await pageviews(child)).toBe(expected + 3);
      await eraseVisitor(child, erased);
      // Applied at once to every read; the file still holds the bytes until it is rewritten.
      expect(await pageviews(child)).toBe(expected);
      expect(filesHolding("erase-me-7f3a9c")).not.toEqual([]);
      // Ingestion and queries go on during the rewrite (queries wait out the swap, never fail).
      // A rewrite that an earlier change made due may have run before the erasure applied.
      const earlier = child.output().match(REWRITTEN)?.length ?? 0;
      let rewritten = false;
      const rewrite = waitForOutput(child, REWRITTEN, earlier + 1).finally(() => {
        rewritten = true;
      });
      let during = 0;
      while (!rewritten) {
        expected += await ingest(child, 50, 20_000 + during * 50);
        expect(await pageviews(child)).toBe(expected);
        during += 1;
      }
      await rewrite;
      expect(during).toBeGreaterThan(0);
      // A rewrite whose copy began before the erasure applied (the feed keeps moving
      // during the copy) held the rows; its replay erased them from the new file, which
      // is then due again: the next rewrite, within the interval, leaves none of them.
      if (filesHolding("erase-me-7f3a9c").length > 0) {
        await waitForOutput(child, REWRITTEN, earlier + 2);
      }
      expect(filesHolding("erase-me-7f3a9c")).toEqual([]);
      expect(readdirSync(dir).filter((f) => f.includes("compact"))).toEqual([]);
      // The feed goes on with the new file.
      expected += await ingest(child, 100, 40_000);
      expect(await pageviews(child)).toBe(expected);
      const line = child.output().match(/\{[^\n]*"msg":"analytics file rewritten"[^\n]*\}/)?.[0];
      expect(Object.keys(JSON.parse(line ?? "{}"))).toEqual(
        expect.arrayContaining(["bytesBefore", "bytesAfter", "seconds", "swapSeconds"]),
      );
    } finally {
      child.proc.kill("SIGTERM");
      await child.exited;
    }
  });

  it("after a kill -9 during the rewrite: the old file whole, every acknowledged event once, and the rewrite done after the restart", {
    timeout: scaled(180_000),
  }, async () => {
    const child = await start();
    let again: ChildServer | undefined;
    try {
      expect(await pageviews(child)).toBe(expected);
      expected += await ingest(child, 10_000, 50_000);
      const erased = await markedVisitor(child, "erase-me-b41d2e");
      await eraseVisitor(child, erased);
      expect(await pageviews(child)).toBe(expected);
      const earlier = child.output().match(REWRITTEN)?.length ?? 0;
      // Killed while the copy is being written (it appears when the rewrite starts).
      const copy = join(dir, "analytics.duckdb.compact");
      const deadline = performance.now() + scaled(30_000);
      while (!existsSync(copy)) {
        expect(child.output().match(REWRITTEN)?.length ?? 0).toBe(earlier);
        expect(performance.now()).toBeLessThan(deadline);
        await new Promise((r) => setImmediate(r));
      }
      child.proc.kill("SIGKILL");
      expect(await child.exited).toBe("SIGKILL");
      expect(child.output().match(REWRITTEN)?.length ?? 0).toBe(earlier);

      again = await start();
      // The half-written copy is gone, and the old file answers with every event once.
      expect(existsSync(copy)).toBe(false);
      expect(await pageviews(again)).toBe(expected);
      // The rewrite is still due (the file says so): done within the interval.
      await waitForOutput(again, REWRITTEN, 1);
      expect(filesHolding("erase-me-b41d2e")).toEqual([]);
      expect(await pageviews(again)).toBe(expected);
    } finally {
      if (child.proc.exitCode === null && child.proc.signalCode === null) {
        child.proc.kill("SIGKILL");
        await child.exited;
      }
      if (again) {
        again.proc.kill("SIGTERM");
        await again.exited;
      }
    }
  });

  it("under WORKERS: the other worker's calls reach the owner through the swap, every answer exact", {
    timeout: scaled(180_000),
  }, async () => {
    const { child } = await startAnalyticsWorkers({
      STORE_URL: `sqlite:${path}`,
      ADMIN_TOKEN,
      ANALYTICS_FEED_INTERVAL_MS: "50",
      ANALYTICS_COMPACT_INTERVAL_MS: "3000",
    });
    try {
      const erased = await markedVisitor(child, "erase-me-c93e10");
      expect(await pageviewsOnNewConnection(child)).toBe(expected + 3);
      await eraseVisitor(child, erased);
      expect(await pageviewsOnNewConnection(child)).toBe(expected);
      const earlier = child.output().match(REWRITTEN)?.length ?? 0;
      let rewritten = false;
      const rewrite = waitForOutput(child, REWRITTEN, earlier + 1).finally(() => {
        rewritten = true;
      });
      // Each Query on a connection of its own: the cluster hands them to both workers in turn.
      let asked = 0;
      while (!rewritten || asked < 20) {
        expect(await pageviewsOnNewConnection(child)).toBe(expected);
        asked += 1;
      }
      await rewrite;
      expect(filesHolding("erase-me-c93e10")).toEqual([]);
      const queryLines = new RegExp(
        `"pid":(\\d+)[^\\n]*"url":"/api/v1/sites/${tenant.siteId}/query"`,
        "g",
      );
      const pids = new Set([...child.output().matchAll(queryLines)].map((m) => m[1]));
      expect(pids.size).toBe(2);
    } finally {
      child.proc.kill("SIGTERM");
      await child.exited;
    }
  });
});

/** The site's pageviews by Query, on a new connection (no keep-alive), so either worker answers. */
async function pageviewsOnNewConnection(child: ChildServer): Promise<number> {
  const res = await postOn(
    `${child.url}/api/v1/sites/${tenant.siteId}/query`,
    { metrics: ["pageviews"], period: { from_day: "2026-03-11", to_day: "2026-03-11" } },
    { key: ADMIN_TOKEN },
  ).answer;
  if (res.status !== 200)
    throw new Error(`Query answered ${res.status}: ${JSON.stringify(res.body)}`);
  return Number((res.body as { totals: { count: string }[] }).totals[0]?.count);
}
