/**
 * The connectors application: finds a connector, maps a verified provider
 * event and records it through the payments application (same validation,
 * exact money, group commit durability and attribution as POST
 * /api/v1/payments). Signature checks are the door's (they need the
 * providers' SDKs); this sees only verified events.
 */
import { errors } from "../errors.js";
import { toMinorUnits } from "../payments/money.js";
import type { PaymentsApp, ProviderChange } from "../payments/payments-app.js";
import type { ConnectorRecord, Provider, Store } from "../store/store.js";
import type { Obj } from "./json-access.js";
import { mapLemonSqueezyEvent } from "./lemonsqueezy-mapper.js";
import type { DeliveryInfo, EventMapper } from "./mapped-event.js";
import { mapPaddleEvent } from "./paddle-mapper.js";
import { mapPolarEvent } from "./polar-mapper.js";
import { mapStripeEvent } from "./stripe-mapper.js";

/**
 * The largest Payment body POST /api/v1/payments accepts (src/edge/body-limits.ts,
 * RecordPayment): what one provider event makes of a payment, customer or
 * subscription is held to it too, so a connector cannot store what the
 * endpoint would refuse (a charge with 20,000 metadata keys).
 */
export const PAYMENT_BODY_LIMIT = 64 * 1024;

/**
 * The 400 for a Payment body over the limit: it names `metadata` when the
 * body fits without its metadata (the payment's and its customer's), the
 * usual case, else the payment as a whole.
 */
function tooLarge(body: Record<string, unknown>) {
  const { metadata: _, customer, ...rest } = body;
  const bare = { ...rest, customer: { ...(customer as object), metadata: undefined } };
  const what = byteLength(bare) <= PAYMENT_BODY_LIMIT ? "metadata: must" : "the payment must";
  return errors.invalid(
    `invalid provider event: ${what} fit the ${PAYMENT_BODY_LIMIT / 1024} KB of a Payment body`,
  );
}

/** UTF-8 bytes of a value's JSON; 0 for undefined. */
function byteLength(value: unknown): number {
  const json = JSON.stringify(value);
  return json === undefined ? 0 : ENCODER.encode(json).length;
}
const ENCODER = new TextEncoder();

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

/** What the connectors application is built from. */
export interface ConnectorsDeps {
  store: Store;
  payments: PaymentsApp;
  /** Told of each event refused because its refunds would exceed their charge (metrics). */
  onRefundExcess?: (provider: Provider) => void;
}

export function createConnectorsApp(deps: ConnectorsDeps): ConnectorsApp {
  const { store, payments } = deps;

  /**
   * Refunds and chargebacks of one charge together never exceed it, where
   * the charge is known (in this event, else stored): this event's refunds
   * (failed ones excepted) plus those stored before (a re-sent one counted
   * once, at its new amount) are held to the charge's amount, in its
   * currency. A charge the service does not hold, or one in another currency
   * than the refund, is not checked: there is nothing exact to hold it to.
   */
  async function holdRefundsToCharges(connector: ConnectorRecord, changes: ProviderChange[]) {
    const minor = (p: Obj) =>
      typeof p.amount === "number" && typeof p.currency === "string"
        ? toMinorUnits(p.amount, p.currency)
        : undefined;
    for (const change of changes) {
      if (!("payment" in change) || !change.against || change.payment.status === "failed") continue;
      const { chargeId, key, field } = change.against;
      const inEvent = changes.find(
        (c) => "payment" in c && c.payment.payment_id === chargeId && c.payment.kind === "charge",
      );
      const charge =
        inEvent && "payment" in inEvent
          ? { currency: inEvent.payment.currency, minor: minor(inEvent.payment) }
          : await store
              .getPayment(connector.siteId, chargeId)
              .then((p) =>
                p?.kind === "charge"
                  ? { currency: p.currency, minor: { ok: true as const, minor: p.amountMinor } }
                  : undefined,
              );
      if (!charge?.minor?.ok || charge.currency !== change.payment.currency) continue;
      // This event's refunds of the charge, then those stored before that it does not re-send.
      const mine = changes.flatMap((c) =>
        "payment" in c && c.against?.chargeId === chargeId && c.payment.status !== "failed"
          ? [c.payment]
          : [],
      );
      const ids = new Set(mine.map((p) => p.payment_id));
      const customerId = (change.payment.customer as Obj | undefined)?.id;
      const stored =
        typeof customerId === "string"
          ? await store.refundsOfCharge(connector.siteId, customerId, key, chargeId)
          : [];
      let total = 0;
      for (const p of mine) {
        const m = minor(p);
        if (!m?.ok) continue; // The payments validation refuses it with its own message.
        total += m.minor;
      }
      for (const p of stored) {
        if (!ids.has(p.paymentId) && p.currency === charge.currency) total += p.amountMinor;
      }
      if (total > charge.minor.minor) {
        deps.onRefundExcess?.(connector.provider);
        throw errors.invalid(
          `invalid provider event: ${field}: refunds and chargebacks of ${chargeId} would exceed its amount`,
        );
      }
    }
  }

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
      for (const change of mapped.changes) {
        // The Payment body the change stands for, as POST /api/v1/payments would receive it.
        const body =
          "payment" in change
            ? change.payment
            : { customer: change.customer, subscription: change.subscription };
        if (byteLength(body) > PAYMENT_BODY_LIMIT) throw tooLarge(body);
      }
      await holdRefundsToCharges(connector, mapped.changes);
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
