/** Opens the SQLite database with the durability settings and applies migrations. */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { MIGRATIONS } from "./migrations.js";

export type Db = Database.Database;

/** `PRAGMA auto_vacuum`'s value for INCREMENTAL. */
const INCREMENTAL = 2;

/**
 * The WAL file's size SQLite truncates it back to when it restarts it after a
 * complete checkpoint: a burst (a backlog the feed deletes at once, an
 * erasure) leaves no large WAL file behind (docs/performance.md, issue 30).
 */
export const WAL_SIZE_LIMIT_BYTES = 4 * 1024 * 1024;

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
  // Before the first table: a new file is made in this mode at once (an existing one
  // ignores it until a VACUUM, useIncrementalVacuum below).
  db.pragma("auto_vacuum = INCREMENTAL");
  db.pragma("journal_mode = WAL");
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  db.pragma("synchronous = FULL");
  db.pragma("foreign_keys = ON");
  // Deleted content is overwritten with zeros, in the file and in freed pages:
  // an erased customer or visitor cannot be read back from the file's free space
  // (docs/privacy.md). Per connection; costs a little on deletes only.
  db.pragma("secure_delete = ON");
  migrate(db);
  useIncrementalVacuum(db);
  db.pragma("synchronous = NORMAL");
  return db;
}

/**
 * Switches a file made before incremental auto-vacuum to it: the mode of an
 * existing file changes only with a VACUUM, which rewrites the whole file
 * (and cannot run inside a migration's transaction). Done at open whenever
 * the mode differs, so a file of any origin (an older build's, a restored
 * backup of one, a copy made by another tool) is switched once, before the
 * service writes to it; a file already in the mode costs one pragma read.
 * From then on the freed pages of the events the feed moved go back to the
 * file system in short steps (analytics-feed.ts, `reclaimFreePages`) instead
 * of staying in the file for ever. The VACUUM copies the live pages only
 * (free ones are dropped), holds the write lock for its length (seconds per
 * GB of live data) and needs about that much free disk space; the cluster
 * primary opens the store before it forks its workers, and `admin store
 * migrate` does it ahead of a start.
 */
export function useIncrementalVacuum(db: Db): void {
  if (db.pragma("auto_vacuum", { simple: true }) === INCREMENTAL) return;
  db.pragma("auto_vacuum = INCREMENTAL");
  db.exec("VACUUM");
  // The rewritten file went through the WAL: give its space back at once.
  db.pragma("wal_checkpoint(TRUNCATE)");
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
