/**
 * Backup of a data directory whose events live in the analytics file
 * (migration 19): `admin store backup FILE` writes the SQLite copy to FILE
 * and the analytics file's to `FILE.analytics.duckdb`, consistent with each
 * other. The analytics file is copied first, at the feed's watermark, then
 * SQLite, with no batch of the feed in between: every event is in one of the
 * two copies (the outbox rows past the copied file's last moved id are still
 * in SQLite, since only the feed deletes them), and the restored feed
 * resumes from the copied watermark.
 *
 * Only the process holding the analytics file can copy it (DuckDB's lock):
 * without a server the CLI opens it and runs the copy itself; while a server
 * runs, the CLI asks its feed through SQLite (`store_backups`, migration 19)
 * and waits for the answer.
 */
import { existsSync, rmSync, statSync } from "node:fs";
import { resolve } from "node:path";
import Database from "better-sqlite3";
import { analyticsLeaseHeld } from "../sqlite/analytics-lease.js";
import { analyticsBackupOf, backupSqlite, CopyRefusedError } from "../sqlite/backup.js";
import {
  type AnalyticsStore,
  isHeldByAnotherProcess,
  openAnalyticsStore,
} from "./analytics-store.js";

/** What a backup wrote. */
export interface DataBackupReport {
  path: string;
  bytes: number;
  pages: number;
  seconds: number;
  analytics?: { path: string; bytes: number };
}

/** Copies the analytics store's tables into a new file (DuckDB's own copy, one transaction). */
export async function copyAnalytics(store: AnalyticsStore, dest: string): Promise<number> {
  rmSync(dest, { force: true });
  const name = (await store.writer.runAndReadAll("SELECT current_database()")).getRows()[0]?.[0];
  await store.writer.run(`ATTACH '${dest.replaceAll("'", "''")}' AS store_backup`);
  try {
    await store.writer.run(
      `COPY FROM DATABASE "${String(name).replaceAll('"', '""')}" TO store_backup`,
    );
  } finally {
    await store.writer.run("DETACH store_backup");
  }
  rmSync(`${dest}.wal`, { force: true });
  return statSync(dest).size;
}

/** Both copies, in the order that keeps them consistent (see above). */
export async function copyDataDirectory(
  sqlitePath: string,
  analytics: AnalyticsStore,
  file: string,
  busyTimeoutMs: number,
): Promise<DataBackupReport> {
  const analyticsPath = analyticsBackupOf(file);
  const bytes = await copyAnalytics(analytics, analyticsPath);
  try {
    const report = await backupSqlite(sqlitePath, file, { busyTimeoutMs });
    // The copy holds no backup request (a restored server must not run one again).
    const copy = new Database(file, { fileMustExist: true });
    try {
      copy.exec("DELETE FROM store_backups");
      // Nor the lease of the server it was copied from: a restored directory's first server owns it at once.
      const lease = copy
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'analytics_lease'")
        .get();
      if (lease) copy.exec("DELETE FROM analytics_lease");
    } finally {
      copy.close();
    }
    return {
      ...report,
      bytes: statSync(file).size,
      analytics: { path: analyticsPath, bytes },
    };
  } catch (err) {
    rmSync(analyticsPath, { force: true });
    throw err;
  }
}

/**
 * `admin store backup FILE` of a SQLite store in `sqlitePath` whose analytics
 * file is `analyticsPath`: done here when no process holds the analytics
 * file, else asked of the one that does (its feed answers between batches).
 */
export async function backupDataDirectory(options: {
  sqlitePath: string;
  analyticsPath: string;
  file: string;
  busyTimeoutMs: number;
  threads: number;
  memoryLimit: string;
  /** How long to wait for a running server's answer. */
  timeoutMs: number;
  now: () => number;
}): Promise<DataBackupReport> {
  const file = resolve(options.file);
  if (!existsSync(options.sqlitePath)) {
    throw new CopyRefusedError(`no database at ${options.sqlitePath}`);
  }
  for (const f of [file, analyticsBackupOf(file)]) {
    if (existsSync(f)) throw new CopyRefusedError(`${f} already exists; back up to a new file`);
  }
  let analytics: AnalyticsStore | undefined;
  // A running owner (its lease, migration 24) is asked even while it has the
  // file closed for a moment (a rewrite's swap).
  const held = analyticsLeaseHeld(options.sqlitePath, options.now());
  try {
    if (!held)
      analytics = await openAnalyticsStore({
        path: options.analyticsPath,
        threads: options.threads,
        memoryLimit: options.memoryLimit,
      });
  } catch (err) {
    if (!isHeldByAnotherProcess(err)) throw err;
  }
  if (analytics) {
    // No server, so no feed: nothing deletes from SQLite's outbox while the two copy.
    try {
      return await copyDataDirectory(options.sqlitePath, analytics, file, options.busyTimeoutMs);
    } finally {
      analytics.close();
    }
  }
  return askHolder(options, file);
}

/** Asks the process holding the analytics file for the backup, and waits for its answer. */
async function askHolder(
  options: { sqlitePath: string; busyTimeoutMs: number; timeoutMs: number; now: () => number },
  file: string,
): Promise<DataBackupReport> {
  const db = new Database(options.sqlitePath, { fileMustExist: true });
  try {
    db.pragma(`busy_timeout = ${options.busyTimeoutMs}`);
    const id = db
      .prepare("INSERT INTO store_backups (path, requested_at) VALUES (?, ?)")
      .run(file, options.now()).lastInsertRowid;
    const answer = db.prepare("SELECT done_at, report, error FROM store_backups WHERE id = ?");
    const deadline = performance.now() + options.timeoutMs;
    for (;;) {
      const r = answer.get(id) as
        | { done_at: number | null; report: string | null; error: string | null }
        | undefined;
      if (r?.done_at != null) {
        db.prepare("DELETE FROM store_backups WHERE id = ?").run(id);
        if (r.error !== null) throw new CopyRefusedError(r.error);
        return JSON.parse(r.report as string) as DataBackupReport;
      }
      if (performance.now() > deadline) {
        db.prepare("DELETE FROM store_backups WHERE id = ? AND done_at IS NULL").run(id);
        throw new CopyRefusedError(
          `the process holding the analytics store did not answer the backup within ${options.timeoutMs / 1000} s`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    db.close();
  }
}
