/** The SQLite adapter of the store port: the embedded default. */
import type { Store } from "../port.js";
import { createSqliteAccounts } from "./accounts.js";
import { createSqliteAttribution } from "./attribution.js";
import { createSqliteEvents } from "./events.js";
import { openSqlite } from "./open-sqlite.js";
import { createSqlitePayments } from "./payments.js";

/** Opens `path` (created when missing), migrates it and returns the store. */
export function createSqliteStore(path: string, options: { busyTimeoutMs?: number } = {}): Store {
  const db = openSqlite(path, options);
  let closed = false;
  return {
    kind: "sqlite",
    ...createSqliteAccounts(db),
    ...createSqliteEvents(db),
    ...createSqlitePayments(db),
    ...createSqliteAttribution(db),
    async ping() {
      db.prepare("SELECT 1").get();
    },
    async close() {
      if (closed) return;
      closed = true;
      db.close();
    },
  };
}
