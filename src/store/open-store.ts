/** Chooses the store adapter from STORE_URL. */
import type { MigrationReport } from "./mongo/schema.js";
import type { Store } from "./port.js";
import { createSqliteStore } from "./sqlite/sqlite-store.js";

export type { MigrationReport };

/**
 * Opens the store named by `url`: `sqlite:<path>` (or `sqlite::memory:`) for
 * the embedded adapter, `mongodb://…` or `mongodb+srv://…` for MongoDB.
 * SQLite applies its versioned migrations at every open (its file belongs to
 * the service). MongoDB only verifies its schema and refuses to open when
 * something is missing, unless `migrate` is given (`admin store migrate`):
 * then it creates what is missing first and reports it.
 */
export async function openStore(
  url: string,
  options: {
    sqliteBusyTimeoutMs?: number;
    storeTimeoutMs?: number;
    migrate?: (report: MigrationReport) => void;
  } = {},
): Promise<Store> {
  if (url.startsWith("sqlite:")) {
    const store = createSqliteStore(url.slice("sqlite:".length), {
      busyTimeoutMs: options.sqliteBusyTimeoutMs,
    });
    // Its migrations ran in the constructor; nothing is left to report.
    options.migrate?.({ created: [], updated: [], dropped: [] });
    return store;
  }
  if (url.startsWith("mongodb://") || url.startsWith("mongodb+srv://")) {
    // Loaded on demand so the embedded default does not pay for the driver.
    const { createMongoStore } = await import("./mongo/mongo-store.js");
    return createMongoStore(url, { timeoutMs: options.storeTimeoutMs, migrate: options.migrate });
  }
  throw new Error(`unsupported STORE_URL scheme: ${url.split(":")[0]}`);
}
