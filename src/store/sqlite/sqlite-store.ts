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
  // Readiness probes the write lock on a connection of its own with a short
  // wait: reads keep working in WAL mode while another process holds the
  // lock, but writes would not.
  const probe = path === ":memory:" ? undefined : new Database(path);
  probe?.pragma("busy_timeout = 100");
  let closed = false;
  return {
    kind: "sqlite",
    ...createSqliteAccounts(db),
    ...createSqliteEvents(db),
    ...createSqlitePayments(db),
    ...createSqliteAttribution(db),
    async ping() {
      db.prepare("SELECT 1").get();
      if (probe) {
        probe.exec("BEGIN IMMEDIATE");
        probe.exec("ROLLBACK");
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      probe?.close();
      db.close();
    },
  };
}
