/** Opens the SQLite database with the durability settings and applies migrations. */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { MIGRATIONS } from "./migrations.js";

export type Db = Database.Database;

/**
 * Opens (creating when needed) the database at `path`. WAL mode lets readers
 * run beside the writer; `busy_timeout` lets several server processes share
 * the file. Migrations commit with `synchronous=FULL`; after them the
 * connection commits with `synchronous=NORMAL` and the store syncs the WAL
 * off the JS thread before it answers (src/store/sqlite/wal-sync.ts), so an
 * acknowledged write survives a power cut either way.
 */
export function openSqlite(path: string, options: { busyTimeoutMs?: number } = {}): Db {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.pragma("foreign_keys = ON");
  // Deleted content is overwritten with zeros, in the file and in freed pages:
  // an erased customer or visitor cannot be read back from the file's free space
  // (docs/privacy.md). Per connection; costs a little on deletes only.
  db.pragma("secure_delete = ON");
  migrate(db);
  db.pragma("synchronous = NORMAL");
  return db;
}

/** Applies the migrations newer than the database's `user_version`, each in its own transaction. */
export function migrate(db: Db): void {
  for (const m of MIGRATIONS) {
    db.transaction(() => {
      // Read inside the write lock: several processes may start at once.
      if ((db.pragma("user_version", { simple: true }) as number) >= m.version) return;
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    }).immediate();
  }
}

/** null from SQLite becomes undefined in the domain. */
export function opt<T>(value: T | null): T | undefined {
  return value === null ? undefined : value;
}

/** undefined in the domain becomes NULL in SQLite. */
export function nul<T>(value: T | undefined): T | null {
  return value === undefined ? null : value;
}
