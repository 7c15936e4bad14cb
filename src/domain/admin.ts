/**
 * Account administration: accounts, members, sites and API keys. Used by
 * AdminService and by the admin CLI, so both apply the same rules.
 */

import type { Clock } from "./clock.js";
import { connectorView, parseConnectorInput } from "./connectors/connector-rules.js";
import { errors } from "./errors.js";
import { newId } from "./ids.js";
import { generateApiKey, hashApiKey, keyDisplayPrefix } from "./keys.js";
import { ALLOWANCES, isPlan, KEY_PLAN, PLANS, type Plan, utcMonth } from "./plans.js";
import { DEFAULT_TIME_ZONE, parseSiteName, parseTimeZone } from "./site-settings.js";
import type {
  AccountRecord,
  ApiKeyRecord,
  MemberRecord,
  SitePatch,
  SiteRecord,
  Store,
} from "./store/store.js";
import { isOneOf, KEY_MANAGERS, ROLES, SCOPES, type Scope } from "./vocabulary.js";

const invalid = errors.invalid;

function email(value: string): string {
  const e = value.trim().toLowerCase();
  if (!/^[^@\s]+@[^@\s]+$/.test(e) || e.length > 254)
    throw invalid("email must be an email address");
  return e;
}

function plan(value: string): Plan {
  if (!isPlan(value)) throw invalid(`plan must be one of ${PLANS.join(", ")}`);
  return value;
}

/** A host name as typed by a person, e.g. `Example.com` or `https://www.example.com/`. */
function hostname(value: string): string {
  const raw = value.trim().toLowerCase();
  let host = raw;
  try {
    host = new URL(raw.includes("://") ? raw : `http://${raw}`).hostname;
  } catch {
    throw invalid(`hostname "${value}" is not a valid host name`);
  }
  if (!/^[a-z0-9.-]+$/.test(host) && !/^\[[0-9a-f:.]+\]$/.test(host)) {
    throw invalid(`hostname "${value}" is not a valid host name`);
  }
  return host;
}

export interface UsageView {
  accountId: string;
  plan: Plan;
  month: string;
  counted: number;
  allowance: number;
  ceiling: number;
}

export interface KeyView {
  keyId: string;
  siteId: string;
  name: string;
  scopes: Scope[];
  prefix: string;
  createdAt: number;
  lastUsedAt?: number;
  createdBy: string;
}

function keyView(k: ApiKeyRecord): KeyView {
  return {
    keyId: k.id,
    siteId: k.siteId,
    name: k.name,
    scopes: k.scopes,
    prefix: k.prefix,
    createdAt: k.createdAt,
    lastUsedAt: k.lastUsedAt,
    createdBy: k.createdBy,
  };
}

/** A site as the admin CLI and AdminService show it: its time zone always named. */
export interface SiteView {
  siteId: string;
  accountId: string;
  /** "" when the site has none. */
  name: string;
  hostnames: string[];
  /** The IANA zone its days are read in; UTC when none was set. */
  timeZone: string;
  createdAt: number;
}

export function siteView(s: SiteRecord): SiteView {
  return {
    siteId: s.id,
    accountId: s.accountId,
    name: s.name ?? "",
    hostnames: s.hostnames,
    timeZone: s.timeZone ?? DEFAULT_TIME_ZONE,
    createdAt: s.createdAt,
  };
}

/** A site's host names, normalised and without repeats; at least one. */
function hostnameList(values: string[]): string[] {
  if (values.length === 0) throw invalid("at least one hostname is required");
  return [...new Set(values.map(hostname))];
}

/** The administration operations, bound to a store and a clock. */
export function createAdmin(deps: { store: Store; clock: Clock }) {
  const { store, clock } = deps;

  async function accountOf(accountId: string) {
    const account = await store.getAccount(accountId);
    if (!account) throw errors.accountNotFound(accountId);
    return account;
  }

  async function siteOf(siteId: string) {
    const site = await store.getSite(siteId);
    if (!site) throw errors.siteNotFound(siteId);
    return site;
  }

  /** Only owners and admins manage keys and connectors; says which rule refused. */
  async function requireKeyManager(
    accountId: string,
    actorUserId: string,
    action: string,
    what = "API keys",
  ) {
    if (!actorUserId) throw invalid("the acting user id is required");
    const role = await store.getRole(accountId, actorUserId);
    if (!role) {
      throw errors.notMember(actorUserId, accountId);
    }
    if (!KEY_MANAGERS.includes(role)) {
      throw errors.notKeyManager(action, actorUserId, role, what);
    }
  }

  return {
    async createAccount(input: { name: string; plan: string; ownerEmail: string }) {
      const name = input.name.trim();
      if (name.length < 1 || name.length > 200) throw invalid("name must be 1 to 200 characters");
      const p = plan(input.plan);
      const ownerEmail = email(input.ownerEmail);
      const now = clock.now();
      const account = { id: newId("acct"), name, plan: p, createdAt: now };
      await store.createAccount(account);
      const owner = await store.ensureUser({
        id: newId("user"),
        email: ownerEmail,
        createdAt: now,
      });
      await store.setMembership(account.id, owner.id, "owner");
      return { accountId: account.id, ownerUserId: owner.id };
    },

    async setPlan(input: { accountId: string; plan: string }) {
      const p = plan(input.plan);
      if (!(await store.setPlan(input.accountId, p))) {
        throw errors.accountNotFound(input.accountId);
      }
      return { accountId: input.accountId, plan: p };
    },

    async addMember(input: { accountId: string; email: string; role: string }) {
      const role = input.role;
      if (!isOneOf(ROLES, role)) {
        throw invalid(`role must be one of ${ROLES.join(", ")}`);
      }
      const e = email(input.email);
      await accountOf(input.accountId);
      const user = await store.ensureUser({ id: newId("user"), email: e, createdAt: clock.now() });
      await store.setMembership(input.accountId, user.id, role);
      return { userId: user.id };
    },

    async createSite(input: {
      accountId: string;
      hostnames: string[];
      /** IANA name; absent or "": UTC. */
      timeZone?: string;
    }) {
      const hostnames = hostnameList(input.hostnames);
      const timeZone = input.timeZone ? parseTimeZone(input.timeZone) : undefined;
      await accountOf(input.accountId);
      const site: SiteRecord = {
        id: newId("site"),
        accountId: input.accountId,
        hostnames,
        createdAt: clock.now(),
      };
      if (timeZone !== undefined) site.timeZone = timeZone;
      await store.createSite(site);
      return { siteId: site.id };
    },

    /**
     * Changes a site's name, host names or time zone: only the fields given
     * (at least one). Applies from the next request in every process (a
     * directory write). Returns the site as it is now.
     */
    async updateSite(input: {
      siteId: string;
      name?: string;
      hostnames?: string[];
      timeZone?: string;
    }): Promise<SiteView> {
      if (!input.siteId) throw invalid("site_id is required");
      const patch: SitePatch = {};
      if (input.name !== undefined) patch.name = parseSiteName(input.name);
      if (input.hostnames !== undefined) patch.hostnames = hostnameList(input.hostnames);
      if (input.timeZone !== undefined) patch.timeZone = parseTimeZone(input.timeZone);
      if (Object.keys(patch).length === 0) {
        throw invalid("nothing to change: give a name, hostnames or a time zone");
      }
      const site = await store.updateSite(input.siteId, patch);
      if (!site) throw errors.siteNotFound(input.siteId);
      return siteView(site);
    },

    /** Every account, oldest first. */
    async listAccounts(): Promise<AccountRecord[]> {
      return store.listAccounts();
    },

    /** Every site, or an account's (404 for an unknown account), oldest first. */
    async listSites(input: { accountId?: string } = {}): Promise<SiteView[]> {
      if (input.accountId !== undefined) await accountOf(input.accountId);
      return (await store.listSites(input.accountId)).map(siteView);
    },

    /** An account's members and their roles, by email. */
    async listMembers(input: { accountId: string }): Promise<MemberRecord[]> {
      await accountOf(input.accountId);
      return store.listMembers(input.accountId);
    },

    async createKey(input: {
      siteId: string;
      name: string;
      scopes: string[];
      actorUserId: string;
    }) {
      const name = input.name;
      if ([...name].length < 1 || [...name].length > 100) {
        throw invalid("key name must be 1 to 100 characters");
      }
      const scopes = [...new Set(input.scopes.map((s) => s.trim()).filter(Boolean))];
      if (scopes.length === 0 || !scopes.every((s) => isOneOf(SCOPES, s))) {
        throw invalid("scopes must be events, payments or both, or reports");
      }
      // A read-only key stays read-only: a leaked reports key can never write.
      if (scopes.includes("reports") && scopes.length > 1) {
        throw invalid(
          "the reports scope is read-only and cannot be combined with events or payments",
        );
      }
      const site = await siteOf(input.siteId);
      const account = await accountOf(site.accountId);
      await requireKeyManager(account.id, input.actorUserId, "create");
      if (account.plan !== KEY_PLAN) {
        throw errors.planRequired(KEY_PLAN, account.id, account.plan);
      }
      const key = generateApiKey();
      const record: ApiKeyRecord = {
        id: newId("key"),
        siteId: site.id,
        name,
        scopes: SCOPES.filter((s) => scopes.includes(s)),
        hash: hashApiKey(key),
        prefix: keyDisplayPrefix(key),
        createdBy: input.actorUserId,
        createdAt: clock.now(),
      };
      await store.insertKey(record);
      return { keyId: record.id, key };
    },

    async listKeys(input: { siteId: string }): Promise<KeyView[]> {
      await siteOf(input.siteId);
      return (await store.listKeys(input.siteId)).map(keyView);
    },

    async deleteKey(input: { keyId: string; actorUserId: string }) {
      const key = await store.getKey(input.keyId);
      if (!key) throw errors.keyNotFound(input.keyId);
      const site = await siteOf(key.siteId);
      await requireKeyManager(site.accountId, input.actorUserId, "delete");
      await store.deleteKey(key.id);
      return { keyId: key.id };
    },

    /**
     * A connector receives one provider's webhooks for a site. Same rules as
     * keys: owner or admin, Scale plan to create (payments are a Scale
     * feature), any plan to delete. The secret is returned nowhere.
     */
    async createConnector(input: {
      siteId: string;
      provider: string;
      secret: string;
      actorUserId: string;
    }) {
      const { provider, secret } = parseConnectorInput(input);
      const site = await siteOf(input.siteId);
      const account = await accountOf(site.accountId);
      await requireKeyManager(account.id, input.actorUserId, "create", "connectors");
      if (account.plan !== KEY_PLAN) {
        throw errors.planRequired(KEY_PLAN, account.id, account.plan, "connectors");
      }
      const record = {
        id: newId("conn"),
        siteId: site.id,
        provider,
        secret,
        createdBy: input.actorUserId,
        createdAt: clock.now(),
      };
      await store.insertConnector(record);
      return connectorView(record);
    },

    async listConnectors(input: { siteId: string }) {
      await siteOf(input.siteId);
      return (await store.listConnectors(input.siteId)).map(connectorView);
    },

    async deleteConnector(input: { connectorId: string; actorUserId: string }) {
      const connector = await store.getConnector(input.connectorId);
      if (!connector) throw errors.connectorNotFound(input.connectorId);
      const site = await siteOf(connector.siteId);
      await requireKeyManager(site.accountId, input.actorUserId, "delete", "connectors");
      await store.deleteConnector(connector.id);
      return { connectorId: connector.id };
    },

    async getUsage(input: { accountId: string }): Promise<UsageView> {
      const account = await accountOf(input.accountId);
      const month = utcMonth(clock.now());
      const { included, ceiling } = ALLOWANCES[account.plan];
      return {
        accountId: account.id,
        plan: account.plan,
        month,
        counted: await store.getUsage(account.id, month),
        allowance: included,
        ceiling,
      };
    },
  };
}

export type Admin = ReturnType<typeof createAdmin>;

/**
 * The checks createAccount and createSite apply to an email and a host name,
 * for a caller that must refuse bad input before it changes anything (the
 * first run spends its one-time token only on input that will be accepted).
 */
export const adminInputRules = { email, hostname } as const;
