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
import Database from "better-sqlite3";
import type { AnalyticsLease, LeaseRow } from "../../domain/store/analytics-lease-port.js";
import { isGoneHere, newHolderId } from "../../lib/lease-holder.js";

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

/** Opens this process's handle on the lease of the data directory of `sqlitePath`. */
export function openAnalyticsLease(options: AnalyticsLeaseOptions): AnalyticsLease {
  const holder = options.holder ?? newHolderId();
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
  // Each decision is one statement (better-sqlite3 runs them synchronously):
  // the port's promises only carry the answer.
  const acquire = (): boolean => {
    const now = options.now();
    const expires = now + options.ttlMs;
    if (take.run({ holder, now, expires }).changes === 1) return true;
    const current = row.get() as LeaseRow | undefined;
    if (!current || !isGoneHere(current.holder)) return false;
    // Compared and set in one statement: only the holder judged gone is replaced.
    return takeFromDead.run({ holder, now, expires, dead: current.holder }).changes === 1;
  };
  return {
    holder,
    acquire: async () => acquire(),
    renew: async () => extend.run({ holder, expires: options.now() + options.ttlMs }).changes === 1,
    async release() {
      if (db.open) drop.run(holder);
    },
    read: async () => row.get() as LeaseRow | undefined,
    async close() {
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
