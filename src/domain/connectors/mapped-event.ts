/** What a provider's mapper makes of one verified event. */
import type { ProviderChange } from "../payments/payments-app.js";

/** What the mappers may ask of the store: the customer of a payment already recorded. */
export interface MapperLookups {
  customerOfPayment(paymentId: string): Promise<string | undefined>;
}

/** What the door knows of a delivery besides its body: Standard Webhooks' `webhook-id` (Polar). */
export interface DeliveryInfo {
  webhookId?: string;
}

/** A provider's mapper. */
export type EventMapper = (
  event: Record<string, unknown>,
  lookups: MapperLookups,
  delivery: DeliveryInfo,
) => Promise<MappedEvent>;

export type MappedEvent =
  | { kind: "changes"; eventId: string; type: string; changes: ProviderChange[] }
  /** An event type the connector does not use: answered 2xx so the provider stops retrying. */
  | { kind: "ignored"; eventId?: string; type: string };
