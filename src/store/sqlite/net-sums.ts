/** Exact sums of minor units read from SQLite, and net revenue summed per key and currency. */

/**
 * A sum read with safe integers. SQLite's `+` turns an integer past 2^63 into
 * a float instead of failing (so a payment write never fails on a huge day);
 * such a sum has no exact value, and the read fails as sum() itself does.
 */
export function exactSum(v: bigint | number): bigint {
  if (typeof v !== "bigint") throw new RangeError("a revenue sum is past 2^63 minor units");
  return v;
}

/** Net revenue summed exactly per key (a day, a dimension's value) and currency. */
export interface NetSums<T> {
  add(key: string, currency: string, net: bigint | number): void;
  /** The sums, sorted by key, then currency. */
  list(): T[];
}

/** Net sums whose entries `make` gives their key field (`{ day }`, `{ value }`). */
export function createNetSums<T extends { currency: string; netMinor: bigint }>(
  make: (key: string) => Omit<T, "currency" | "netMinor">,
): NetSums<T> {
  const entries = new Map<string, T>();
  return {
    add(key, currency, net) {
      const k = `${key}\u0000${currency}`;
      const found = entries.get(k);
      if (found) found.netMinor += exactSum(net);
      else entries.set(k, { ...make(key), currency, netMinor: exactSum(net) } as T);
    },
    list: () =>
      [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, entry]) => entry),
  };
}
