/** Chooses the store adapter from STORE_URL. */
import type { Store } from "./port.js";
import { createSqliteStore } from "./sqlite/sqlite-store.js";

/**
 * Opens the store named by `url`: `sqlite:<path>` (or `sqlite::memory:`) for
 * the embedded adapter, `mongodb://…` or `mongodb+srv://…` for MongoDB.
 * Both create their schema idempotently before resolving.
 */
export async function openStore(
  url: string,
  options: { sqliteBusyTimeoutMs?: number; storeTimeoutMs?: number } = {},
): Promise<Store> {
  if (url.startsWith("sqlite:")) {
    return createSqliteStore(url.slice("sqlite:".length), {
      busyTimeoutMs: options.sqliteBusyTimeoutMs,
    });
  }
  if (url.startsWith("mongodb://") || url.startsWith("mongodb+srv://")) {
    // Loaded on demand so the embedded default does not pay for the driver.
    const { createMongoStore } = await import("./mongo/mongo-store.js");
    return createMongoStore(url, { timeoutMs: options.storeTimeoutMs });
  }
  throw new Error(`unsupported STORE_URL scheme: ${url.split(":")[0]}`);
}
