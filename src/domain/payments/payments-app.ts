/** The payments application: what both doors (REST and Connect) call. */
import type { DeliveryOutcome, KeyPrincipal } from "../store/store.js";

export interface PaymentsApp {
  /**
   * Validates and durably records one payment for the key's site. `input` is
   * the spec's Payment body as plain JSON values (snake_case keys), already
   * checked for unknown fields and JSON types by the door.
   */
  record(principal: KeyPrincipal, input: Record<string, unknown>): Promise<{ paymentId: string }>;
  /**
   * Validates and durably records what one payment-provider event says (the
   * connectors' webhooks), through the same rules and queue as `record`:
   * `duplicate` when the event was applied before.
   */
  recordProviderEvent(input: ProviderEventInput): Promise<DeliveryOutcome>;
  /** Writes what is queued; called on shutdown. */
  drain(): Promise<void>;
}

/**
 * One change a provider event makes, in the spec's Payment body words
 * (snake_case plain JSON, major units): a payment, or a customer alone with
 * an optional subscription. `object` and `version` order the changes of one
 * provider object (an older one never overwrites a newer one).
 */
export type ProviderChange =
  | { object: string; version: number; payment: Record<string, unknown> }
  | {
      object: string;
      version: number;
      /** The Payment body's `customer`. */
      customer: Record<string, unknown>;
      /** The Payment body's `subscription`, its amount in `currency`. */
      subscription?: Record<string, unknown>;
      currency?: string;
      /** RFC 3339; the subscription's start when it is first stored without one. */
      at: string;
    };

/** What one provider event says, for one site, through one connector. */
export interface ProviderEventInput {
  siteId: string;
  connectorId: string;
  eventId: string;
  changes: ProviderChange[];
}
