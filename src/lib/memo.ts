import { createBoundedMap } from "./bounded-map.js";

/**
 * Memoises a pure function of a string in a bounded map that keeps the
 * recently used results (src/lib/bounded-map.ts): enough for inputs such as
 * user agents, where a few hundred values make up nearly all the traffic.
 * Keys longer than `maxKeyLength` are computed every time, never kept, so
 * the memory held stays under maxEntries × maxKeyLength characters.
 */
export function memoize<R>(
  fn: (key: string) => R,
  options: { maxEntries: number; maxKeyLength: number },
): (key: string) => R {
  const { maxEntries, maxKeyLength } = options;
  const cache = createBoundedMap<string, R>(maxEntries);
  return (key) => {
    if (key.length > maxKeyLength) return fn(key);
    const hit = cache.get(key);
    if (hit !== undefined || cache.has(key)) return hit as R;
    const value = fn(key);
    cache.set(key, value);
    return value;
  };
}
