/**
 * The store contract, the first-run part: whether any account exists, and
 * the one setup token (hash only), replaced by each new one and usable once.
 * Runs first in the suite: it needs a store with no account yet.
 */
import { beforeEach, describe, expect, it } from "vitest";
import type { Store } from "../../../src/store/port.js";
import { type StoreContract, T0 } from "../../helpers/store-contract.js";

const HASH_A = "a".repeat(64);
const HASH_B = "b".repeat(64);

export function describeSetupContract(contract: StoreContract): void {
  let store: Store;
  beforeEach(() => {
    store = contract.store;
  });

  describe("first run", () => {
    it("has no setup token before one is saved", async () => {
      await expect(store.getSetupToken()).resolves.toBeUndefined();
      await expect(store.useSetupToken(HASH_A, T0)).resolves.toBe(false);
    });

    it("keeps the saved token and lets its hash be used exactly once", async () => {
      await store.saveSetupToken({ hash: HASH_A, createdAt: T0, expiresAt: T0 + 3_600_000 });
      await expect(store.getSetupToken()).resolves.toEqual({
        hash: HASH_A,
        createdAt: T0,
        expiresAt: T0 + 3_600_000,
      });
      await expect(store.useSetupToken(HASH_B, T0 + 5)).resolves.toBe(false);
      const uses = await Promise.all([
        store.useSetupToken(HASH_A, T0 + 10),
        store.useSetupToken(HASH_A, T0 + 11),
      ]);
      expect(uses.sort()).toEqual([false, true]);
      expect((await store.getSetupToken())?.usedAt).toBeOneOf([T0 + 10, T0 + 11]);
    });

    it("replaces the token with a new one, unused", async () => {
      await store.saveSetupToken({ hash: HASH_B, createdAt: T0 + 20, expiresAt: T0 + 99 });
      await expect(store.getSetupToken()).resolves.toEqual({
        hash: HASH_B,
        createdAt: T0 + 20,
        expiresAt: T0 + 99,
      });
      await expect(store.useSetupToken(HASH_A, T0 + 30)).resolves.toBe(false);
      await expect(store.useSetupToken(HASH_B, T0 + 30)).resolves.toBe(true);
    });

    it("says whether any account exists", async () => {
      await expect(store.hasAccount()).resolves.toBe(false);
      await contract.newAccount();
      await expect(store.hasAccount()).resolves.toBe(true);
    });
  });
}
