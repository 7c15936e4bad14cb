/**
 * Query limits under WORKERS (issue 30): the real service with two worker
 * processes on a site of 200,000 events, so that a 90-day query runs for
 * seconds on one DuckDB thread. A query sent to the worker that does not own
 * the DuckDB file runs in the owner (over the cluster's IPC): while it runs,
 * ANALYTICS_QUERIES_PER_SITE=1 refuses the site's next query on either worker
 * (the limit is the owner's, so it holds for the cluster); when its client
 * goes away the owner's query is cancelled, and the site may query again.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { Agent } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import {
  postOn,
  seedReportsTenantFile,
  startAnalyticsWorkers,
} from "../helpers/analytics-workers.js";
import { type ChildServer, waitForOutput } from "../helpers/child-server.js";
import { TEST_NOW } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";

const DAY = 86_400_000;
const EVENTS = 200_000;
const VISITORS = EVENTS / 10;
const PERIOD = { from_day: "2025-12-12", to_day: "2026-03-11" };
/**
 * Seconds on one thread at this size: exact visitors and the visit metrics
 * per (hour, page, exit page), every event joined to its visit.
 */
const HEAVY = {
  metrics: ["visitors", "visits", "pageviews", "bounce_rate", "visit_duration"],
  dimensions: ["time:hour", "page", "exit_page"],
  period: PERIOD,
  limit: 1000,
};
/** Counted without visits: quick. */
const LIGHT = { metrics: ["events"], period: PERIOD };
const TOO_MANY = {
  ok: false,
  error: {
    code: "rate_limited",
    message: "too many analytics queries running for this site, retry later",
  },
};

let dir: string;
let path: string;
let siteId: string;
let reportsKey: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ingest-query-limits-"));
  path = join(dir, "db.sqlite");
  const seeded = await seedReportsTenantFile(path);
  ({ siteId, reportsKey } = seeded);
  const store = createSqliteStore(path);
  try {
    // 200,000 events over the 90 days before TEST_NOW, from 20,000 visitors.
    for (let i = 0; i < EVENTS; i += 5_000) {
      const events = Array.from({ length: 5_000 }, (_, k) => {
        const j = i + k;
        const ts = TEST_NOW - Math.floor((j / EVENTS) * 89 * DAY);
        return {
          siteId,
          name: j % 3 ? "pageview" : "signup",
          url: `https://example.com/p${j % 50}`,
          ts,
          receivedAt: ts,
          visitorId: `v${j % VISITORS}`,
        };
      });
      await store.commitEvents([
        {
          accountId: seeded.accountId,
          month: "2026-03",
          ceiling: 1e12,
          countable: 0,
          events,
          links: [],
          touches: [],
        },
      ]);
    }
  } finally {
    await store.close();
  }
}, scaled(120_000));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A POST of a Query on `agent`'s one connection (so on the worker that accepted it). */
const query = (child: ChildServer, agent: Agent, body: unknown) =>
  postOn(`${child.url}/api/v1/sites/${siteId}/query`, body, { key: reportsKey, agent });

describe("Query limits under WORKERS", () => {
  it("holds the per-site limit across workers and cancels the owner's query when its client goes", {
    timeout: scaled(300_000),
  }, async () => {
    const { child, ownerPid } = await startAnalyticsWorkers({
      STORE_URL: `sqlite:${path}`,
      LOG_LEVEL: "debug",
      ANALYTICS_THREADS: "1",
      ANALYTICS_QUERIES_PER_SITE: "1",
      ANALYTICS_QUERY_TIMEOUT_MS: "120000",
    });
    const agents: Agent[] = [];
    try {
      // Connections pinned to a worker (one keep-alive socket each): one on the owner, two on the other.
      const queryLine = new RegExp(
        `"pid":(\\d+)[^\\n]*"url":"\\/api\\/v1\\/sites\\/${siteId}\\/query"`,
        "g",
      );
      const count = (pattern: RegExp) => child.output().match(pattern)?.length ?? 0;
      const onOwner: Agent[] = [];
      const onOther: Agent[] = [];
      let fresh = false;
      for (let i = 0; i < 30 && (onOwner.length < 1 || onOther.length < 2); i++) {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        agents.push(agent);
        const before = count(queryLine);
        const res = await query(child, agent, LIGHT).answer;
        expect(res.status).toBe(200);
        // Until the owner's feed has moved the whole site in (the rebuild of a new file).
        fresh ||= JSON.stringify(res.body).includes(`"count":"${EVENTS}"`);
        await waitForOutput(child, queryLine, before + 1);
        const pid = [...child.output().matchAll(queryLine)].at(-1)?.[1];
        (pid === ownerPid ? onOwner : onOther).push(agent);
      }
      const [owner] = onOwner;
      const [other, other2] = onOther;
      if (!owner || !other || !other2) throw new Error("no connection to each worker");
      for (let i = 0; !fresh; i++) {
        const res = await query(child, owner, LIGHT).answer;
        expect(res.status).toBe(200);
        fresh = JSON.stringify(res.body).includes(`"count":"${EVENTS}"`);
        expect(i).toBeLessThan(10_000);
      }

      // A heavy query from the other worker runs in the owner...
      const relayed = /"msg":"analytics call from another worker"/g;
      const calls = count(relayed);
      const heavy = query(child, other, HEAVY);
      // Its end is awaited below; should an assertion fail first, its reset is no news.
      heavy.answer.catch(() => {});
      await waitForOutput(child, relayed, calls + 1);
      // ... and holds the site's one slot on both workers.
      const refused = { status: 429, body: TOO_MANY, retryAfter: "1" };
      expect(await query(child, owner, LIGHT).answer).toEqual(refused);
      expect(await query(child, other2, LIGHT).answer).toEqual(refused);

      // Its client goes away: the owner's query is cancelled, the slot is free again.
      heavy.req.destroy();
      await heavy.answer.catch(() => {});
      await waitForOutput(child, /"msg":"analytics call cancelled by its caller"/, 1);
      const ok = await query(child, owner, LIGHT).answer;
      expect(ok.status).toBe(200);
      expect(JSON.stringify(ok.body)).toContain(`"count":"${EVENTS}"`);
      expect((await query(child, other2, LIGHT).answer).status).toBe(200);
    } finally {
      for (const a of agents) a.destroy();
      child.proc.kill("SIGTERM");
    }
    expect(await child.exited).toBe(0);
  });
});
