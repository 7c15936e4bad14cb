/** The SQLite adapter of the store port: the embedded default. */
import Database from "better-sqlite3";
import type { Store } from "../port.js";
import { createSqliteAccounts } from "./accounts.js";
import { createSqliteAttribution } from "./attribution.js";
import { createSqliteEvents } from "./events.js";
import { openSqlite } from "./open-sqlite.js";
import { createSqlitePayments } from "./payments.js";

/** Opens `path` (created when missing), migrates it and returns the store. */
export function createSqliteStore(path: string, options: { busyTimeoutMs?: number } = {}): Store {
  const db = openSqlite(path, options);
  // Readiness writes one row on a connection of its own with a short wait for
  // the lock: reads keep working in WAL mode while another process holds the
  // lock, the file is read-only or the disk is full, but writes would not.
  const probe = path === ":memory:" ? undefined : new Database(path);
  probe?.pragma("busy_timeout = 100");
  const probeWrite = probe?.prepare(
    "INSERT INTO readiness_probe (id, checked_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at",
  );
  let closed = false;
  return {
    kind: "sqlite",
    ...createSqliteAccounts(db),
    ...createSqliteEvents(db),
    ...createSqlitePayments(db),
    ...createSqliteAttribution(db),
    async ping() {
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
