/** The accounts, users, sites and keys part of the store port. */
import type { Plan, Role } from "../vocabulary.js";
import type {
  AccountRecord,
  ApiKeyRecord,
  KeyPrincipal,
  MemberRecord,
  SitePatch,
  SiteRecord,
  UserRecord,
} from "./records.js";

/** The accounts, users, sites and keys part of the store port. Every method may reject when the database is unreachable. */
export interface StoreAccountsPart {
  createAccount(account: AccountRecord): Promise<void>;
  getAccount(accountId: string): Promise<AccountRecord | undefined>;
  /** Returns false when the account does not exist. */
  setPlan(accountId: string, plan: Plan): Promise<boolean>;
  /** Returns the user with this email, creating `candidate` when there is none. */
  ensureUser(candidate: UserRecord): Promise<UserRecord>;
  /** Adds or changes a membership. */
  setMembership(accountId: string, userId: string, role: Role): Promise<void>;
  getRole(accountId: string, userId: string): Promise<Role | undefined>;
  createSite(site: SiteRecord): Promise<void>;
  getSite(siteId: string): Promise<SiteRecord | undefined>;
  /** Changes the fields `patch` gives; returns the site as it is now, undefined when there is none. */
  updateSite(siteId: string, patch: SitePatch): Promise<SiteRecord | undefined>;
  /** Every account, oldest first (by creation time, then id). */
  listAccounts(): Promise<AccountRecord[]>;
  /** Every site, or an account's, oldest first (by creation time, then id). */
  listSites(accountId?: string): Promise<SiteRecord[]>;
  /** An account's members with their emails, by email. */
  listMembers(accountId: string): Promise<MemberRecord[]>;
  insertKey(key: ApiKeyRecord): Promise<void>;
  /** Looks a key up by its hash, in the database (callers cache against `directoryVersion`). */
  findKeyByHash(hash: string): Promise<KeyPrincipal | undefined>;
  getKey(keyId: string): Promise<ApiKeyRecord | undefined>;
  listKeys(siteId: string): Promise<ApiKeyRecord[]>;
  /** Returns false when there was no such key. */
  deleteKey(keyId: string): Promise<boolean>;
  /** Records a use of the key (callers throttle this). */
  touchKey(keyId: string, at: number): Promise<void>;
  /**
   * A number that changes, in every process's view, once any account, site
   * or key is created, changed or deleted (a key's last use does not count),
   * before the call that changed it returns. One small read: lookups of
   * those records are cached against it (src/store/directory-cache.ts).
   */
  directoryVersion(): Promise<number>;
}
