/** Payment-provider connectors, the events they applied and object versions, in SQLite. */
import type {
  ConnectorRecord,
  DeliveryOutcome,
  Provider,
  ProviderDelivery,
  StoreConnectorsPart,
} from "../port.js";
import type { Db } from "./open-sqlite.js";
import { createSqlitePaymentWriter } from "./payments.js";

interface ConnectorRow {
  id: string;
  site_id: string;
  provider: Provider;
  secret: string;
  created_by: string;
  created_at: number;
}

const fromRow = (r: ConnectorRow): ConnectorRecord => ({
  id: r.id,
  siteId: r.site_id,
  provider: r.provider,
  secret: r.secret,
  createdBy: r.created_by,
  createdAt: r.created_at,
});

export function createSqliteConnectors(db: Db): StoreConnectorsPart {
  const write = createSqlitePaymentWriter(db);
  const s = {
    insert: db.prepare(
      `INSERT INTO connectors (id, site_id, provider, secret, created_by, created_at)
       VALUES (@id, @site_id, @provider, @secret, @created_by, @created_at)`,
    ),
    get: db.prepare("SELECT * FROM connectors WHERE id = ?"),
    list: db.prepare("SELECT * FROM connectors WHERE site_id = ? ORDER BY created_at, id"),
    delete: db.prepare("DELETE FROM connectors WHERE id = ?"),
    eventApplied: db.prepare(
      "SELECT 1 FROM connector_events WHERE connector_id = ? AND event_id = ?",
    ),
    markApplied: db.prepare(
      "INSERT INTO connector_events (connector_id, event_id, applied_at) VALUES (?, ?, ?)",
    ),
    version: db.prepare("SELECT version FROM connector_objects WHERE site_id = ? AND object = ?"),
    setVersion: db.prepare(
      `INSERT INTO connector_objects (site_id, object, version) VALUES (?, ?, ?)
       ON CONFLICT (site_id, object) DO UPDATE SET version = excluded.version`,
    ),
  };

  const versionOf = (siteId: string, object: string) =>
    (s.version.get(siteId, object) as { version: number } | undefined)?.version;

  // One IMMEDIATE transaction (one WAL sync) for a batch: the event check, the
  // version checks and the writes cannot interleave with another process's.
  const commit = db.transaction((deliveries: ProviderDelivery[]): DeliveryOutcome[] => {
    const outcomes = deliveries.map((d): DeliveryOutcome => {
      if (s.eventApplied.get(d.connectorId, d.eventId)) return "duplicate";
      for (const w of d.writes) {
        const stored = versionOf(d.siteId, w.object);
        if (stored !== undefined && stored > w.version) continue;
        s.setVersion.run(d.siteId, w.object, w.version);
        write(w);
      }
      s.markApplied.run(d.connectorId, d.eventId, d.receivedAt);
      return "applied";
    });
    return outcomes;
  });

  return {
    async insertConnector(c) {
      s.insert.run({
        id: c.id,
        site_id: c.siteId,
        provider: c.provider,
        secret: c.secret,
        created_by: c.createdBy,
        created_at: c.createdAt,
      });
    },
    async getConnector(id) {
      const r = s.get.get(id) as ConnectorRow | undefined;
      return r && fromRow(r);
    },
    async listConnectors(siteId) {
      return (s.list.all(siteId) as ConnectorRow[]).map(fromRow);
    },
    async deleteConnector(id) {
      return s.delete.run(id).changes > 0;
    },
    async commitProviderDeliveries(deliveries) {
      return commit.immediate(deliveries);
    },
    async getObjectVersion(siteId, object) {
      return versionOf(siteId, object);
    },
  };
}
