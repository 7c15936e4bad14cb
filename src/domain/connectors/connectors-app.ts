/**
 * The connectors application: finds a connector, maps a verified provider
 * event and records it through the payments application (same validation,
 * exact money, group commit durability and attribution as POST
 * /api/v1/payments). Signature checks are the door's (they need the
 * providers' SDKs); this sees only verified events.
 */
import { errors } from "../errors.js";
import type { PaymentsApp } from "../payments/payments-app.js";
import type { ConnectorRecord, Provider, Store } from "../store/store.js";
import type { Obj } from "./json-access.js";
import { mapLemonSqueezyEvent } from "./lemonsqueezy-mapper.js";
import type { DeliveryInfo, EventMapper } from "./mapped-event.js";
import { mapPaddleEvent } from "./paddle-mapper.js";
import { mapPolarEvent } from "./polar-mapper.js";
import { mapStripeEvent } from "./stripe-mapper.js";

const MAPPERS: Record<Provider, EventMapper> = {
  stripe: mapStripeEvent,
  paddle: mapPaddleEvent,
  lemonsqueezy: mapLemonSqueezyEvent,
  polar: mapPolarEvent,
};

/** What became of an event: applied, applied before (a repeat), or of a type not used. */
export interface EventOutcome {
  outcome: "applied" | "duplicate" | "ignored";
  type: string;
  eventId?: string;
}

export interface ConnectorsApp {
  /** The connector, or 404 `unknown connector`. */
  find(connectorId: string): Promise<ConnectorRecord>;
  /** Maps and durably records one verified event of the connector's provider. */
  apply(connector: ConnectorRecord, event: Obj, delivery?: DeliveryInfo): Promise<EventOutcome>;
}

export function createConnectorsApp(deps: { store: Store; payments: PaymentsApp }): ConnectorsApp {
  const { store, payments } = deps;
  return {
    async find(connectorId) {
      // Only ids the service could have made reach the store.
      const connector = /^conn_[0-9a-f]{24}$/.test(connectorId)
        ? await store.getConnector(connectorId)
        : undefined;
      if (!connector) throw errors.unknownConnector();
      return connector;
    },
    async apply(connector, event, delivery = {}) {
      const lookups = {
        async customerOfPayment(paymentId: string) {
          return (await store.getPayment(connector.siteId, paymentId))?.customerId;
        },
      };
      const mapped = await MAPPERS[connector.provider](event, lookups, delivery);
      if (mapped.kind === "ignored") {
        return { outcome: "ignored", type: mapped.type, eventId: mapped.eventId };
      }
      if (mapped.changes.length === 0) {
        // A used type whose object says nothing to store (a setup-mode Checkout Session).
        return { outcome: "ignored", type: mapped.type, eventId: mapped.eventId };
      }
      const outcome = await payments.recordProviderEvent({
        siteId: connector.siteId,
        connectorId: connector.id,
        eventId: mapped.eventId,
        changes: mapped.changes,
      });
      return { outcome, type: mapped.type, eventId: mapped.eventId };
    },
  };
}
