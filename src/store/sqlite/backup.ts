/**
 * Backup and restore of the SQLite store (`admin store backup|restore`).
 * A backup is SQLite's online backup (better-sqlite3's `db.backup()`) from a
 * connection of its own, copying every page in one step: one read
 * transaction, so the copy is the database as of one commit, while the
 * server keeps writing (WAL mode: readers never block the writer).
 */
import { copyFileSync, existsSync, rmSync, statSync } from "node:fs";
import { resolve } from "node:path";
import Database from "better-sqlite3";
import { analyticsPathBeside } from "../duckdb/analytics-store.js";
import { MIGRATIONS } from "./migrations.js";

/** The analytics file's copy beside a backup `FILE` (src/store/duckdb/analytics-backup.ts). */
export const analyticsBackupOf = (file: string) => `${file}.analytics.duckdb`;

/** What a backup or a restore wrote. */
export interface CopyReport {
  /** The absolute path written. */
  path: string;
  bytes: number;
  pages: number;
  seconds: number;
}

/** A restore or backup refused before anything was written. */
export class CopyRefusedError extends Error {
  override readonly name = "CopyRefusedError";
}

/** All remaining pages in the next step (better-sqlite3 caps the rate at 2^31-1). */
const ALL_PAGES = 0x7fffffff;

async function copy(sourcePath: string, dest: string, busyTimeoutMs: number): Promise<CopyReport> {
  const started = performance.now();
  const source = new Database(sourcePath, { readonly: true, fileMustExist: true });
  try {
    source.pragma(`busy_timeout = ${busyTimeoutMs}`);
    const { totalPages } = await source.backup(dest, { progress: () => ALL_PAGES });
    return {
      path: dest,
      bytes: statSync(dest).size,
      pages: totalPages,
      seconds: Number(((performance.now() - started) / 1000).toFixed(3)),
    };
  } finally {
    source.close();
  }
}

/**
 * Copies the database at `dbPath` to `dest`, a file that must not exist yet
 * (so a typo cannot overwrite a database, the live one included).
 */
export async function backupSqlite(
  dbPath: string,
  dest: string,
  options: { busyTimeoutMs?: number } = {},
): Promise<CopyReport> {
  const target = resolve(dest);
  if (!existsSync(dbPath)) throw new CopyRefusedError(`no database at ${dbPath}`);
  if (existsSync(target))
    throw new CopyRefusedError(`${target} already exists; back up to a new file`);
  const report = await copy(dbPath, target, options.busyTimeoutMs ?? 5000);
  // The copy carries the source's WAL mode; in rollback mode it is one
  // self-contained file (no -wal or -shm beside it once opened).
  const copyDb = new Database(target, { fileMustExist: true });
  try {
    copyDb.pragma("journal_mode = DELETE");
  } finally {
    copyDb.close();
  }
  return { ...report, bytes: statSync(target).size };
}

/**
 * Whether another connection has the database open. Leaving WAL mode needs
 * the only connection: while a server (any process) holds the file, the
 * change is refused (SQLITE_BUSY, or the mode stays `wal`). Closing the last
 * connection checkpoints the WAL, so an idle file is left whole.
 */
function inUse(dbPath: string): boolean {
  const db = new Database(dbPath, { fileMustExist: true });
  try {
    db.pragma("busy_timeout = 0");
    const mode = db.pragma("journal_mode = DELETE", { simple: true });
    return mode !== "delete";
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith("SQLITE_BUSY")) return true;
    throw err;
  } finally {
    db.close();
  }
}

/**
 * Replaces the database at `dbPath` with the backup `backupPath`: refused
 * while a running server (or any process) has `dbPath` open, and when the
 * backup is not a database of this service (or of a newer version).
 */
export async function restoreSqlite(backupPath: string, dbPath: string): Promise<CopyReport> {
  const from = resolve(backupPath);
  if (!existsSync(from)) throw new CopyRefusedError(`no backup at ${from}`);
  const check = new Database(from, { readonly: true, fileMustExist: true });
  try {
    const version = check.pragma("user_version", { simple: true }) as number;
    const latest = MIGRATIONS.at(-1)?.version ?? 0;
    if (check.pragma("quick_check", { simple: true }) !== "ok" || version < 1) {
      throw new CopyRefusedError(`${from} is not a database of this service`);
    }
    if (version > latest) {
      throw new CopyRefusedError(
        `${from} has schema version ${version}, newer than this version's ${latest}`,
      );
    }
  } catch (err) {
    if (err instanceof CopyRefusedError) throw err;
    throw new CopyRefusedError(`${from} is not a database of this service`);
  } finally {
    check.close();
  }
  const target = resolve(dbPath);
  if (existsSync(target) && inUse(target)) {
    throw new CopyRefusedError(
      `the database at ${target} is open in another process (a running server?); stop it before restoring`,
    );
  }
  const report = await copy(from, target, 0);
  // The analytics file beside it belongs to the database it replaced. A backup
  // of a data directory brings its own (where the moved events are: migration
  // 19), copied in place; a backup of SQLite alone (before migration 19, when
  // SQLite kept every event) has none, and the file is rebuilt from it at start.
  const analytics = analyticsPathBeside(target);
  for (const file of [analytics, `${analytics}.wal`]) rmSync(file, { force: true });
  const companion = analyticsBackupOf(from);
  if (existsSync(companion)) copyFileSync(companion, analytics);
  return report;
}
