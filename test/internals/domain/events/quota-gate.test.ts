/** The quota's early refusal: reads the store's counter only when its bound does not show a fit. */
import { describe, expect, it } from "vitest";
import { createQuotaGate } from "../../../../src/domain/events/quota-gate.js";
import type { Store } from "../../../../src/domain/store/store.js";

const NOW = Date.UTC(2026, 0, 31, 23, 0, 0);

function storeWithUsage(usage: number) {
  const reads: string[] = [];
  const store = {
    async getUsage(accountId: string, month: string) {
      reads.push(`${accountId} ${month}`);
      return usage;
    },
  } as unknown as Store;
  return { store, reads };
}

describe("quota gate", () => {
  it("reads the counter until a commit gave a bound, then trusts the bound while it fits", async () => {
    const { store, reads } = storeWithUsage(5);
    const gate = createQuotaGate(store);
    await gate.check("acct", "2026-01", 3, 10, NOW);
    expect(reads).toEqual(["acct 2026-01"]);
    gate.note("acct", "2026-01", 5);
    await gate.check("acct", "2026-01", 5, 10, NOW);
    expect(reads).toHaveLength(1);
    // Another month's bound is not this one's.
    await gate.check("acct", "2026-02", 1, 10, NOW);
    expect(reads).toHaveLength(2);
  });

  it("a bound never falls, and refusing is decided on the store's count", async () => {
    const { store, reads } = storeWithUsage(8);
    const gate = createQuotaGate(store);
    gate.note("acct", "2026-01", 8);
    gate.note("acct", "2026-01", 2);
    // 8 + 3 > 10: the bound (8) says it may not fit, so the store's count decides (the error's
    // kind and mapping belong to errors.ts and are tested with the doors).
    await expect(gate.check("acct", "2026-01", 3, 10, NOW)).rejects.toThrow();
    expect(reads).toEqual(["acct 2026-01"]);
    // 8 + 2 fits under the bound: no read.
    await gate.check("acct", "2026-01", 2, 10, NOW);
    expect(reads).toHaveLength(1);
  });

  it("never reads for a request that counts nothing", async () => {
    const { store, reads } = storeWithUsage(100);
    await createQuotaGate(store).check("acct", "2026-01", 0, 10, NOW);
    expect(reads).toEqual([]);
  });
});
