/**
 * A map that holds at most `maxEntries` entries and keeps the recently used
 * ones, at the cost of two plain Map operations per call (the "hashlru"
 * scheme of two generations). New and used entries go to the young
 * generation; when it is full, it becomes the old one and the previous old
 * one is dropped whole. An entry read from the old generation moves back to
 * the young one, so what is used at least once per generation stays.
 *
 * Why not evict one entry at a time from a Map (delete its first key): V8
 * leaves a hole per deleted entry at the front of the table, and finding
 * "the first key" walks over them, so a cache that is always full (a working
 * set larger than the bound) spends more time evicting than computing.
 */
export interface BoundedMap<K, V> {
  get(key: K): V | undefined;
  has(key: K): boolean;
  set(key: K, value: V): void;
  clear(): void;
}

export function createBoundedMap<K, V>(maxEntries: number): BoundedMap<K, V> {
  // Each generation holds half: the two together stay within maxEntries.
  const generation = Math.max(1, Math.floor(maxEntries / 2));
  let young = new Map<K, V>();
  let old = new Map<K, V>();
  const put = (key: K, value: V) => {
    if (young.size >= generation) {
      old = young;
      young = new Map();
    }
    young.set(key, value);
  };
  return {
    get(key) {
      const v = young.get(key);
      if (v !== undefined || young.has(key)) return v;
      if (!old.has(key)) return undefined;
      const w = old.get(key) as V;
      // Used again: it moves to the young generation (and so survives the next turn).
      old.delete(key);
      put(key, w);
      return w;
    },
    has(key) {
      return young.has(key) || old.has(key);
    },
    set(key, value) {
      // A key in the old generation is shadowed by the young one, and gone at the next turn.
      old.delete(key);
      put(key, value);
    },
    clear() {
      young = new Map();
      old = new Map();
    },
  };
}
