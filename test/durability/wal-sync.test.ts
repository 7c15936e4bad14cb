/**
 * SQLite commits with synchronous=NORMAL and the store syncs the WAL off the
 * JS thread: an acknowledged write is one whose WAL sync finished, and a sync
 * that fails stops the store from acknowledging anything more.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../src/domain/store-errors.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { createWalSync, fdatasyncFile } from "../../src/store/sqlite/wal-sync.js";
import { paymentWrite, STORE_UNAVAILABLE, validEvent, validPayment } from "../helpers/fixtures.js";
import { useTempDirs } from "../helpers/temp-dirs.js";
import { createTenant, postJson, startTestServer, TEST_NOW } from "../helpers/test-server.js";
import { withTestServer } from "../helpers/use-test-server.js";

/** A syncFile whose calls wait until the test settles them. */
function heldSyncs() {
  const calls: { path: string; resolve(): void; reject(err: Error): void }[] = [];
  const syncFile = (path: string) =>
    new Promise<void>((resolve, reject) => {
      calls.push({ path, resolve, reject });
    });
  return { calls, syncFile };
}

/** Whether `p` settled within a few turns of the event loop. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  return done;
}

const tempDir = useTempDirs("wal-sync-");

describe("createWalSync", () => {
  it("a caller waits for a sync that started after its call, shared with the others who came meanwhile", async () => {
    const { calls, syncFile } = heldSyncs();
    const wal = createWalSync("/db-wal", syncFile);
    const first = wal.sync();
    const second = wal.sync();
    const third = wal.sync();
    expect(second).toBe(third);
    expect(calls).toHaveLength(1);
    calls[0]?.resolve();
    await first;
    // The first sync may have started before the second caller's write: a new one runs for it.
    expect(await settled(second)).toBe(false);
    expect(calls).toHaveLength(2);
    calls[1]?.resolve();
    await second;
    expect(calls.map((c) => c.path)).toEqual(["/db-wal", "/db-wal"]);
  });

  it("a failed sync fails its callers and every later one, without trying again", async () => {
    const { calls, syncFile } = heldSyncs();
    const wal = createWalSync("/db-wal", syncFile);
    const first = wal.sync();
    const queued = wal.sync();
    calls[0]?.reject(Object.assign(new Error("EIO: i/o error"), { code: "EIO" }));
    await expect(first).rejects.toThrow(StoreUnavailableError);
    await expect(first).rejects.toThrow("the database file could not be synced");
    await expect(queued).rejects.toThrow(StoreUnavailableError);
    await expect(wal.sync()).rejects.toThrow(StoreUnavailableError);
    expect(calls).toHaveLength(1);
    expect(wal.failure?.message).toBe("the database file could not be synced");
  });

  it("fdatasync: a real file syncs, a missing file has nothing to sync, a directory fails", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "x-wal"), "frames");
    await expect(fdatasyncFile(join(dir, "x-wal"))).resolves.toBeUndefined();
    await expect(fdatasyncFile(join(dir, "missing-wal"))).resolves.toBeUndefined();
    await expect(fdatasyncFile(dir)).rejects.toThrow(/EISDIR/);
  });
});

describe("the SQLite store", () => {
  const payment = (paymentId: string) => paymentWrite("site_1", validPayment(paymentId), TEST_NOW);

  it("resolves a write only after its WAL sync; reads and writes that change nothing do not wait", async () => {
    const { calls, syncFile } = heldSyncs();
    const path = join(tempDir(), "ingest.sqlite");
    const store = createSqliteStore(path, { syncFile });
    try {
      const write = store.commitPayments([payment("pay_1")]);
      expect(await settled(write)).toBe(false);
      expect(calls.map((c) => c.path)).toEqual([`${path}-wal`]);
      // Committed to SQLite (readable) but not acknowledged until the sync is done.
      expect((await store.getPayment("site_1", "pay_1"))?.amountMinor).toBe(2999);
      calls[0]?.resolve();
      await write;
      // An upsert whose WHERE keeps the row as it is changes nothing: no sync.
      await store.setAttribution("site_1", "cus_1", undefined);
      await store.getCustomer("site_1", "cus_1");
      expect(calls).toHaveLength(1);
    } finally {
      await store.close();
    }
  });
});

describe("through the REST door", () => {
  it("answers an event only after the WAL sync of its commit", async () => {
    // Syncs pass until the test holds them.
    let hold = false;
    const held: (() => void)[] = [];
    const holding = {
      syncFile: () =>
        hold ? new Promise<void>((resolve) => held.push(resolve)) : Promise.resolve(),
    };
    await withTestServer(holding, async (server, tenant) => {
      try {
        hold = true;
        const event = postJson(`${server.url}/api/v1/events`, validEvent(tenant.siteId), {
          key: tenant.key,
        });
        // Its commit reaches the held sync, however slow the machine.
        while (held.length === 0) await new Promise((r) => setTimeout(r, 5));
        expect(await settled(event)).toBe(false);
        hold = false;
        for (const release of held.splice(0)) release();
        expect((await event).status).toBe(204);
      } finally {
        hold = false;
        for (const release of held.splice(0)) release();
      }
    });
  });

  it("a failed sync answers 503 unavailable, turns /readyz 503 and acknowledges nothing more", async () => {
    let fail = false;
    const failing = {
      syncFile: () =>
        fail
          ? Promise.reject(Object.assign(new Error("EIO: i/o error"), { code: "EIO" }))
          : Promise.resolve(),
    };
    await withTestServer(failing, async (server, tenant) => {
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      fail = true;
      const res = await postJson(`${server.url}/api/v1/payments`, validPayment("pay_x"), {
        key: tenant.key,
      });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("2");
      expect(res.body).toEqual(STORE_UNAVAILABLE);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
      // Sticky: the disk is fine again, but what was written since the failure cannot be vouched for.
      fail = false;
      const after = await postJson(`${server.url}/api/v1/events`, validEvent(tenant.siteId), {
        key: tenant.key,
      });
      expect(after.status).toBe(503);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    });
  });

  it.each([
    ["4", 2],
    ["1", 1],
  ])(
    "with INGEST_BATCHES_IN_FLIGHT=%s, %i of two requests are committed while the first one's sync is held",
    async (inFlight, rows) => {
      let hold = false;
      const held: (() => void)[] = [];
      const server = await startTestServer({
        env: { INGEST_BATCHES_IN_FLIGHT: inFlight },
        syncFile: () =>
          hold ? new Promise<void>((resolve) => held.push(resolve)) : Promise.resolve(),
      });
      const reader = new Database(join(server.dir, "ingest.sqlite"), { readonly: true });
      // Events committed so far: the highest id given (AUTOINCREMENT, migration 19). A
      // count of rows would fall as the analytics feed moves events out of the outbox.
      const count = () =>
        (
          reader
            .prepare("SELECT coalesce(max(seq), 0) AS n FROM sqlite_sequence WHERE name = 'events'")
            .get() as { n: number }
        ).n;
      try {
        const tenant = await createTenant(server);
        // The day's visitor salt is stored by the first event: store it before holding syncs.
        expect(
          (
            await postJson(`${server.url}/api/v1/events`, validEvent(tenant.siteId), {
              key: tenant.key,
            })
          ).status,
        ).toBe(204);
        const before = count();
        hold = true;
        const first = postJson(`${server.url}/api/v1/events`, validEvent(tenant.siteId), {
          key: tenant.key,
        });
        while (count() < before + 1) await new Promise((r) => setTimeout(r, 5));
        const second = postJson(`${server.url}/api/v1/events`, validEvent(tenant.siteId), {
          key: tenant.key,
        });
        // Both batches in flight: the second commit shows up (however slow the machine);
        // one at a time: it does not, however long it is given.
        const deadline = Date.now() + 10_000;
        while (count() - before < rows && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 5));
        }
        await new Promise((r) => setTimeout(r, 300));
        // Committed (readable by another connection) but not acknowledged: the syncs are held.
        expect(count() - before).toBe(rows);
        expect(await settled(first)).toBe(false);
        expect(await settled(second)).toBe(false);
        hold = false;
        for (const release of held.splice(0)) release();
        while (held.length > 0 || !(await settled(second))) {
          for (const release of held.splice(0)) release();
          await new Promise((r) => setTimeout(r, 5));
        }
        expect((await first).status).toBe(204);
        expect((await second).status).toBe(204);
        expect(count() - before).toBe(2);
      } finally {
        hold = false;
        for (const release of held.splice(0)) release();
        reader.close();
        await server.close();
      }
    },
  );
});
