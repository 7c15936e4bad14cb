/** Payment-provider connectors, the events they applied and object versions, in MongoDB. */
import type {
  ConnectorRecord,
  DeliveryOutcome,
  Provider,
  ProviderWrite,
  StoreConnectorsPart,
} from "../port.js";
import { toDate } from "./documents.js";
import { customerUpsert, paymentUpsert, subscriptionUpsert } from "./payments.js";
import { bulkUpsert, isDuplicateKey } from "./retry.js";
import type { Collections } from "./schema.js";

export interface ConnectorDoc {
  _id: string;
  site_id: string;
  provider: Provider;
  /** The provider's signing secret, needed as-is to check signatures (docs/security.md). */
  secret: string;
  created_by: string;
  created_at: Date;
}

/** A provider event a connector applied; unique per (connector_id, event_id). */
export interface ConnectorEventDoc {
  connector_id: string;
  event_id: string;
  applied_at: Date;
}

/** The provider's version of an object's stored state; unique per (site_id, object). */
export interface ConnectorObjectDoc {
  site_id: string;
  object: string;
  version: number;
}

const fromDoc = (d: ConnectorDoc): ConnectorRecord => ({
  id: d._id,
  siteId: d.site_id,
  provider: d.provider,
  secret: d.secret,
  createdBy: d.created_by,
  createdAt: d.created_at.getTime(),
});

export function createMongoConnectors(c: Collections): StoreConnectorsPart {
  /**
   * Records `version` for the object unless a newer one is stored; false when
   * one is. The filter misses a newer document, the upsert then collides with
   * it on the unique index (E11000); a collision with an older document
   * inserted meanwhile by another writer is settled by trying again.
   */
  async function claimVersion(siteId: string, object: string, version: number): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        await c.connectorObjects.updateOne(
          { site_id: siteId, object, version: { $lte: version } },
          { $set: { version } },
          { upsert: true },
        );
        return true;
      } catch (err) {
        if (!isDuplicateKey(err) || attempt >= 3) throw err;
        const stored = await c.connectorObjects.findOne({ site_id: siteId, object });
        if (stored && stored.version > version) return false;
      }
    }
  }

  /** The write's customer, subscription and payment, in that order (a reader finds what a payment refers to). */
  async function apply(w: ProviderWrite): Promise<void> {
    await bulkUpsert(c.customers, [customerUpsert([w.customer])]);
    if (w.subscription) await bulkUpsert(c.subscriptions, [subscriptionUpsert([w.subscription])]);
    if (w.payment) await bulkUpsert(c.payments, [paymentUpsert([w.payment])]);
  }

  return {
    async insertConnector(r) {
      await c.connectors.insertOne({
        _id: r.id,
        site_id: r.siteId,
        provider: r.provider,
        secret: r.secret,
        created_by: r.createdBy,
        created_at: toDate(r.createdAt),
      });
    },
    async getConnector(id) {
      const d = await c.connectors.findOne({ _id: id });
      return d ? fromDoc(d) : undefined;
    },
    async listConnectors(siteId) {
      const docs = await c.connectors
        .find({ site_id: siteId })
        .sort({ created_at: 1, _id: 1 })
        .toArray();
      return docs.map(fromDoc);
    },
    async deleteConnector(id) {
      return (await c.connectors.deleteOne({ _id: id })).deletedCount > 0;
    },
    /**
     * One delivery after the other (webhooks are few; MongoDB batches run one
     * at a time in a process). Without a transaction, the event is marked
     * applied last: a failure in between leaves it unmarked, so the provider's
     * retry applies it again, and every write is an idempotent upsert whose
     * version is equal, not older, so it lands the same way.
     */
    async commitProviderDeliveries(deliveries) {
      const outcomes: DeliveryOutcome[] = [];
      for (const d of deliveries) {
        const key = { connector_id: d.connectorId, event_id: d.eventId };
        if (await c.connectorEvents.findOne(key)) {
          outcomes.push("duplicate");
          continue;
        }
        for (const w of d.writes) {
          if (await claimVersion(d.siteId, w.object, w.version)) await apply(w);
        }
        await c.connectorEvents.updateOne(
          key,
          { $setOnInsert: { applied_at: toDate(d.receivedAt) } },
          { upsert: true },
        );
        outcomes.push("applied");
      }
      return outcomes;
    },
    async getObjectVersion(siteId, object) {
      return (await c.connectorObjects.findOne({ site_id: siteId, object }))?.version;
    },
  };
}
