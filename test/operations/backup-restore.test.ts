/**
 * Backup and restore of the SQLite store (issue 24): `admin store backup`
 * while a server takes writes, a second server on the copy, and `store
 * restore` refused while a server holds the database.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { runAdminCli } from "../helpers/cli.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { rpcClient } from "../helpers/rpc-clients.js";
import { ADMIN_TOKEN, postJson, startTestServer, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();
const dir = mkdtempSync(join(tmpdir(), "ingest-backup-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const headers = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };

/** Sends one pageview tagged `i`; resolves with `i` once acknowledged. */
async function send(i: number): Promise<number> {
  const res = await postJson(
    `${ctx.url}/api/v1/events`,
    {
      s: ctx.siteId,
      e: "pageview",
      u: `https://example.com/${i}`,
      ip: "203.0.113.9",
      ua: BROWSER_UA,
    },
    { key: ctx.key },
  );
  expect(res.status).toBe(204);
  return i;
}

/** Every event of a site, oldest first, by its tag. */
async function tags(url: string, siteId: string): Promise<number[]> {
  const client = rpcClient(ReportsService, url, "connect");
  const res = await client.listEvents({ siteId, limit: 1000 }, headers);
  return res.events.map((e) => Number(new URL(e.url).pathname.slice(1))).reverse();
}

describe("admin store backup and restore", () => {
  const dbPath = () => join(ctx.server.dir, "ingest.sqlite");
  const backup = join(dir, "copy.sqlite");

  it("backs up while the server takes writes: a second server on the restored copy has every write acknowledged before, and the same reports", async () => {
    const res = await postJson(
      `${ctx.url}/api/v1/payments`,
      {
        payment_id: "pay_1",
        customer: { id: "cus_1", email: "buyer@example.com" },
        amount: 29.99,
        currency: "USD",
        kind: "charge",
        paid_at: "2026-03-11T10:00:00Z",
        subscription: { id: "sub_1", interval: "month", amount: 29.99 },
      },
      { key: ctx.key },
    );
    expect(res.status).toBe(200);
    let next = 0;
    const acked: number[] = [];
    for (; next < 50; next++) acked.push(await send(next));
    // Writers keep going during the backup.
    let writing = true;
    const writer = (async () => {
      // Bounded: ListEvents reads at most 1000.
      while (writing && next < 900) acked.push(await send(next++));
    })();
    const ackedBefore = [...acked];
    const cli = await runAdminCli(["store", "backup", backup], { STORE_URL: `sqlite:${dbPath()}` });
    writing = false;
    await writer;
    expect(cli.exitCode).toBe(0);
    const report = cli.json as { path: string; bytes: number; pages: number; seconds: number };
    expect(report.path).toBe(backup);
    expect(report.pages).toBeGreaterThan(0);
    expect(report.bytes).toBe(report.pages * 4096);
    expect(report.seconds).toBeGreaterThanOrEqual(0);
    expect(existsSync(`${backup}-wal`)).toBe(false);
    expect(acked.length).toBeGreaterThan(ackedBefore.length);
    // The events the feed moved live in the analytics file (migration 19): the running
    // server's feed copied it beside the SQLite copy, consistently with it.
    expect(report).toMatchObject({
      analytics: { path: `${backup}.analytics.duckdb`, bytes: expect.any(Number) },
    });
    expect(existsSync(`${backup}.analytics.duckdb`)).toBe(true);

    // Restored into a data directory of its own, both files.
    const restoredDir = join(dir, "restored-data");
    mkdirSync(restoredDir);
    const restoredDb = join(restoredDir, "ingest.sqlite");
    const restored = await runAdminCli(["store", "restore", backup], {
      STORE_URL: `sqlite:${restoredDb}`,
    });
    expect(restored.exitCode).toBe(0);
    expect(existsSync(join(restoredDir, "analytics.duckdb"))).toBe(true);
    const second = await startTestServer({
      store: {
        kind: "sqlite",
        url: `sqlite:${restoredDb}`,
        open: async () => createSqliteStore(restoredDb),
        cleanup: async () => {},
      },
    });
    try {
      const copied = await tags(second.url, ctx.siteId);
      const live = await tags(ctx.url, ctx.siteId);
      // Every write acknowledged before the backup started is in the copy, and the copy is
      // the live database as of one commit: a prefix of its events, in the same order.
      expect(copied.slice(0, ackedBefore.length)).toEqual(ackedBefore);
      expect(live.slice(0, copied.length)).toEqual(copied);
      const reports = (url: string) => rpcClient(ReportsService, url, "connect");
      for (const call of [
        (u: string) => reports(u).revenueByChannel({ siteId: ctx.siteId }, headers),
        (u: string) => reports(u).mrr({ siteId: ctx.siteId }, headers),
        (u: string) => reports(u).getCustomer({ siteId: ctx.siteId, customerId: "cus_1" }, headers),
      ]) {
        expect(await call(second.url)).toEqual(await call(ctx.url));
      }
      // The engine's answers over the copy: the events of the copy, counted once each.
      const day = new Date(TEST_NOW).toISOString().slice(0, 10);
      const query = (u: string) =>
        reports(u).query(
          {
            siteId: ctx.siteId,
            metrics: ["pageviews", "visitors"],
            period: { fromDay: day, toDay: day },
          },
          headers,
        );
      const answer = await query(second.url);
      expect(answer.totals.map((m) => m.value)).toEqual([
        { case: "count", value: BigInt(copied.length) },
        { case: "count", value: 1n },
      ]);
      // No event of the copy is there twice (moved and still in the outbox).
      expect(new Set(copied).size).toBe(copied.length);
    } finally {
      await second.close();
    }
  });

  it("refuses to restore over a database a running server holds, and restores once it is stopped", async () => {
    const target = join(dir, "restored.sqlite");
    copyFileSync(backup, target);
    const held = createSqliteStore(target);
    const env = { STORE_URL: `sqlite:${target}` };
    try {
      const refused = await runAdminCli(["store", "restore", backup], env);
      expect(refused.exitCode).toBe(1);
      expect(refused.stdout).toBe("");
      expect(refused.stderr).toBe(
        `error: the database at ${target} is open in another process (a running server?); stop it before restoring\n`,
      );
    } finally {
      await held.close();
    }
    const restored = await runAdminCli(["store", "restore", backup], env);
    expect(restored.exitCode).toBe(0);
    expect(restored.json).toMatchObject({ path: target });
    const store = createSqliteStore(target);
    try {
      expect(await store.getCustomer(ctx.siteId, "cus_1")).toMatchObject({
        email: "buyer@example.com",
      });
    } finally {
      await store.close();
    }
    const notADatabase = join(dir, "notes.txt");
    copyFileSync(join(import.meta.dirname, "backup-restore.test.ts"), notADatabase);
    const bad = await runAdminCli(["store", "restore", notADatabase], env);
    expect(bad.exitCode).toBe(1);
    expect(bad.stderr).toBe(`error: ${notADatabase} is not a database of this service\n`);
    const mongo = await runAdminCli(["store", "backup", join(dir, "x")], {
      STORE_URL: "mongodb://127.0.0.1:1/ingest",
    });
    expect(mongo.stderr).toBe(
      "error: store backup copies a SQLite file; for MongoDB use mongodump or snapshots (docs/operations.md)\n",
    );
  });
});
