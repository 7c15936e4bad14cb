/**
 * Memoises a pure function of a string in a bounded map. When full, the
 * oldest entry goes (insertion order): cheap, and enough for inputs such as
 * user agents, where a few hundred values make up nearly all the traffic.
 */
export function memoize<R>(fn: (key: string) => R, maxEntries: number): (key: string) => R {
  const cache = new Map<string, R>();
  return (key) => {
    const hit = cache.get(key);
    if (hit !== undefined || cache.has(key)) return hit as R;
    const value = fn(key);
    if (cache.size >= maxEntries) cache.delete(cache.keys().next().value as string);
    cache.set(key, value);
    return value;
  };
}
