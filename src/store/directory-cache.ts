/**
 * Keys, sites and accounts cached in the process, so a request does not read
 * them from the database each time (they were a fifth of a single event's
 * CPU, docs/performance.md), while a change made anywhere (another worker,
 * the admin CLI) still takes effect on the very next request.
 *
 * Every lookup first reads the store's `directoryVersion`, one tiny row that
 * every account, site or key change raises before that change's call
 * returns. The cache holds the records read at one version; a higher version
 * empties it. A revoked key is therefore refused by any lookup that starts
 * after `key delete` returned, in every process, as when nothing was cached.
 * Only records that exist are cached (unknown keys are never remembered, so
 * guessing keys cannot fill memory), and each kind is bounded.
 */
import { type BoundedMap, createBoundedMap } from "../lib/bounded-map.js";
import type { AccountRecord, KeyPrincipal, SiteRecord, Store } from "./port.js";

/** Most cached records of each kind; beyond, the least recently used go (bounded-map.ts). */
const MAX_ENTRIES = 10_000;

/** The store methods that change keys, sites or accounts in this process. */
const DIRECTORY_WRITES = [
  "createAccount",
  "setPlan",
  "createSite",
  "updateSite",
  "insertKey",
  "deleteKey",
] as const satisfies readonly (keyof Store)[];

/** A store with a cached directory, told when a request arrives. */
export interface DirectoryCachedStore extends Store {
  /**
   * Called as each request arrives (before anything of it is read). Until
   * the next arrival, within the same turn of the event loop, the lookups
   * share one read of the directory version: it was read after every
   * request then in progress arrived, so it is as fresh for them as a read
   * of their own, and the next request (a new arrival) reads again.
   */
  beginRequest(): void;
}

/** A store whose key, site and account lookups are served from memory while unchanged. */
export function cacheDirectory(
  store: Store,
  options: { maxEntries?: number } = {},
): DirectoryCachedStore {
  const maxEntries = options.maxEntries ?? MAX_ENTRIES;
  let version = Number.NEGATIVE_INFINITY;
  // The version read shared by the lookups since the last arrival; only
  // while a request turn is open (outside requests every lookup reads).
  let shared: Promise<number> | undefined;
  let turnOpen = false;
  const endTurn = () => {
    turnOpen = false;
    shared = undefined;
  };
  const currentVersion = (): Promise<number> => {
    if (!turnOpen) return store.directoryVersion();
    if (shared) return shared;
    const read = store.directoryVersion();
    shared = read;
    // A failed read is not shared: the next lookup tries again.
    read.catch(() => {
      if (shared === read) shared = undefined;
    });
    return read;
  };
  const keys = createBoundedMap<string, KeyPrincipal>(maxEntries);
  const sites = createBoundedMap<string, SiteRecord>(maxEntries);
  const accounts = createBoundedMap<string, AccountRecord>(maxEntries);

  function cached<T extends object>(
    map: BoundedMap<string, T>,
    read: (id: string) => Promise<T | undefined>,
  ): (id: string) => Promise<T | undefined> {
    return async (id) => {
      const v = await currentVersion();
      if (v > version) {
        version = v;
        keys.clear();
        sites.clear();
        accounts.clear();
      }
      // A lookup that read an older version than another one already did
      // (reads racing on an asynchronous store) neither uses nor fills the cache.
      const current = v === version;
      const hit = current ? map.get(id) : undefined;
      if (hit) return hit;
      const value = await read(id);
      // Filled only when no newer version was seen meanwhile: the read may predate that change.
      if (value && current && v === version) map.set(id, deepFreeze(value));
      return value;
    };
  }

  const writes: Partial<Store> = {};
  for (const name of DIRECTORY_WRITES) {
    const write = store[name] as (...args: unknown[]) => Promise<unknown>;
    // This process's own change: the lookups after it read the raised version.
    (writes as Record<string, unknown>)[name] = (...args: unknown[]) =>
      write.apply(store, args).finally(() => {
        shared = undefined;
      });
  }

  return {
    ...store,
    ...writes,
    beginRequest() {
      shared = undefined;
      if (!turnOpen) {
        turnOpen = true;
        // Bounded to this turn of the event loop: a lookup of a later turn
        // with no new arrival (a timer, a background job) reads again.
        setImmediate(endTurn);
      }
    },
    findKeyByHash: cached(keys, (hash) => store.findKeyByHash(hash)),
    getSite: cached(sites, (id) => store.getSite(id)),
    getAccount: cached(accounts, (id) => store.getAccount(id)),
  };
}

/** Shared records must not be changed by one request under another's feet. */
function deepFreeze<T extends object>(value: T): T {
  for (const v of Object.values(value)) {
    if (typeof v === "object" && v !== null) deepFreeze(v);
  }
  return Object.freeze(value);
}
