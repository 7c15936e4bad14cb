/**
 * The real service under WORKERS=2 with its analytics owner (the worker that
 * serves the DuckDB engine to the other over the cluster's IPC): started and
 * awaited on explicit signals (both workers listening, the owner's line),
 * plus a JSON POST on a chosen connection, so a test picks the worker that
 * answers (test/reports/query-workers*.test.ts, test/privacy/erasure-rewrite.test.ts).
 */
import { type Agent, type ClientRequest, request } from "node:http";
import { createAdmin } from "../../src/domain/admin.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { type ChildServer, startChildServer, waitForOutput } from "./child-server.js";
import { createTestClock, seedTenantFile } from "./test-server.js";

/** The owner's line: `pid` is the worker that serves the engine (a replacement logs it again). */
export const SERVING_LINE =
  /"pid":(\d+)[^\n]*"msg":"serving the analytics engine to the other workers"/g;

/** The pids of the workers that have served the engine, oldest first. */
export function servingPids(child: ChildServer): string[] {
  return [...child.output().matchAll(SERVING_LINE)].map((m) => m[1] ?? "");
}

/**
 * Starts the service with WORKERS=2 (and LOG_LEVEL=info unless `env` says)
 * on `env`, and resolves once both workers listen and one serves the
 * engine, with that owner's pid. The caller stops the child.
 */
export async function startAnalyticsWorkers(
  env: Record<string, string>,
): Promise<{ child: ChildServer; ownerPid: string }> {
  const child = await startChildServer({ LOG_LEVEL: "info", ...env, WORKERS: "2" });
  try {
    await waitForOutput(child, /"msg":"listening"/, 2);
    await waitForOutput(child, SERVING_LINE, 1);
  } catch (err) {
    child.proc.kill("SIGTERM");
    throw err;
  }
  return { child, ownerPid: servingPids(child)[0] ?? "" };
}

/** A worker's answer: status, parsed JSON body and Retry-After. */
export interface WorkerAnswer {
  status: number;
  body: unknown;
  retryAfter: string | undefined;
}

/**
 * POSTs `body` as JSON to `url` with a bearer `key`, on `agent`'s connection
 * (pinned to the worker that accepted it), or without one on a connection of
 * its own closed after the answer (the cluster may hand it to either worker).
 * `req` lets the test go away mid-call.
 */
export function postOn(
  url: string,
  body: unknown,
  options: { key: string; agent?: Agent; headers?: Record<string, string> },
): { req: ClientRequest; answer: Promise<WorkerAnswer> } {
  let req!: ClientRequest;
  const answer = new Promise<WorkerAnswer>((resolve, reject) => {
    req = request(
      url,
      {
        method: "POST",
        agent: options.agent ?? false,
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${options.key}`,
          ...(options.agent ? {} : { connection: "close" }),
          ...options.headers,
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
  return { req, answer };
}

/**
 * Seeds a tenant (test-server.ts's `seedTenantFile`) and a `reports` key of
 * its site in the SQLite file at `path`, before a server process opens it.
 */
export async function seedReportsTenantFile(path: string) {
  const seeded = await seedTenantFile(path);
  const store = createSqliteStore(path);
  try {
    const admin = createAdmin({ store, clock: createTestClock() });
    const { key: reportsKey } = await admin.createKey({
      siteId: seeded.siteId,
      name: "reports",
      scopes: ["reports"],
      actorUserId: seeded.ownerUserId,
    });
    return { ...seeded, reportsKey };
  } finally {
    await store.close();
  }
}
