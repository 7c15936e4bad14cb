/**
 * kill -9 mid-stream: every payment that got 200 is stored exactly once, and
 * every event request that got 204 is stored, at most once, after a restart.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startChildServer } from "../helpers/child-server.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { postJson, seedTenantFile } from "../helpers/test-server.js";

let dir: string;
let dbPath: string;
let key: string;
let siteId: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ingest-crash-"));
  dbPath = join(dir, "db.sqlite");
  ({ key, siteId } = await seedTenantFile(dbPath));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a server killed with SIGKILL mid-stream", () => {
  it("keeps every acknowledged payment exactly once and every acknowledged event request once", {
    timeout: 90_000,
  }, async () => {
    const child = await startChildServer({ STORE_URL: `sqlite:${dbPath}`, INGEST_FLUSH_MS: "5" });
    const ackedPayments = new Set<string>();
    const ackedEvents = new Set<number>();
    const sentEvents = new Set<number>();
    let seq = 0;
    let killed = false;

    const client = async (n: number) => {
      while (!killed) {
        seq += 1;
        const id = seq;
        try {
          if (id % 2 === 0) {
            const res = await postJson(
              `${child.url}/api/v1/payments`,
              {
                payment_id: `pay_${id}`,
                customer: { id: `cus_${n}` },
                amount: id / 100,
                currency: "USD",
                kind: "charge",
                paid_at: "2026-01-01T00:00:00Z",
              },
              { key },
            );
            if (res.status === 200) ackedPayments.add(`pay_${id}`);
          } else {
            sentEvents.add(id);
            const res = await postJson(
              `${child.url}/api/v1/events`,
              {
                s: siteId,
                b: [1, 2].map((k) => ({
                  e: "pageview",
                  u: `https://example.com/${id}/${k}`,
                  ua: BROWSER_UA,
                  ip: "203.0.113.5",
                  p: { seq: id },
                })),
              },
              { key },
            );
            if (res.status === 204) ackedEvents.add(id);
          }
        } catch {
          // The connection died with the process: not acknowledged.
        }
      }
    };

    const clients = Array.from({ length: 8 }, (_, i) => client(i));
    // Mid-stream once enough was acknowledged (a fixed delay acknowledges little on a busy machine).
    for (let i = 0; i < 600 && (ackedPayments.size <= 25 || ackedEvents.size <= 25); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    child.proc.kill("SIGKILL");
    killed = true;
    await child.exited;
    await Promise.all(clients);
    expect(ackedPayments.size).toBeGreaterThan(20);
    expect(ackedEvents.size).toBeGreaterThan(20);

    // Restart on the same file: recovery of the WAL, then check from outside.
    const again = await startChildServer({ STORE_URL: `sqlite:${dbPath}` });
    expect((await fetch(`${again.url}/readyz`)).status).toBe(200);
    again.proc.kill("SIGTERM");
    expect(await again.exited).toBe(0);

    const db = new Database(dbPath, { readonly: true });
    try {
      const payments = db
        .prepare("SELECT payment_id, count(*) AS n, amount_minor FROM payments GROUP BY payment_id")
        .all() as { payment_id: string; n: number; amount_minor: number }[];
      const stored = new Map(payments.map((p) => [p.payment_id, p]));
      for (const id of ackedPayments) {
        expect(stored.get(id)?.n, id).toBe(1);
        expect(stored.get(id)?.amount_minor).toBe(Number(id.slice(4)));
      }
      const events = db
        .prepare(
          "SELECT json_extract(props, '$.seq') AS seq, count(*) AS n FROM events GROUP BY seq",
        )
        .all() as { seq: number; n: number }[];
      const counts = new Map(events.map((e) => [e.seq, e.n]));
      for (const id of ackedEvents) expect(counts.get(id), `event request ${id}`).toBe(2);
      // Unacknowledged requests are all-or-nothing too: a request's events are one group.
      for (const [s, n] of counts) {
        expect(sentEvents.has(s)).toBe(true);
        expect(n).toBe(2);
      }
    } finally {
      db.close();
    }
  });
});
