/** Accounts, users, memberships, sites and API keys in MongoDB. */
import type {
  AccountRecord,
  ApiKeyRecord,
  KeyPrincipal,
  MemberRecord,
  SiteRecord,
  StoreAccountsPart,
  UserRecord,
} from "../port.js";
import { type AccountDoc, type ApiKeyDoc, optMs, type SiteDoc, toDate } from "./documents.js";
import { retryDuplicates } from "./retry.js";
import type { Collections } from "./schema.js";

function keyFromDoc(d: ApiKeyDoc): ApiKeyRecord {
  return {
    id: d._id,
    siteId: d.site_id,
    name: d.name,
    scopes: [...d.scopes],
    hash: d.hash,
    prefix: d.prefix,
    createdBy: d.created_by,
    createdAt: d.created_at.getTime(),
    lastUsedAt: optMs(d.last_used_at),
  };
}

function siteFromDoc(d: SiteDoc): SiteRecord {
  const site: SiteRecord = {
    id: d._id,
    accountId: d.account_id,
    hostnames: [...d.hostnames],
    createdAt: d.created_at.getTime(),
  };
  if (d.name !== undefined) site.name = d.name;
  if (d.time_zone !== undefined) site.timeZone = d.time_zone;
  return site;
}

const accountFromDoc = (d: AccountDoc): AccountRecord => ({
  id: d._id,
  name: d.name,
  plan: d.plan,
  createdAt: d.created_at.getTime(),
});

/** The account-side methods of the store over the given collections. */
export function createMongoAccounts(c: Collections): StoreAccountsPart {
  // Raised after each change, before the changing call returns: a process
  // that reads the version after that sees the change (directory-cache.ts).
  const bump = async () => {
    await c.directory.updateOne({ _id: "version" }, { $inc: { version: 1 } }, { upsert: true });
  };
  return {
    async createAccount(a: AccountRecord) {
      // insertOne, not an upsert: a second account with the same id is an
      // error (E11000), as the SQLite primary key makes it.
      await c.accounts.insertOne({
        _id: a.id,
        name: a.name,
        plan: a.plan,
        created_at: toDate(a.createdAt),
      });
      await bump();
    },

    async getAccount(id) {
      const d = await c.accounts.findOne({ _id: id });
      return d ? accountFromDoc(d) : undefined;
    },

    async setPlan(id, plan) {
      // matchedCount, not modifiedCount: setting the same plan again is still "the account exists".
      const r = await c.accounts.updateOne({ _id: id }, { $set: { plan } });
      await bump();
      return r.matchedCount === 1;
    },

    async ensureUser(candidate: UserRecord) {
      // Insert-if-absent keyed on the unique email; a concurrent insert of the
      // same email makes the loser's retry a no-op match.
      await retryDuplicates(() =>
        c.users.updateOne(
          { email: candidate.email },
          { $setOnInsert: { _id: candidate.id, created_at: toDate(candidate.createdAt) } },
          { upsert: true },
        ),
      );
      const d = await c.users.findOne({ email: candidate.email });
      if (!d) throw new Error(`user ${candidate.email} vanished after its upsert`);
      return { id: d._id, email: d.email, createdAt: d.created_at.getTime() };
    },

    async setMembership(accountId, userId, role) {
      await retryDuplicates(() =>
        c.memberships.updateOne(
          { account_id: accountId, user_id: userId },
          { $set: { role } },
          { upsert: true },
        ),
      );
    },

    async getRole(accountId, userId) {
      const d = await c.memberships.findOne(
        { account_id: accountId, user_id: userId },
        { projection: { role: 1 } },
      );
      return d?.role;
    },

    async createSite(site: SiteRecord) {
      const doc: SiteDoc = {
        _id: site.id,
        account_id: site.accountId,
        hostnames: [...site.hostnames],
        created_at: toDate(site.createdAt),
      };
      // Absent, never null: the validator types the fields when present.
      if (site.name !== undefined) doc.name = site.name;
      if (site.timeZone !== undefined) doc.time_zone = site.timeZone;
      await c.sites.insertOne(doc);
      await bump();
    },

    async getSite(id) {
      const d = await c.sites.findOne({ _id: id });
      return d ? siteFromDoc(d) : undefined;
    },

    async updateSite(id, patch) {
      const set: Partial<SiteDoc> = {};
      if (patch.name !== undefined) set.name = patch.name;
      if (patch.hostnames !== undefined) set.hostnames = [...patch.hostnames];
      if (patch.timeZone !== undefined) set.time_zone = patch.timeZone;
      const d = await c.sites.findOneAndUpdate(
        { _id: id },
        { $set: set },
        { returnDocument: "after" },
      );
      if (d) await bump();
      return d ? siteFromDoc(d) : undefined;
    },

    async listAccounts() {
      const docs = await c.accounts.find({}).sort({ created_at: 1, _id: 1 }).toArray();
      return docs.map(accountFromDoc);
    },

    async listSites(accountId) {
      const docs = await c.sites
        .find(accountId === undefined ? {} : { account_id: accountId })
        .sort({ created_at: 1, _id: 1 })
        .toArray();
      return docs.map(siteFromDoc);
    },

    async listMembers(accountId) {
      // account_user_unique serves the account's memberships; users by _id.
      const memberships = await c.memberships.find({ account_id: accountId }).toArray();
      const users = await c.users
        .find({ _id: { $in: memberships.map((m) => m.user_id) } })
        .toArray();
      const emailOf = new Map(users.map((u) => [u._id, u.email]));
      return memberships
        .map(
          (m): MemberRecord => ({
            userId: m.user_id,
            email: emailOf.get(m.user_id) ?? "",
            role: m.role,
          }),
        )
        .sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0));
    },

    async insertKey(k: ApiKeyRecord) {
      // The key carries its site's account so that authentication is one
      // indexed read; a key of an unknown site is refused, as SQLite's foreign key does.
      const site = await c.sites.findOne({ _id: k.siteId }, { projection: { account_id: 1 } });
      if (!site) throw new Error(`cannot insert key ${k.id}: site ${k.siteId} does not exist`);
      const doc: ApiKeyDoc = {
        _id: k.id,
        site_id: k.siteId,
        account_id: site.account_id,
        name: k.name,
        scopes: [...k.scopes],
        hash: k.hash,
        prefix: k.prefix,
        created_by: k.createdBy,
        created_at: toDate(k.createdAt),
      };
      if (k.lastUsedAt !== undefined) doc.last_used_at = toDate(k.lastUsedAt);
      await c.apiKeys.insertOne(doc);
      await bump();
    },

    async findKeyByHash(hash) {
      // Read from the primary every time (the db handle's read preference):
      // a deleted key must fail on the very next request.
      const d = await c.apiKeys.findOne({ hash });
      if (!d) return undefined;
      const principal: KeyPrincipal = { ...keyFromDoc(d), accountId: d.account_id };
      return principal;
    },

    async getKey(id) {
      const d = await c.apiKeys.findOne({ _id: id });
      return d ? keyFromDoc(d) : undefined;
    },

    async listKeys(siteId) {
      const docs = await c.apiKeys
        .find({ site_id: siteId })
        .sort({ created_at: 1, _id: 1 })
        .toArray();
      return docs.map(keyFromDoc);
    },

    async deleteKey(id) {
      const r = await c.apiKeys.deleteOne({ _id: id });
      await bump();
      return r.deletedCount === 1;
    },

    async touchKey(id, at) {
      // $max only ever moves last use forward, so racing touches cannot move it back.
      await c.apiKeys.updateOne({ _id: id }, { $max: { last_used_at: toDate(at) } });
    },

    async directoryVersion() {
      const d = await c.directory.findOne({ _id: "version" });
      return d?.version ?? 0;
    },
  };
}
