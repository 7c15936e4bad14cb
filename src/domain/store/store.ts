/**
 * The store port: what the service needs from a database, in the domain's
 * words, one small interface per part. It belongs to the domain; the SQLite
 * and MongoDB adapters (src/store/) implement it and depend on it, never the
 * reverse. Both pass the contract suite in test/store/.
 */
import type { StoreAccountsPart } from "./accounts-port.js";
import type { StoreAttributionPart } from "./attribution-port.js";
import type { StoreConnectorsPart } from "./connectors-port.js";
import type { StoreErasurePart } from "./erasure-port.js";
import type { StoreEventsPart } from "./events-port.js";
import type { StoreOverviewPart } from "./overview-port.js";
import type { StorePaymentsPart } from "./payments-port.js";
import type { StorePersistentVisitorsPart } from "./persistent-visitors-port.js";
import type { StoreRetentionPart } from "./retention-port.js";
import type { StoreSetupPart } from "./setup-port.js";

export * from "../vocabulary.js";
export type * from "./connectors-port.js";
export type { CustomerErasure, UserLinksErasure, VisitorsErasure } from "./erasure-port.js";
export type { EventPage, EventPageQuery } from "./events-port.js";
export type * from "./overview-port.js";
export type { PaymentPage, PaymentPageQuery, PaymentPosition } from "./payments-port.js";
export type { VisitorStitch } from "./persistent-visitors-port.js";
export * from "./records.js";
export type { EventsRetention, PruneStep } from "./retention-port.js";
export type { SetupTokenRecord } from "./setup-port.js";
export type {
  StoreAccountsPart,
  StoreAttributionPart,
  StoreConnectorsPart,
  StoreErasurePart,
  StoreEventsPart,
  StoreOverviewPart,
  StorePaymentsPart,
  StorePersistentVisitorsPart,
  StoreRetentionPart,
  StoreSetupPart,
};

/** The store port. Every method may reject when the database is unreachable. */
export interface Store
  extends StoreAccountsPart,
    StoreEventsPart,
    StorePaymentsPart,
    StoreAttributionPart,
    StorePersistentVisitorsPart,
    StoreConnectorsPart,
    StoreErasurePart,
    StoreOverviewPart,
    StoreRetentionPart,
    StoreSetupPart {
  /** Which adapter this is, for logs and /readyz. */
  readonly kind: "sqlite" | "mongodb";
  /**
   * Whether writes started one after another commit in that order even when
   * the next starts before the last one's commit is confirmed. SQLite: yes
   * (a batch's transaction is applied when it starts; only the WAL sync is
   * awaited). MongoDB: no (network writes may land out of order, and a payment
   * re-sent in the next batch must win), so its batches go one at a time.
   */
  readonly commitsInOrder: boolean;
  /**
   * The database file whose `analytics_feed` log the analytics store is fed
   * from (src/store/duckdb/analytics-feed.ts); absent when the store keeps
   * no such log (MongoDB, an in-memory SQLite database).
   */
  readonly feedFile?: string;
  /**
   * The database whose collections the analytics store is fed from, over a
   * connection of the feed's own (src/store/mongo/analytics-feed.ts); absent
   * when the store has none (SQLite).
   */
  readonly feedDatabase?: { readonly url: string; readonly dbName: string };

  /**
   * Readiness: resolves when the database can take a write now (not only
   * answer a read), cheaply; rejects while it cannot (locked, read-only, disk
   * full, no writable primary). Called by /readyz on every probe.
   */
  ping(): Promise<void>;
  /** Closes the database after pending writes. Idempotent. */
  close(): Promise<void>;
}
