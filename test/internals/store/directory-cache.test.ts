/**
 * The in-process cache of keys, sites and accounts: served from memory while
 * nothing changed, and a change made through another connection to the same
 * file (another worker, the admin CLI) is seen by the very next lookup.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cacheDirectory } from "../../../src/store/directory-cache.js";
import type { ApiKeyRecord, Store } from "../../../src/store/port.js";
import { createSqliteStore } from "../../../src/store/sqlite/sqlite-store.js";

const T0 = Date.UTC(2025, 0, 1);

let dir: string;
let raw: Store;
let other: Store;
const reads = { key: 0, site: 0, account: 0 };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "directory-cache-"));
  raw = createSqliteStore(join(dir, "db.sqlite"));
  other = createSqliteStore(join(dir, "db.sqlite"));
});
afterAll(async () => {
  await raw.close();
  await other.close();
  await rm(dir, { recursive: true, force: true });
});

/** The cached store over a store that counts its database reads. */
function counted(): Store {
  return cacheDirectory({
    ...raw,
    findKeyByHash: (h) => {
      reads.key += 1;
      return raw.findKeyByHash(h);
    },
    getSite: (id) => {
      reads.site += 1;
      return raw.getSite(id);
    },
    getAccount: (id) => {
      reads.account += 1;
      return raw.getAccount(id);
    },
  });
}

let n = 0;
async function tenant(): Promise<{ accountId: string; siteId: string; key: ApiKeyRecord }> {
  n += 1;
  const accountId = `acct_${n}`;
  const siteId = `site_${n}`;
  await other.createAccount({ id: accountId, name: "A", plan: "scale", createdAt: T0 });
  await other.createSite({ id: siteId, accountId, hostnames: ["example.com"], createdAt: T0 });
  const key: ApiKeyRecord = {
    id: `key_${n}`,
    siteId,
    name: "k",
    scopes: ["events"],
    hash: `hash_${n}`,
    prefix: "mk_live_x",
    createdBy: "user_1",
    createdAt: T0,
  };
  await other.insertKey(key);
  return { accountId, siteId, key };
}

describe("directory cache", () => {
  it("reads each record from the database once while nothing changes", async () => {
    const store = counted();
    const t = await tenant();
    const before = { ...reads };
    for (let i = 0; i < 5; i += 1) {
      expect((await store.findKeyByHash(t.key.hash))?.accountId).toBe(t.accountId);
      expect((await store.getSite(t.siteId))?.hostnames).toEqual(["example.com"]);
      expect((await store.getAccount(t.accountId))?.plan).toBe("scale");
    }
    expect(reads).toEqual({
      key: before.key + 1,
      site: before.site + 1,
      account: before.account + 1,
    });
  });

  it("a key deleted through another connection is unknown on the next lookup", async () => {
    const store = counted();
    const t = await tenant();
    expect(await store.findKeyByHash(t.key.hash)).toBeDefined();
    expect(await other.deleteKey(t.key.id)).toBe(true);
    expect(await store.findKeyByHash(t.key.hash)).toBeUndefined();
  });

  it("a plan changed through another connection is seen on the next lookup", async () => {
    const store = counted();
    const t = await tenant();
    expect((await store.getAccount(t.accountId))?.plan).toBe("scale");
    await other.setPlan(t.accountId, "free");
    expect((await store.getAccount(t.accountId))?.plan).toBe("free");
  });

  it("a key's use does not empty the cache; unknown keys are not remembered", async () => {
    const store = counted();
    const t = await tenant();
    await store.findKeyByHash(t.key.hash);
    await other.touchKey(t.key.id, T0 + 1);
    const before = reads.key;
    await store.findKeyByHash(t.key.hash);
    expect(reads.key).toBe(before);
    expect(await store.findKeyByHash("no_such_hash")).toBeUndefined();
    expect(await store.findKeyByHash("no_such_hash")).toBeUndefined();
    expect(reads.key).toBe(before + 2);
  });

  it("hands out frozen records, so no request can change another's", async () => {
    const store = counted();
    const t = await tenant();
    const site = await store.getSite(t.siteId);
    expect(Object.isFrozen(site)).toBe(true);
    expect(Object.isFrozen(site?.hostnames)).toBe(true);
  });

  it("keeps at most maxEntries records of a kind", async () => {
    const store = cacheDirectory(
      {
        ...raw,
        getSite: (id) => {
          reads.site += 1;
          return raw.getSite(id);
        },
      },
      { maxEntries: 2 },
    );
    const [a, b, c] = [await tenant(), await tenant(), await tenant()];
    for (const t of [a, b, c]) await store.getSite(t.siteId);
    const before = reads.site;
    await store.getSite(c.siteId);
    await store.getSite(b.siteId);
    expect(reads.site).toBe(before);
    await store.getSite(a.siteId);
    expect(reads.site).toBe(before + 1);
  });
});
