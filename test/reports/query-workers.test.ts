/**
 * Query and Funnel under WORKERS (issue 30): the real service with two worker
 * processes, one of which owns the DuckDB file; the other reaches its engine
 * over the cluster's IPC (src/cluster/port-relay.ts). Every worker answers
 * the same, exactly; when the owner dies the other answers 503 `unavailable`
 * (not a hang), and the owner's replacement serves again.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  postOn,
  SERVING_LINE,
  seedReportsTenantFile,
  servingPids,
  startAnalyticsWorkers,
} from "../helpers/analytics-workers.js";
import { type ChildServer, waitForOutput } from "../helpers/child-server.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import {
  JOURNEY_FUNNEL as FUNNEL,
  JOURNEY_FUNNEL_ANSWER as FUNNEL_ANSWER,
  JOURNEY_QUERY as QUERY,
  JOURNEY_QUERY_ANSWER as QUERY_ANSWER,
  sendJourney,
} from "../helpers/query-journey.js";
import { scaled } from "../helpers/timeouts.js";

const UNAVAILABLE = {
  ok: false,
  error: { code: "unavailable", message: "the analytics store is unavailable, retry later" },
};

let dir: string;
let path: string;
let siteId: string;
let ingestKey: string;
let reportsKey: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ingest-query-workers-"));
  path = join(dir, "db.sqlite");
  ({ siteId, key: ingestKey, reportsKey } = await seedReportsTenantFile(path));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One POST on its own connection (no keep-alive), so the cluster may pick either worker. */
const post = (child: ChildServer, path: string, body: unknown, key: string) =>
  postOn(`${child.url}${path}`, body, { key, headers: { "user-agent": BROWSER_UA } }).answer;

/** The pid of the worker that logged the last request to `path` (the log is written before the answer). */
async function lastPid(child: ChildServer, path: string, seen: number): Promise<string> {
  const pattern = new RegExp(`"pid":(\\d+)[^\\n]*"url":"${path.replaceAll("/", "\\/")}"`, "g");
  await waitForOutput(child, pattern, seen);
  const all = [...child.output().matchAll(pattern)];
  return all[seen - 1]?.[1] ?? "";
}

describe("Query and Funnel under WORKERS", () => {
  it("answers the same from every worker, 503 while the owner is gone, again once it is back", {
    timeout: scaled(180_000),
  }, async () => {
    const { child, ownerPid } = await startAnalyticsWorkers({
      STORE_URL: `sqlite:${path}`,
      ANALYTICS_FEED_INTERVAL_MS: "50",
    });
    try {
      await sendJourney(child.url, siteId, ingestKey);

      const queryPath = `/api/v1/sites/${siteId}/query`;
      const funnelPath = `/api/v1/sites/${siteId}/funnel`;
      // Freshness: the owner's feed applies the writes within its interval; until then the
      // answer has fewer rows. Every answer on the way is a 200 from either worker.
      let queries = 0;
      for (let i = 0; ; i++) {
        const res = await post(child, queryPath, QUERY, reportsKey);
        queries += 1;
        expect(res.status).toBe(200);
        if (JSON.stringify(res.body) === JSON.stringify(QUERY_ANSWER)) break;
        expect(i).toBeLessThan(600);
      }

      // Both workers answer Query and Funnel, each with the same exact answer.
      const queryPids = new Set<string>();
      const funnelPids = new Set<string>();
      let funnels = 0;
      // Separate loops: the cluster hands connections to the workers in turn.
      for (let i = 0; i < 40 && queryPids.size < 2; i++) {
        const q = await post(child, queryPath, QUERY, reportsKey);
        queries += 1;
        expect(q.status).toBe(200);
        expect(q.body).toEqual(QUERY_ANSWER);
        queryPids.add(await lastPid(child, queryPath, queries));
      }
      for (let i = 0; i < 40 && funnelPids.size < 2; i++) {
        const f = await post(child, funnelPath, FUNNEL, reportsKey);
        funnels += 1;
        expect(f.status).toBe(200);
        expect(f.body).toEqual(FUNNEL_ANSWER);
        funnelPids.add(await lastPid(child, funnelPath, funnels));
      }
      expect(queryPids.size).toBe(2);
      expect(funnelPids.size).toBe(2);
      expect(queryPids.has(ownerPid ?? "")).toBe(true);

      // The owner dies: the other worker answers 503 at once (not a hang)...
      process.kill(Number(ownerPid), "SIGKILL");
      await waitForOutput(child, new RegExp(`worker ${ownerPid}: exited \\(SIGKILL\\)`), 1);
      const gone = await post(child, queryPath, QUERY, reportsKey);
      queries += 1;
      // ... unless its replacement already serves (it loads for seconds: it cannot yet).
      expect(servingPids(child)).toHaveLength(1);
      expect(gone).toEqual({ status: 503, body: UNAVAILABLE, retryAfter: "2" });
      const goneFunnel = await post(child, funnelPath, FUNNEL, reportsKey);
      expect(goneFunnel).toEqual({ status: 503, body: UNAVAILABLE, retryAfter: "2" });

      // ... and once the replacement owns the file, every worker answers again.
      await waitForOutput(child, SERVING_LINE, 2);
      const newOwner = servingPids(child)[1];
      expect(newOwner).not.toBe(ownerPid);
      const pids = new Set<string>();
      for (let i = 0; i < 40 && pids.size < 2; i++) {
        const q = await post(child, queryPath, QUERY, reportsKey);
        queries += 1;
        expect(q.status).toBe(200);
        expect(q.body).toEqual(QUERY_ANSWER);
        pids.add(await lastPid(child, queryPath, queries));
      }
      expect(pids.size).toBe(2);
      expect(pids.has(newOwner ?? "")).toBe(true);
    } finally {
      child.proc.kill("SIGTERM");
    }
    expect(await child.exited).toBe(0);
  });
});
