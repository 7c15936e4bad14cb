/** AdminService: the dashboard's door to account administration, behind ADMIN_TOKEN (src/rpc/admin-auth.ts). */
import type { ServiceImpl } from "@connectrpc/connect";
import type { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import type { Admin } from "../domain/admin.js";
import type { Erasure } from "../domain/erasure.js";
import type { Retention } from "../domain/retention.js";

const iso = (ms: number) => new Date(ms).toISOString();

/** The handlers; src/rpc/admin-auth.ts has authenticated every call before they run. */
export function createAdminService(deps: {
  admin: Admin;
  erasure: Erasure;
  retention: Retention;
}): ServiceImpl<typeof AdminService> {
  const { admin, erasure, retention } = deps;
  return {
    async setSiteRetention(req) {
      const r = await retention.setSiteRetention({ siteId: req.siteId, days: req.days });
      return { siteId: r.siteId, eventsRetentionDays: r.eventsRetentionDays };
    },
    async createAccount(req) {
      return admin.createAccount({ name: req.name, plan: req.plan, ownerEmail: req.ownerEmail });
    },
    async setPlan(req) {
      return admin.setPlan({ accountId: req.accountId, plan: req.plan });
    },
    async addMember(req) {
      return admin.addMember({ accountId: req.accountId, email: req.email, role: req.role });
    },
    async createSite(req) {
      return admin.createSite({
        accountId: req.accountId,
        hostnames: req.hostnames,
        timeZone: req.timeZone,
      });
    },
    async updateSite(req) {
      const s = await admin.updateSite({
        siteId: req.siteId,
        name: req.name,
        hostnames: req.hostnames.length > 0 ? req.hostnames : undefined,
        timeZone: req.timeZone,
      });
      return { site: { ...s, createdAt: iso(s.createdAt) } };
    },
    async createKey(req) {
      return admin.createKey({
        siteId: req.siteId,
        name: req.name,
        scopes: req.scopes,
        actorUserId: req.actorUserId,
      });
    },
    async listKeys(req) {
      const keys = await admin.listKeys({ siteId: req.siteId });
      return {
        keys: keys.map((k) => ({
          keyId: k.keyId,
          siteId: k.siteId,
          name: k.name,
          scopes: k.scopes,
          prefix: k.prefix,
          createdAt: iso(k.createdAt),
          lastUsedAt: k.lastUsedAt === undefined ? undefined : iso(k.lastUsedAt),
          createdBy: k.createdBy,
        })),
      };
    },
    async deleteKey(req) {
      return admin.deleteKey({ keyId: req.keyId, actorUserId: req.actorUserId });
    },
    async createConnector(req) {
      const c = await admin.createConnector({
        siteId: req.siteId,
        provider: req.provider,
        secret: req.secret,
        actorUserId: req.actorUserId,
      });
      return { connectorId: c.connectorId, urlPath: c.urlPath };
    },
    async listConnectors(req) {
      const connectors = await admin.listConnectors({ siteId: req.siteId });
      return {
        connectors: connectors.map((c) => ({
          connectorId: c.connectorId,
          siteId: c.siteId,
          provider: c.provider,
          urlPath: c.urlPath,
          createdAt: iso(c.createdAt),
          createdBy: c.createdBy,
        })),
      };
    },
    async deleteConnector(req) {
      return admin.deleteConnector({ connectorId: req.connectorId, actorUserId: req.actorUserId });
    },
    async getUsage(req) {
      const u = await admin.getUsage({ accountId: req.accountId });
      return {
        ...u,
        counted: BigInt(u.counted),
        allowance: BigInt(u.allowance),
        ceiling: BigInt(u.ceiling),
      };
    },
    async eraseCustomer(req) {
      return erasure.eraseCustomer({
        siteId: req.siteId,
        customerId: req.customerId,
        actorUserId: req.actorUserId,
      });
    },
    async eraseUser(req) {
      return erasure.eraseUser({
        siteId: req.siteId,
        userId: req.userId,
        actorUserId: req.actorUserId,
      });
    },
    async eraseVisitor(req) {
      return erasure.eraseVisitor({
        siteId: req.siteId,
        visitorId: req.visitorId,
        actorUserId: req.actorUserId,
      });
    },
  };
}
