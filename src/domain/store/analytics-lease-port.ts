/**
 * The analytics owner's lease: which one of the servers of a deployment owns
 * the analytics file (its feed moves the store's changes into it, its engine
 * answers Query and Funnel). The holder took the lease when it was free or
 * lapsed and renews it well before it lapses; the others stand by and take
 * it over once it lapsed (src/analytics-ownership.ts). Each store keeps it
 * where its writes are decided atomically: SQLite in the `analytics_lease`
 * row (migration 24, src/store/sqlite/analytics-lease.ts), MongoDB in the
 * `analytics_lease` collection (src/store/mongo/analytics-lease.ts). Every
 * decision is one conditional write, so two servers never both hold it.
 */

/** The lease as stored. */
export interface LeaseRow {
  holder: string;
  /** When this holder took it (the store's clock, Unix ms). */
  acquiredAt: number;
  /** When it lapses unless renewed (the store's clock, Unix ms). */
  expiresAt: number;
}

/** One process's handle on the lease. Every method may reject when the store is unreachable or busy. */
export interface AnalyticsLease {
  /** This process's holder id (host, pid and a random part). */
  readonly holder: string;
  /**
   * Takes the lease when nobody holds it, it lapsed, its holder is a process
   * of this host that no longer runs, or this process holds it already
   * (then it is renewed); true when this process holds it after.
   */
  acquire(): Promise<boolean>;
  /** Extends this process's lease; false when another holder has it now (it lapsed and was taken). */
  renew(): Promise<boolean>;
  /** Gives the lease up (a clean stop), so another server takes over at once. */
  release(): Promise<void>;
  /** The lease as stored, if any. */
  read(): Promise<LeaseRow | undefined>;
  /** Closes the handle's own connection. */
  close(): Promise<void>;
}
