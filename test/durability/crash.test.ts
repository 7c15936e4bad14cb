/**
 * kill -9 mid-stream: every payment that got 200 is stored exactly once, and
 * every event request that got 204 is stored, at most once, after a restart.
 * Runs on every store of this run (test/helpers/stores.ts). With SQLite, the
 * analytics feed moves events and payments into DuckDB every few milliseconds
 * during the load and deletes what it moved from SQLite's outbox, so the kill
 * lands before DuckDB's commit, after it, or during the delete: after the
 * restart ListEvents (read from DuckDB) has every acknowledged event exactly
 * once, the outbox is empty, the payments are there once each, and the
 * visits are those the events make.
 */

import Database from "better-sqlite3";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDuckDbAnalytics } from "../../src/store/duckdb/analytics-engine.js";
import { createAnalyticsFeed } from "../../src/store/duckdb/analytics-feed.js";
import { analyticsPathBeside, openAnalyticsStore } from "../../src/store/duckdb/analytics-store.js";
import { rebuildVisits } from "../../src/store/duckdb/visits-maintenance.js";
import { startChildServer } from "../helpers/child-server.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { describeEachStore, freshStore, type StoreUnderTest } from "../helpers/stores.js";
import { postJson, seedTenant } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";

describeEachStore("a server killed with SIGKILL mid-stream", (kind) => {
  let sut: StoreUnderTest;
  let key: string;
  let siteId: string;

  beforeAll(async () => {
    sut = await freshStore(kind);
    ({ key, siteId } = await seedTenant(await sut.open()));
  });
  afterAll(() => sut.cleanup());

  it("keeps every acknowledged payment exactly once and every acknowledged event request once", {
    timeout: scaled(90_000),
  }, async () => {
    const child = await startChildServer({
      STORE_URL: sut.url,
      INGEST_FLUSH_MS: "5",
      ANALYTICS_FEED_INTERVAL_MS: "10",
    });
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
    // Kill mid-stream once enough has been acknowledged (a fixed delay is too
    // short on a loaded machine), and at most after 30 s.
    for (let waited = 0; waited < 30_000; waited += 50) {
      if (ackedPayments.size > 20 && ackedEvents.size > 20) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 200));
    child.proc.kill("SIGKILL");
    killed = true;
    await child.exited;
    await Promise.all(clients);
    expect(ackedPayments.size).toBeGreaterThan(20);
    expect(ackedEvents.size).toBeGreaterThan(20);

    // Restart on the same store (SQLite: recovery of the WAL), then check from outside.
    const again = await startChildServer({ STORE_URL: sut.url });
    expect((await fetch(`${again.url}/readyz`)).status).toBe(200);
    again.proc.kill("SIGTERM");
    expect(await again.exited).toBe(0);

    const store = await sut.open();
    try {
      // A payment is unique per (site, payment_id) in both stores: found means once.
      for (const id of ackedPayments) {
        const p = await store.getPayment(siteId, id);
        expect(p?.amountMinor, id).toBe(Number(id.slice(4)));
      }
      const counts = new Map<number, number>();
      const tally = (events: { props?: unknown }[]) => {
        for (const e of events) {
          const s = (e.props as { seq: number }).seq;
          counts.set(s, (counts.get(s) ?? 0) + 1);
        }
      };
      if (kind === "sqlite") {
        // Events leave SQLite once the feed moved them (migration 19): ListEvents reads
        // the analytics store, drained here of what is left in the log (the kill may
        // have landed before DuckDB's commit, after it, or during SQLite's delete).
        const sqlitePath = sut.url.slice("sqlite:".length);
        const analytics = await openAnalyticsStore({
          path: analyticsPathBeside(sqlitePath),
          threads: 1,
          memoryLimit: "256MB",
        });
        const feed = createAnalyticsFeed({ sqlitePath, analytics, intervalMs: 1000 });
        try {
          await feed.runOnce();
          const engine = createDuckDbAnalytics({ analytics, timeoutMs: 60_000, perSite: 2 });
          let before: number | undefined;
          do {
            const page = await engine.pageEvents(siteId, {
              from: 0,
              to: Number.MAX_SAFE_INTEGER,
              limit: 1000,
              ...(before === undefined ? {} : { before }),
            });
            tally(page.events);
            before = page.next;
          } while (before !== undefined);
          // The engine's own count agrees, and SQLite's outbox is empty: nothing is in both.
          const rows = await analytics.writer.runAndReadAll(
            "SELECT CAST(props->>'$.seq' AS INTEGER) AS seq, count(*) AS n FROM events WHERE site_id = $1 GROUP BY 1",
            [siteId],
          );
          const moved = new Map(rows.getRows().map(([s, n]) => [Number(s), Number(n)]));
          expect(moved).toEqual(counts);
          const outbox = new Database(sqlitePath, { readonly: true });
          try {
            expect(outbox.prepare("SELECT count(*) AS n FROM events").get()).toEqual({ n: 0 });
          } finally {
            outbox.close();
          }
          const paid = await analytics.writer.runAndReadAll(
            "SELECT payment_id, count(*), any_value(amount_minor) FROM payments WHERE site_id = $1 GROUP BY 1",
            [siteId],
          );
          const payments = new Map(
            paid.getRows().map(([id, n, a]) => [String(id), [Number(n), Number(a)]]),
          );
          for (const id of ackedPayments)
            expect(payments.get(id), id).toEqual([1, Number(id.slice(4))]);
          for (const [id, [n]] of payments) expect(n, id).toBe(1);
          // The visits the batches kept, each in its events' transaction, are those the
          // events make: equal to every visit derived again from scratch (then rolled back).
          const visits = async () =>
            (
              await analytics.writer.runAndReadAll(
                "SELECT * FROM visits ORDER BY site_id, vid, v_start",
              )
            ).getRowsJS();
          const kept = await visits();
          expect(kept.length).toBeGreaterThan(0);
          await analytics.writer.run("BEGIN TRANSACTION");
          await rebuildVisits(analytics.writer);
          const derived = await visits();
          await analytics.writer.run("ROLLBACK");
          expect(kept).toEqual(derived);
        } finally {
          await feed.stop();
          analytics.close();
        }
      } else {
        tally(await store.listEvents(siteId, 1_000_000));
      }
      for (const id of ackedEvents) expect(counts.get(id), `event request ${id}`).toBe(2);
      // Unacknowledged requests are all-or-nothing too: a request's events are one group.
      for (const [s, n] of counts) {
        expect(sentEvents.has(s)).toBe(true);
        expect(n).toBe(2);
      }
    } finally {
      await store.close();
    }
  });
});
