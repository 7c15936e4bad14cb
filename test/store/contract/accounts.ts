/** The store contract, the accounts part: accounts, users, memberships, sites and keys (and the store's lifecycle). */
import { beforeEach, describe, expect, it } from "vitest";
import type { Store } from "../../../src/store/port.js";
import { type StoreContract, T0, uid } from "../../helpers/store-contract.js";

export function describeAccountsContract(contract: StoreContract): void {
  const { name, open, newAccount, newSite, key } = contract;
  let store: Store;
  beforeEach(() => {
    store = contract.store;
  });

  describe("lifecycle", () => {
    it("names its kind and answers ping", async () => {
      expect(["sqlite", "mongodb"]).toContain(store.kind);
      expect(store.kind).toBe(name.startsWith("mongo") ? "mongodb" : "sqlite");
      await expect(store.ping()).resolves.toBeUndefined();
    });

    it("opens again over existing data, and close is idempotent", async () => {
      const other = await open();
      await other.ping();
      await other.close();
      await expect(other.close()).resolves.toBeUndefined();
    });
  });

  describe("accounts, users and memberships", () => {
    it("creates and reads an account; an unknown one is undefined", async () => {
      const account = await newAccount({ name: "Acme", plan: "growth", createdAt: T0 + 123 });
      expect(await store.getAccount(account.id)).toEqual({
        id: account.id,
        name: "Acme",
        plan: "growth",
        createdAt: T0 + 123,
      });
      expect(await store.getAccount(uid("acct"))).toBeUndefined();
    });

    it("refuses a second account with the same id", async () => {
      const account = await newAccount();
      await expect(store.createAccount({ ...account, name: "Other" })).rejects.toThrow();
      expect((await store.getAccount(account.id))?.name).toBe("Example Ltd");
    });

    it("sets the plan, and says false for an unknown account", async () => {
      const account = await newAccount();
      expect(await store.setPlan(account.id, "scale")).toBe(true);
      expect((await store.getAccount(account.id))?.plan).toBe("scale");
      expect(await store.setPlan(account.id, "scale")).toBe(true);
      expect(await store.setPlan(uid("acct"), "starter")).toBe(false);
    });

    it("ensureUser creates a user once per email and returns the existing one after", async () => {
      const email = `${uid("ada")}@example.com`;
      const first = { id: uid("user"), email, createdAt: T0 + 5 };
      expect(await store.ensureUser(first)).toEqual(first);
      const again = await store.ensureUser({ id: uid("user"), email, createdAt: T0 + 9 });
      expect(again).toEqual(first);
      const other = { id: uid("user"), email: `${uid("bob")}@example.com`, createdAt: T0 + 6 };
      expect(await store.ensureUser(other)).toEqual(other);
    });

    it("concurrent ensureUser calls of one email agree on one user", async () => {
      const email = `${uid("eve")}@example.com`;
      const users = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          store.ensureUser({ id: uid("user"), email, createdAt: T0 + i }),
        ),
      );
      for (const u of users) expect(u).toEqual(users[0]);
    });

    it("adds and changes memberships; an unknown one is undefined", async () => {
      const account = await newAccount();
      const user = await store.ensureUser({
        id: uid("user"),
        email: `${uid("m")}@example.com`,
        createdAt: T0,
      });
      expect(await store.getRole(account.id, user.id)).toBeUndefined();
      await store.setMembership(account.id, user.id, "member");
      expect(await store.getRole(account.id, user.id)).toBe("member");
      await store.setMembership(account.id, user.id, "admin");
      expect(await store.getRole(account.id, user.id)).toBe("admin");
      const other = await newAccount();
      expect(await store.getRole(other.id, user.id)).toBeUndefined();
    });
  });

  describe("sites and keys", () => {
    it("creates and reads a site; an unknown one is undefined", async () => {
      const { account, site } = await newSite();
      expect(await store.getSite(site.id)).toEqual({
        id: site.id,
        accountId: account.id,
        hostnames: ["example.com", "www.example.com"],
        createdAt: T0 + 1,
      });
      expect(await store.getSite(uid("site"))).toBeUndefined();
    });

    it("keeps a site's name and time zone, and updates only the fields a patch gives", async () => {
      const account = await newAccount();
      const site = {
        id: uid("site"),
        accountId: account.id,
        hostnames: ["shop.test"],
        createdAt: T0 + 2,
        name: "Shop",
        timeZone: "Europe/Paris",
      };
      await store.createSite(site);
      expect(await store.getSite(site.id)).toEqual(site);
      const version = await store.directoryVersion();
      expect(await store.updateSite(site.id, { timeZone: "America/New_York" })).toEqual({
        ...site,
        timeZone: "America/New_York",
      });
      expect(await store.directoryVersion()).not.toBe(version);
      const renamed = await store.updateSite(site.id, {
        name: "Shop EU",
        hostnames: ["shop.test", "www.shop.test"],
      });
      expect(renamed).toEqual({
        ...site,
        name: "Shop EU",
        hostnames: ["shop.test", "www.shop.test"],
        timeZone: "America/New_York",
      });
      expect(await store.getSite(site.id)).toEqual(renamed);
      expect(await store.updateSite(uid("site"), { name: "x" })).toBeUndefined();
    });

    it("lists accounts, an account's sites and its members with their emails", async () => {
      const account = await newAccount({ createdAt: T0 + 50 });
      const later = {
        id: uid("site"),
        accountId: account.id,
        hostnames: ["b.test"],
        createdAt: T0 + 9,
      };
      const earlier = {
        id: uid("site"),
        accountId: account.id,
        hostnames: ["a.test"],
        createdAt: T0 + 8,
        timeZone: "Asia/Tokyo",
      };
      await store.createSite(later);
      await store.createSite(earlier);
      const { site: elsewhere } = await newSite();
      expect(await store.listSites(account.id)).toEqual([earlier, later]);
      const all = await store.listSites();
      expect(all).toContainEqual(elsewhere);
      expect(all.indexOf(all.find((x) => x.id === earlier.id) as never)).toBeLessThan(
        all.indexOf(all.find((x) => x.id === later.id) as never),
      );
      expect(await store.listSites(uid("acct"))).toEqual([]);
      expect(await store.listAccounts()).toContainEqual(account);

      const zed = { id: uid("user"), email: `zed-${uid("u")}@example.com`, createdAt: T0 };
      const amy = { id: uid("user"), email: `amy-${uid("u")}@example.com`, createdAt: T0 };
      for (const u of [zed, amy]) await store.ensureUser(u);
      await store.setMembership(account.id, zed.id, "owner");
      await store.setMembership(account.id, amy.id, "member");
      expect(await store.listMembers(account.id)).toEqual([
        { userId: amy.id, email: amy.email, role: "member" },
        { userId: zed.id, email: zed.email, role: "owner" },
      ]);
      expect(await store.listMembers(uid("acct"))).toEqual([]);
    });

    it("inserts a key and finds it by id and by hash, with its site's account", async () => {
      const { account, site } = await newSite();
      const k = key(site.id, { scopes: ["events"] });
      await store.insertKey(k);
      expect(await store.getKey(k.id)).toEqual(k);
      const principal = await store.findKeyByHash(k.hash);
      expect(principal).toEqual({ ...k, accountId: account.id });
      expect(principal?.lastUsedAt).toBeUndefined();
      expect(await store.findKeyByHash(uid("hash"))).toBeUndefined();
      expect(await store.getKey(uid("key"))).toBeUndefined();
    });

    it("keeps lastUsedAt given at insert", async () => {
      const { site } = await newSite();
      const k = key(site.id, { lastUsedAt: T0 + 77 });
      await store.insertKey(k);
      expect(await store.getKey(k.id)).toEqual(k);
    });

    it("refuses a second key with the same hash", async () => {
      const { site } = await newSite();
      const k = key(site.id);
      await store.insertKey(k);
      await expect(store.insertKey(key(site.id, { hash: k.hash }))).rejects.toThrow();
    });

    it("lists a site's keys by creation time, then id", async () => {
      const { site } = await newSite();
      const other = await newSite();
      const base = uid("key");
      const late = key(site.id, { id: `${base}_a`, createdAt: T0 + 300 });
      const early = key(site.id, { id: `${base}_z`, createdAt: T0 + 100 });
      const lateB = key(site.id, { id: `${base}_b`, createdAt: T0 + 300 });
      for (const k of [lateB, late, early]) await store.insertKey(k);
      await store.insertKey(key(other.site.id));
      expect(await store.listKeys(site.id)).toEqual([early, late, lateB]);
      const { site: empty } = await newSite();
      expect(await store.listKeys(empty.id)).toEqual([]);
    });

    it("deletes a key: it is unknown on the next lookup", async () => {
      const { site } = await newSite();
      const k = key(site.id);
      await store.insertKey(k);
      expect(await store.findKeyByHash(k.hash)).toBeDefined();
      expect(await store.deleteKey(k.id)).toBe(true);
      expect(await store.findKeyByHash(k.hash)).toBeUndefined();
      expect(await store.getKey(k.id)).toBeUndefined();
      expect(await store.listKeys(site.id)).toEqual([]);
      expect(await store.deleteKey(k.id)).toBe(false);
    });

    it("directoryVersion rises with every account, site and key change, not with a key's use", async () => {
      const versions = [await store.directoryVersion()];
      const changed = async () => {
        const v = await store.directoryVersion();
        expect(v).toBeGreaterThan(versions.at(-1) as number);
        versions.push(v);
      };
      const { account, site } = await newSite();
      await changed();
      await store.setPlan(account.id, "starter");
      await changed();
      const k = key(site.id);
      await store.insertKey(k);
      await changed();
      await store.touchKey(k.id, T0 + 700);
      expect(await store.directoryVersion()).toBe(versions.at(-1));
      await store.deleteKey(k.id);
      await changed();
    });

    it("touchKey records the latest use and never moves it back", async () => {
      const { site } = await newSite();
      const k = key(site.id);
      await store.insertKey(k);
      await store.touchKey(k.id, T0 + 500);
      expect((await store.getKey(k.id))?.lastUsedAt).toBe(T0 + 500);
      await store.touchKey(k.id, T0 + 400);
      expect((await store.findKeyByHash(k.hash))?.lastUsedAt).toBe(T0 + 500);
      await store.touchKey(k.id, T0 + 600);
      expect(await store.getKey(k.id)).toEqual({ ...k, lastUsedAt: T0 + 600 });
      await expect(store.touchKey(uid("key"), T0)).resolves.toBeUndefined();
    });
  });
}
