/** The SQLite adapter of the store port: the embedded default. */
import Database from "better-sqlite3";
import type { Store } from "../port.js";
import { createSqliteAccounts } from "./accounts.js";
import { createSqliteAttribution } from "./attribution.js";
import { createSqliteConnectors } from "./connectors.js";
import { createSqliteErasure } from "./erasure.js";
import { createSqliteEvents } from "./events.js";
import { openSqlite } from "./open-sqlite.js";
import { createSqliteOverview } from "./overview.js";
import { createSqlitePayments } from "./payments.js";
import { createSqlitePersistentVisitors } from "./persistent-visitors.js";
import { createSqliteRetention } from "./retention.js";
import { createSqliteSetup } from "./setup.js";
import { countChanges, createWalSync, type SyncFile } from "./wal-sync.js";

export interface SqliteStoreOptions {
  busyTimeoutMs?: number;
  /** How the WAL file is synced after a write (tests hold or fail it); fdatasync by default. */
  syncFile?: SyncFile;
}

/** How long the checkpoint after an erasure waits for other connections, at most. */
const CHECKPOINT_WAIT_MS = 200;

/** Opens `path` (created when missing), migrates it and returns the store. */
export function createSqliteStore(path: string, options: SqliteStoreOptions = {}): Store {
  const db = openSqlite(path, options);
  const changes = countChanges(db);
  const wal = path === ":memory:" ? undefined : createWalSync(`${path}-wal`, options.syncFile);
  // Readiness writes one row on a connection of its own with a short wait for
  // the lock: reads keep working in WAL mode while another process holds the
  // lock, the file is read-only or the disk is full, but writes would not.
  const probe = path === ":memory:" ? undefined : new Database(path);
  probe?.pragma("busy_timeout = 100");
  const probeWrite = probe?.prepare(
    "INSERT INTO readiness_probe (id, checked_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at",
  );
  let closed = false;
  const parts: Record<string, unknown> = {
    ...createSqliteAccounts(db),
    ...createSqliteEvents(db),
    ...createSqlitePayments(db),
    ...createSqliteAttribution(db),
    ...createSqlitePersistentVisitors(db),
    ...createSqliteConnectors(db),
    ...createSqliteErasure(db),
    ...createSqliteOverview(db),
    ...createSqliteRetention(db),
    ...createSqliteSetup(db),
  };
  // Every method that changed rows resolves only after the WAL is synced: the
  // adapter's methods do their SQLite work synchronously, so the count read
  // right after the call is that call's own.
  for (const [name, fn] of Object.entries(parts)) {
    if (typeof fn !== "function" || wal === undefined) continue;
    parts[name] = (...args: unknown[]) => {
      const before = changes.count;
      const result = (fn as (...a: unknown[]) => Promise<unknown>)(...args);
      return changes.count === before ? result : result.then((r) => wal.sync().then(() => r));
    };
  }
  // After an erasure the WAL still holds the frames of the pages as they were: a
  // checkpoint copies the new pages into the database (where secure_delete zeroed
  // the erased rows) and TRUNCATE empties the WAL file. It fails to finish while a
  // reader holds an old snapshot; the next erasure or SQLite's own checkpoints
  // complete it (docs/privacy.md). TRUNCATE waits on the busy handler for other
  // processes' writers and readers, on this (the JS) thread: the wait is cut to
  // CHECKPOINT_WAIT_MS, and the erasure, committed already, succeeds either way.
  const checkpoint = () => {
    if (path === ":memory:") return;
    const busy = db.pragma("busy_timeout", { simple: true }) as number;
    db.pragma(`busy_timeout = ${CHECKPOINT_WAIT_MS}`);
    try {
      db.pragma("wal_checkpoint(TRUNCATE)");
    } catch {
      // Busy or interrupted: left to the next checkpoint.
    } finally {
      db.pragma(`busy_timeout = ${busy}`);
    }
  };
  for (const name of ["eraseCustomer", "eraseUserLinks", "eraseVisitors"]) {
    const fn = parts[name] as (...a: unknown[]) => Promise<unknown>;
    parts[name] = (...args: unknown[]) =>
      fn(...args).then((r) => {
        checkpoint();
        return r;
      });
  }
  return {
    kind: "sqlite",
    commitsInOrder: true,
    ...(path === ":memory:" ? {} : { feedFile: path }),
    ...(parts as unknown as Omit<Store, "kind" | "commitsInOrder" | "ping" | "close">),
    async ping() {
      // A failed sync is sticky: nothing written since can be vouched for.
      if (wal?.failure) throw wal.failure;
      db.prepare("SELECT 1").get();
      // A real commit, so a failure to write (lock, read-only, full, I/O) shows; it
      // recovers by itself, as every probe tries again.
      probeWrite?.run(Date.now());
    },
    async close() {
      if (closed) return;
      closed = true;
      probe?.close();
      db.close();
    },
  };
}
