/** The payment-provider connectors part of the store port. */
import type { Provider } from "../vocabulary.js";
import type { CustomerPatch, PaymentRecord, SubscriptionPatch } from "./records.js";

/** A site's connection to one payment provider's webhooks. */
export interface ConnectorRecord {
  id: string;
  siteId: string;
  provider: Provider;
  /**
   * The provider's webhook signing secret, as the provider shows it. Needed
   * as-is to check each delivery's HMAC, so it cannot be hashed; never
   * logged, never returned after creation (docs/security.md).
   */
  secret: string;
  createdBy: string;
  createdAt: number;
}

/**
 * One change a provider event makes: a payment (with its customer and
 * subscription), or a subscription alone (with its customer). `object` names
 * what changes (e.g. `payment:ch_1`, `subscription:sub_1`) and `version` is
 * the provider's own time or version of that state: a write whose version is
 * older than the one stored for its object is skipped.
 */
export interface ProviderWrite {
  object: string;
  version: number;
  customer: CustomerPatch;
  payment?: PaymentRecord;
  subscription?: SubscriptionPatch;
}

/** Everything one provider event (one delivery of it) writes, applied together at most once. */
export interface ProviderDelivery {
  siteId: string;
  connectorId: string;
  /** The provider's event id: a repeated delivery of it is not applied again. */
  eventId: string;
  receivedAt: number;
  writes: ProviderWrite[];
}

/** What became of a delivery: applied now, or already applied before (nothing written). */
export type DeliveryOutcome = "applied" | "duplicate";

/** The connectors part of the store port. Every method may reject when the database is unreachable. */
export interface StoreConnectorsPart {
  insertConnector(connector: ConnectorRecord): Promise<void>;
  getConnector(connectorId: string): Promise<ConnectorRecord | undefined>;
  listConnectors(siteId: string): Promise<ConnectorRecord[]>;
  /** Returns false when there was no such connector. */
  deleteConnector(connectorId: string): Promise<boolean>;
  /**
   * Durably applies provider deliveries, in order, each at most once per
   * (connector, event id); within a delivery, a write is skipped when its
   * object already has a newer version stored (an equal one applies, so the
   * later of two same-second events wins). Returns one outcome per delivery.
   */
  commitProviderDeliveries(deliveries: ProviderDelivery[]): Promise<DeliveryOutcome[]>;
  /** The version stored for an object of a site, if any (tests and diagnostics). */
  getObjectVersion(siteId: string, object: string): Promise<number | undefined>;
}
