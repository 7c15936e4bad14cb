/**
 * Query and Funnel under WORKERS (issue 30): the real service with two worker
 * processes, one of which owns the DuckDB file; the other reaches its engine
 * over the cluster's IPC (src/cluster/port-relay.ts). Every worker answers
 * the same, exactly; when the owner dies the other answers 503 `unavailable`
 * (not a hang), and the owner's replacement serves again.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdmin } from "../../src/domain/admin.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { type ChildServer, startChildServer, waitForOutput } from "../helpers/child-server.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { createTestClock, seedTenantFile, TEST_NOW } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";

const MIN = 60_000;
const T0 = TEST_NOW - 50 * MIN;
const A = "visitor-aaaa-000001";
const B = "visitor-bbbb-000002";

const QUERY = {
  metrics: ["visitors", "visits", "pageviews", "bounce_rate", "net_revenue"],
  dimensions: ["channel"],
  period: { from_day: "2026-03-11", to_day: "2026-03-11" },
  currency: "USD",
  order_by: [{ field: "net_revenue", desc: true }],
};
const count = (n: number) => ({ count: String(n) });
const usd = (minor: number, decimal: string) => ({
  money:
    minor === 0
      ? { currency: "USD", decimal }
      : { currency: "USD", minorUnits: String(minor), decimal },
});
/** The answer of test/reports/query.test.ts for the same journey (one process). */
const QUERY_ANSWER = {
  metrics: QUERY.metrics,
  dimensions: ["channel"],
  rows: [
    {
      dimensions: ["Email"],
      metrics: [count(1), count(1), count(2), { number: 0 }, usd(2499, "24.99")],
    },
    {
      dimensions: ["Direct"],
      metrics: [count(1), count(1), count(1), { number: 100 }, usd(0, "0.00")],
    },
    {
      dimensions: ["Organic Search"],
      metrics: [count(1), count(1), count(1), { number: 100 }, usd(0, "0.00")],
    },
  ],
  totals: [count(2), count(3), count(4), { number: 66.67 }, usd(2499, "24.99")],
  period: { from: "2026-03-11T00:00:00.000Z", to: "2026-03-12T00:00:00.000Z", timeZone: "UTC" },
  model: "first_touch",
};
const FUNNEL = {
  steps: [
    { kind: "page", value: "https://example.com/", label: "home" },
    { kind: "page", value: "https://example.com/pricing" },
    { kind: "event", value: "signup" },
  ],
  period: { from_day: "2026-03-11", to_day: "2026-03-11" },
};
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
  let ownerUserId: string;
  ({ siteId, key: ingestKey, ownerUserId } = await seedTenantFile(path));
  const store = createSqliteStore(path);
  try {
    const admin = createAdmin({ store, clock: createTestClock() });
    ({ key: reportsKey } = await admin.createKey({
      siteId,
      name: "reports",
      scopes: ["reports"],
      actorUserId: ownerUserId,
    }));
  } finally {
    await store.close();
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Answer {
  status: number;
  body: unknown;
  retryAfter: string | undefined;
}

/** One POST on its own connection (no keep-alive), so the cluster may pick either worker. */
function post(child: ChildServer, path: string, body: unknown, key: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${child.url}${path}`,
      {
        method: "POST",
        agent: false,
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${key}`,
          "user-agent": BROWSER_UA,
          connection: "close",
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => {
          text += d;
        });
        res.on("end", () => {
          const retryAfter = res.headers["retry-after"];
          resolve({
            status: res.statusCode ?? 0,
            body: text ? JSON.parse(text) : undefined,
            retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
          });
        });
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

/** The pid of the worker that logged the last request to `path` (the log is written before the answer). */
async function lastPid(child: ChildServer, path: string, seen: number): Promise<string> {
  const pattern = new RegExp(`"pid":(\\d+)[^\\n]*"url":"${path.replaceAll("/", "\\/")}"`, "g");
  await waitForOutput(child, pattern, seen);
  const all = [...child.output().matchAll(pattern)];
  return all[seen - 1]?.[1] ?? "";
}

const servingLine = /"pid":(\d+)[^\n]*"msg":"serving the analytics engine to the other workers"/g;

describe("Query and Funnel under WORKERS", () => {
  it("answers the same from every worker, 503 while the owner is gone, again once it is back", {
    timeout: scaled(180_000),
  }, async () => {
    const child = await startChildServer({
      STORE_URL: `sqlite:${path}`,
      WORKERS: "2",
      LOG_LEVEL: "info",
      ANALYTICS_FEED_INTERVAL_MS: "50",
    });
    try {
      await waitForOutput(child, /"msg":"listening"/, 2);
      await waitForOutput(child, servingLine, 1);
      const ownerPid = [...child.output().matchAll(servingLine)][0]?.[1];

      const events = await post(
        child,
        "/api/v1/events",
        {
          s: siteId,
          b: [
            {
              e: "pageview",
              u: "https://example.com/?utm_source=newsletter&utm_medium=email",
              vid: A,
              ts: T0,
            },
            {
              e: "pageview",
              u: "https://example.com/pricing",
              r: "https://example.com/",
              vid: A,
              ts: T0 + 5 * MIN,
            },
            { e: "signup", u: "https://example.com/pricing", vid: A, ts: T0 + 10 * MIN },
            {
              e: "pageview",
              u: "https://example.com/",
              r: "https://www.google.com/",
              vid: B,
              ts: T0 + MIN,
            },
            { e: "pageview", u: "https://example.com/pricing", vid: B, ts: T0 + 46 * MIN },
          ],
        },
        ingestKey,
      );
      expect(events.status).toBe(204);
      for (const [id, amount, kind] of [
        ["pay_1", 29.99, "charge"],
        ["pay_2", 5, "refund"],
      ] as const) {
        const res = await post(
          child,
          "/api/v1/payments",
          {
            payment_id: id,
            customer: { id: "cus_a", visitor_id: A },
            amount,
            currency: "USD",
            kind,
            paid_at: new Date(T0 + 20 * MIN).toISOString(),
          },
          ingestKey,
        );
        expect(res.status).toBe(200);
      }

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
        expect(f.body).toEqual({
          steps: [
            { label: "home", visitors: "2", conversionFromPrevious: 100, conversionOverall: 100 },
            {
              label: "https://example.com/pricing",
              visitors: "2",
              conversionFromPrevious: 100,
              conversionOverall: 100,
              medianSecondsFromPrevious: 1500,
            },
            {
              label: "signup",
              visitors: "1",
              conversionFromPrevious: 50,
              conversionOverall: 50,
              medianSecondsFromPrevious: 300,
            },
          ],
          period: QUERY_ANSWER.period,
          model: "first_touch",
        });
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
      expect([...child.output().matchAll(servingLine)]).toHaveLength(1);
      expect(gone).toEqual({ status: 503, body: UNAVAILABLE, retryAfter: "2" });
      const goneFunnel = await post(child, funnelPath, FUNNEL, reportsKey);
      expect(goneFunnel).toEqual({ status: 503, body: UNAVAILABLE, retryAfter: "2" });

      // ... and once the replacement owns the file, every worker answers again.
      await waitForOutput(child, servingLine, 2);
      const newOwner = [...child.output().matchAll(servingLine)][1]?.[1];
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
