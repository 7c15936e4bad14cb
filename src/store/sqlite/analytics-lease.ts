/**
 * The analytics file's owner, chosen once per data directory (migration 24).
 * Several server processes may share one SQLite file; exactly one of them
 * owns `analytics.duckdb` (its feed moves the outbox, its engine answers
 * Query and Funnel). That one is the holder of the single `analytics_lease`
 * row: it took the row when it was free or lapsed, and renews it well before
 * `expires_at`. Another server stands by and takes the row over once it has
 * lapsed (the holder was killed, or hangs), then opens the file.
 *
 * Every decision is one SQLite statement under SQLite's write lock, so two
 * processes never both believe they took it. Expiry is judged with the
 * injected clock (`now`), which every process of one machine shares. One
 * shortcut: a holder on this host whose process is gone (a kill -9, a
 * crash; `kill(pid, 0)` answers ESRCH) is taken over at once, so a
 * restarted server or a replaced worker does not wait for the lapse. DuckDB's
 * own file lock stays the last fence: a new holder whose predecessor still
 * has the file open cannot open it and tries again at its next turn, while
 * the predecessor learns at its next renewal that it lost the row and closes
 * the file (src/analytics-ownership.ts).
 */
import { hostname } from "node:os";
import Database from "better-sqlite3";

/** The lease row as stored. */
export interface LeaseRow {
  holder: string;
  acquiredAt: number;
  expiresAt: number;
}

/** One process's handle on the lease of one data directory. */
export interface AnalyticsLease {
  /** This process's holder id (host, pid and a random part). */
  readonly holder: string;
  /**
   * Takes the lease when nobody holds it, it lapsed, or this process holds
   * it already (then it is renewed); true when this process holds it after.
   */
  acquire(): boolean;
  /** Extends this process's lease; false when another holder has it now (it lapsed and was taken). */
  renew(): boolean;
  /** Gives the lease up (a clean stop), so another server takes over at once. */
  release(): void;
  /** The row as stored, if any. */
  read(): LeaseRow | undefined;
  close(): void;
}

export interface AnalyticsLeaseOptions {
  /** The SQLite file of the data directory (the lease opens its own connection). */
  sqlitePath: string;
  /** How long a lease lasts after each renewal (ANALYTICS_LEASE_MS). */
  ttlMs: number;
  /** The clock expiry is judged by. */
  now: () => number;
  /** SQLite's busy timeout for the lease's statements. */
  busyTimeoutMs: number;
  /** The holder id; default: host, pid and a random part. */
  holder?: string;
}

/** Whether a holder id names a process of this host that no longer runs. */
function isGoneHere(holderId: string): boolean {
  const [host, pid] = holderId.split(":");
  if (host !== hostname() || !pid || !/^\d+$/.test(pid) || Number(pid) === process.pid) {
    return false;
  }
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}

/** Opens this process's handle on the lease of the data directory of `sqlitePath`. */
export function openAnalyticsLease(options: AnalyticsLeaseOptions): AnalyticsLease {
  const holder =
    options.holder ??
    `${hostname()}:${process.pid}:${Math.floor(Math.random() * 2 ** 32).toString(16)}`;
  const db = new Database(options.sqlitePath, { fileMustExist: true });
  db.pragma(`busy_timeout = ${options.busyTimeoutMs}`);
  const take = db.prepare(
    `INSERT INTO analytics_lease (id, holder, acquired_at, expires_at) VALUES (1, @holder, @now, @expires)
     ON CONFLICT (id) DO UPDATE SET
       holder = excluded.holder,
       acquired_at = CASE WHEN analytics_lease.holder = excluded.holder
                          THEN analytics_lease.acquired_at ELSE excluded.acquired_at END,
       expires_at = excluded.expires_at
     WHERE analytics_lease.holder = excluded.holder OR analytics_lease.expires_at <= @now`,
  );
  const extend = db.prepare(
    "UPDATE analytics_lease SET expires_at = @expires WHERE id = 1 AND holder = @holder",
  );
  const drop = db.prepare("DELETE FROM analytics_lease WHERE id = 1 AND holder = ?");
  const takeFromDead = db.prepare(
    `UPDATE analytics_lease SET holder = @holder, acquired_at = @now, expires_at = @expires
     WHERE id = 1 AND holder = @dead`,
  );
  const row = db.prepare(
    "SELECT holder, acquired_at AS acquiredAt, expires_at AS expiresAt FROM analytics_lease WHERE id = 1",
  );
  return {
    holder,
    acquire() {
      const now = options.now();
      const expires = now + options.ttlMs;
      if (take.run({ holder, now, expires }).changes === 1) return true;
      const current = row.get() as LeaseRow | undefined;
      if (!current || !isGoneHere(current.holder)) return false;
      // Compared and set in one statement: only the holder judged gone is replaced.
      return takeFromDead.run({ holder, now, expires, dead: current.holder }).changes === 1;
    },
    renew() {
      return extend.run({ holder, expires: options.now() + options.ttlMs }).changes === 1;
    },
    release() {
      if (db.open) drop.run(holder);
    },
    read: () => row.get() as LeaseRow | undefined,
    close() {
      if (db.open) db.close();
    },
  };
}

/**
 * Whether a server holds the data directory's lease now (a command run
 * beside it must not open the analytics file: the owner closes it for a
 * moment while it rewrites it, and must find it free to open it again).
 */
export function analyticsLeaseHeld(sqlitePath: string, now: number): boolean {
  const db = new Database(sqlitePath, { fileMustExist: true, readonly: true });
  try {
    const exists = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'analytics_lease'")
      .get();
    if (!exists) return false;
    const row = db.prepare("SELECT expires_at FROM analytics_lease WHERE id = 1").get() as
      | { expires_at: number }
      | undefined;
    return row !== undefined && row.expires_at > now;
  } finally {
    db.close();
  }
}
