/** The store contract, event pages: a time range and a stable position, newest first (issue 24). */
import { beforeEach, describe, expect, it } from "vitest";
import type { EventPageQuery, Store } from "../../../src/store/port.js";
import { event, group, type StoreContract, T0 } from "../../helpers/store-contract.js";

export function describeEventPagesContract(contract: StoreContract): void {
  const { newSite } = contract;
  let store: Store;
  beforeEach(() => {
    store = contract.store;
  });

  /** Every page of `query` (without `before`), each read after `between` ran. */
  async function allPages(
    siteId: string,
    query: Omit<EventPageQuery, "before">,
    between: () => Promise<void> = async () => {},
  ): Promise<string[][]> {
    const pages: string[][] = [];
    let before: number | undefined;
    do {
      const page = await store.pageEvents(siteId, {
        ...query,
        ...(before === undefined ? {} : { before }),
      });
      pages.push(page.events.map((e) => e.name));
      before = page.next;
      await between();
    } while (before !== undefined);
    return pages;
  }

  describe("pageEvents", () => {
    it("pages newest first by arrival within [from, to), with no empty last page", async () => {
      const { account, site } = await newSite();
      // Arrival order e0..e6; times out of order, so arrival and time differ.
      const times = [T0 + 5, T0 + 1, T0 + 3, T0 + 9, T0 + 2, T0 + 4, T0 + 7];
      for (const [i, ts] of times.entries()) {
        await store.commitEvents([
          group(account.id, [event(site.id, `e${i}`, { ts })], { ceiling: 100 }),
        ]);
      }
      expect(await allPages(site.id, { from: 0, to: Number.MAX_SAFE_INTEGER, limit: 3 })).toEqual([
        ["e6", "e5", "e4"],
        ["e3", "e2", "e1"],
        ["e0"],
      ]);
      expect(await allPages(site.id, { from: T0 + 2, to: T0 + 7, limit: 2 })).toEqual([
        ["e5", "e4"],
        ["e2", "e0"],
      ]);
      expect(await allPages(site.id, { from: T0 + 100, to: T0 + 200, limit: 2 })).toEqual([[]]);
      const first = await store.pageEvents(site.id, { from: 0, to: T0 + 100, limit: 7 });
      expect(first.events.map((e) => e.name)).toEqual(["e6", "e5", "e4", "e3", "e2", "e1", "e0"]);
      expect(first.next).toBeUndefined();
    });

    it("neither repeats nor skips an event while new ones arrive between pages", async () => {
      const { account, site } = await newSite();
      const add = async (names: string[]) => {
        await store.commitEvents([
          group(
            account.id,
            names.map((n) => event(site.id, n)),
            { ceiling: 1000 },
          ),
        ]);
      };
      // Several requests: MongoDB keeps them in buckets of up to 200 events, which pages cross.
      for (let g = 0; g < 5; g++)
        await add(Array.from({ length: 50 }, (_, i) => `old${g * 50 + i}`));
      let round = 0;
      const pages = await allPages(
        site.id,
        { from: 0, to: Number.MAX_SAFE_INTEGER, limit: 40 },
        () => add([`new${round++}a`, `new${round}b`]),
      );
      const seen = pages.flat();
      expect(seen).toEqual(Array.from({ length: 250 }, (_, i) => `old${249 - i}`));
    });
  });
}
