/** Accounts, users, memberships, sites and API keys in SQLite. */
import type { Plan } from "../../domain/plans.js";
import type {
  AccountRecord,
  ApiKeyRecord,
  KeyPrincipal,
  MemberRecord,
  Role,
  Scope,
  SiteRecord,
  StoreAccountsPart,
  UserRecord,
} from "../port.js";
import { type Db, nul, opt } from "./open-sqlite.js";

interface KeyRow {
  id: string;
  site_id: string;
  name: string;
  scopes: string;
  hash: string;
  prefix: string;
  created_by: string;
  created_at: number;
  last_used_at: number | null;
  account_id?: string;
}

interface SiteRow {
  id: string;
  account_id: string;
  hostnames: string;
  created_at: number;
  name: string | null;
  time_zone: string | null;
}

const SITE_COLUMNS = "id, account_id, hostnames, created_at, name, time_zone";

function siteFromRow(r: SiteRow): SiteRecord {
  const site: SiteRecord = {
    id: r.id,
    accountId: r.account_id,
    hostnames: JSON.parse(r.hostnames) as string[],
    createdAt: r.created_at,
  };
  if (r.name !== null) site.name = r.name;
  if (r.time_zone !== null) site.timeZone = r.time_zone;
  return site;
}

type AccountRow = { id: string; name: string; plan: Plan; created_at: number };

const accountFromRow = (r: AccountRow): AccountRecord => ({
  id: r.id,
  name: r.name,
  plan: r.plan,
  createdAt: r.created_at,
});

function keyFromRow(r: KeyRow): ApiKeyRecord {
  return {
    id: r.id,
    siteId: r.site_id,
    name: r.name,
    scopes: JSON.parse(r.scopes) as Scope[],
    hash: r.hash,
    prefix: r.prefix,
    createdBy: r.created_by,
    createdAt: r.created_at,
    lastUsedAt: opt(r.last_used_at),
  };
}

export function createSqliteAccounts(db: Db): StoreAccountsPart {
  const s = {
    insertAccount: db.prepare(
      "INSERT INTO accounts (id, name, plan, created_at) VALUES (@id, @name, @plan, @createdAt)",
    ),
    getAccount: db.prepare("SELECT id, name, plan, created_at FROM accounts WHERE id = ?"),
    setPlan: db.prepare("UPDATE accounts SET plan = ? WHERE id = ?"),
    insertUser: db.prepare(
      "INSERT INTO users (id, email, created_at) VALUES (@id, @email, @createdAt) ON CONFLICT (email) DO NOTHING",
    ),
    userByEmail: db.prepare("SELECT id, email, created_at FROM users WHERE email = ?"),
    setMembership: db.prepare(
      "INSERT INTO memberships (account_id, user_id, role) VALUES (?, ?, ?) ON CONFLICT (account_id, user_id) DO UPDATE SET role = excluded.role",
    ),
    getRole: db.prepare("SELECT role FROM memberships WHERE account_id = ? AND user_id = ?"),
    insertSite: db.prepare(
      "INSERT INTO sites (id, account_id, hostnames, created_at, name, time_zone) VALUES (?, ?, ?, ?, ?, ?)",
    ),
    getSite: db.prepare(`SELECT ${SITE_COLUMNS} FROM sites WHERE id = ?`),
    // COALESCE: a field the patch does not give (NULL) keeps its value.
    updateSite: db.prepare(
      `UPDATE sites SET name = COALESCE(@name, name), hostnames = COALESCE(@hostnames, hostnames),
         time_zone = COALESCE(@timeZone, time_zone) WHERE id = @id`,
    ),
    listAccounts: db.prepare(
      "SELECT id, name, plan, created_at FROM accounts ORDER BY created_at, id",
    ),
    listSites: db.prepare(`SELECT ${SITE_COLUMNS} FROM sites ORDER BY created_at, id`),
    listAccountSites: db.prepare(
      `SELECT ${SITE_COLUMNS} FROM sites WHERE account_id = ? ORDER BY created_at, id`,
    ),
    listMembers: db.prepare(
      `SELECT m.user_id, u.email, m.role FROM memberships m JOIN users u ON u.id = m.user_id
       WHERE m.account_id = ? ORDER BY u.email`,
    ),
    insertKey: db.prepare(
      `INSERT INTO api_keys (id, site_id, name, scopes, hash, prefix, created_by, created_at, last_used_at)
       VALUES (@id, @siteId, @name, @scopes, @hash, @prefix, @createdBy, @createdAt, @lastUsedAt)`,
    ),
    keyByHash: db.prepare(
      `SELECT k.*, s.account_id FROM api_keys k JOIN sites s ON s.id = k.site_id WHERE k.hash = ?`,
    ),
    getKey: db.prepare("SELECT * FROM api_keys WHERE id = ?"),
    listKeys: db.prepare("SELECT * FROM api_keys WHERE site_id = ? ORDER BY created_at, id"),
    deleteKey: db.prepare("DELETE FROM api_keys WHERE id = ?"),
    touchKey: db.prepare(
      "UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
    ),
    // Raised by triggers (migration 5); pluck: the bare number, no row object.
    directoryVersion: db.prepare("SELECT version FROM directory_version WHERE id = 1").pluck(),
  };

  return {
    async createAccount(a: AccountRecord) {
      s.insertAccount.run(a);
    },
    async getAccount(id) {
      const r = s.getAccount.get(id) as AccountRow | undefined;
      return r && accountFromRow(r);
    },
    async setPlan(id, plan) {
      return s.setPlan.run(plan, id).changes === 1;
    },
    async ensureUser(candidate: UserRecord) {
      s.insertUser.run(candidate);
      const r = s.userByEmail.get(candidate.email) as {
        id: string;
        email: string;
        created_at: number;
      };
      return { id: r.id, email: r.email, createdAt: r.created_at };
    },
    async setMembership(accountId, userId, role) {
      s.setMembership.run(accountId, userId, role);
    },
    async getRole(accountId, userId) {
      const r = s.getRole.get(accountId, userId) as { role: Role } | undefined;
      return r?.role;
    },
    async createSite(site: SiteRecord) {
      s.insertSite.run(
        site.id,
        site.accountId,
        JSON.stringify(site.hostnames),
        site.createdAt,
        nul(site.name),
        nul(site.timeZone),
      );
    },
    async getSite(id) {
      const r = s.getSite.get(id) as SiteRow | undefined;
      return r && siteFromRow(r);
    },
    async updateSite(id, patch) {
      s.updateSite.run({
        id,
        name: nul(patch.name),
        hostnames: patch.hostnames === undefined ? null : JSON.stringify(patch.hostnames),
        timeZone: nul(patch.timeZone),
      });
      const r = s.getSite.get(id) as SiteRow | undefined;
      return r && siteFromRow(r);
    },
    async listAccounts() {
      return (s.listAccounts.all() as AccountRow[]).map(accountFromRow);
    },
    async listSites(accountId) {
      const rows = accountId === undefined ? s.listSites.all() : s.listAccountSites.all(accountId);
      return (rows as SiteRow[]).map(siteFromRow);
    },
    async listMembers(accountId) {
      const rows = s.listMembers.all(accountId) as { user_id: string; email: string; role: Role }[];
      return rows.map((r): MemberRecord => ({ userId: r.user_id, email: r.email, role: r.role }));
    },
    async insertKey(k: ApiKeyRecord) {
      s.insertKey.run({ ...k, scopes: JSON.stringify(k.scopes), lastUsedAt: nul(k.lastUsedAt) });
    },
    async findKeyByHash(hash) {
      const r = s.keyByHash.get(hash) as (KeyRow & { account_id: string }) | undefined;
      if (!r) return undefined;
      const principal: KeyPrincipal = { ...keyFromRow(r), accountId: r.account_id };
      return principal;
    },
    async getKey(id) {
      const r = s.getKey.get(id) as KeyRow | undefined;
      return r && keyFromRow(r);
    },
    async listKeys(siteId) {
      return (s.listKeys.all(siteId) as KeyRow[]).map(keyFromRow);
    },
    async deleteKey(id) {
      return s.deleteKey.run(id).changes === 1;
    },
    async touchKey(id, at) {
      s.touchKey.run(at, id, at);
    },
    async directoryVersion() {
      return s.directoryVersion.get() as number;
    },
  };
}
