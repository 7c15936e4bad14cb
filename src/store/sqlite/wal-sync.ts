/**
 * Durable commits without blocking the event loop.
 *
 * With `synchronous=FULL` SQLite syncs the WAL inside every COMMIT, and
 * better-sqlite3 runs COMMIT on the JS thread: the process serves nobody for
 * the 0.3-0.5 ms this machine's disk takes (longer on network disks), and
 * the next batch cannot be applied meanwhile (docs/performance.md, fourth
 * pass). The store therefore commits with
 * `synchronous=NORMAL`, which writes the WAL frames to the OS without
 * syncing them, and syncs the WAL file itself afterwards with `fdatasync` on
 * libuv's thread pool; a write resolves only after a sync that started after
 * its commit. Frames on disk are what SQLite replays after a power cut, so
 * an acknowledged write survives one exactly as under FULL, while the JS
 * thread parses and validates the next requests during the sync.
 *
 * Syncs are shared: every write that finished before a sync started is
 * covered by it, so under load one sync serves a whole batch of commits.
 * A failed sync is sticky: the kernel may have dropped the unsynced pages,
 * so no later sync can vouch for them; every write after it fails (503) and
 * readiness reports the store down until the process is restarted.
 */
import { close, fdatasync, open } from "node:fs";
import type Database from "better-sqlite3";
import { StoreUnavailableError, withCause } from "../../domain/store-errors.js";

/** Syncs one file's data to disk. */
export type SyncFile = (path: string) => Promise<void>;

/**
 * open + fdatasync + close on the thread pool; a missing file has nothing to
 * sync. Opened by path each time rather than held open: two cheap calls off
 * the JS thread buy the certainty that the file synced is the one SQLite
 * writes now.
 */
export const fdatasyncFile: SyncFile = (path) =>
  new Promise((resolve, reject) => {
    open(path, "r+", (openErr, fd) => {
      // No WAL file: SQLite deletes it only after checkpointing it into the
      // database file, which it syncs itself.
      if (openErr) return openErr.code === "ENOENT" ? resolve() : reject(openErr);
      fdatasync(fd, (syncErr) => {
        close(fd, () => (syncErr ? reject(syncErr) : resolve()));
      });
    });
  });

export interface WalSync {
  /** Resolves once everything written before the call is on disk. */
  sync(): Promise<void>;
  /** The sticky failure, once a sync has failed. */
  readonly failure: Error | undefined;
}

export function createWalSync(walPath: string, syncFile: SyncFile = fdatasyncFile): WalSync {
  // The sync in progress (settled, never rejected) and the one queued behind it.
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  let failure: StoreUnavailableError | undefined;

  const start = (): Promise<void> => {
    if (failure) return Promise.reject(failure);
    const synced = syncFile(walPath).catch((err: unknown) => {
      failure ??= withCause(
        new StoreUnavailableError("the database file could not be synced"),
        err,
      );
      throw failure;
    });
    const settled = synced.then(
      () => {},
      () => {},
    );
    running = settled;
    void settled.then(() => {
      if (running === settled) running = undefined;
    });
    return synced;
  };

  return {
    sync() {
      if (failure) return Promise.reject(failure);
      if (running === undefined) return start();
      // The running sync may have started before this caller's write: wait for the
      // next one, shared by everyone who arrives meanwhile.
      next ??= running.then(() => {
        next = undefined;
        return start();
      });
      return next;
    },
    get failure() {
      return failure;
    },
  };
}

/**
 * Counts the statements of `db` that changed rows. Every statement the
 * adapter prepares after this call is counted, so no write path can forget
 * to wait for its sync; BEGIN and COMMIT (better-sqlite3 prepares those
 * natively) and statements that changed nothing do not count.
 */
export function countChanges(db: Database.Database): { readonly count: number } {
  const counter = { count: 0 };
  const prepare = db.prepare;
  db.prepare = function (this: Database.Database, source: string) {
    const stmt = prepare.call(this, source) as Database.Statement<unknown[]>;
    if (!stmt.reader) {
      const run = stmt.run;
      stmt.run = (...params: unknown[]) => {
        const info = run.apply(stmt, params);
        if (info.changes > 0) counter.count += 1;
        return info;
      };
    }
    return stmt;
  } as typeof db.prepare;
  return counter;
}
