/**
 * Paging through events in DuckDB with read-ahead: every event of the range
 * once, newest first, while newer ones arrive; a read-ahead is dropped when
 * the feed removes events, so an erased event is never served from it.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  type AnalyticsStore,
  openAnalyticsStore,
} from "../../../../src/store/duckdb/analytics-store.js";
import { createEventPager } from "../../../../src/store/duckdb/event-reads.js";

const opened: AnalyticsStore[] = [];
afterEach(() => {
  for (const a of opened.splice(0)) a.close();
});

async function withEvents(from: number, to: number, a?: AnalyticsStore) {
  const store =
    a ?? (await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" }));
  if (!a) opened.push(store);
  await store.writer.run(
    `INSERT INTO events SELECT i, CASE WHEN i % 3 = 0 THEN 'site_2' ELSE 'site_1' END, 1000 + i,
       i % 7, 'pageview', '/p', NULL, 'Direct', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, 'https://example.com/' || i, NULL, NULL, NULL, NULL, 1000 + i, 'v' || (i % 7), NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, i % 7, CASE WHEN i % 3 = 0 THEN 2 ELSE 1 END
     FROM range(${from}, ${to}) t(i)`,
  );
  return store;
}

const tagOf = (url: string) => Number(new URL(url).pathname.slice(1));

describe("paging through events with read-ahead", () => {
  it("gives every event of the site and range once, newest first, while newer ones arrive", async () => {
    const a = await withEvents(1, 3_001);
    const removals = 0;
    const page = createEventPager(() => removals);
    const conn = await a.connect();
    const seen: number[] = [];
    let before: number | undefined;
    let pages = 0;
    do {
      const p = await page(async () => conn, "site_1", {
        from: 1_100,
        to: 3_900,
        limit: 100,
        ...(before === undefined ? {} : { before }),
      });
      seen.push(...p.events.map((e) => tagOf(e.url)));
      before = p.next;
      // Newer events arrive after the first page: none is in this listing.
      if (++pages === 1) await withEvents(3_001, 3_200, a);
    } while (before !== undefined);
    conn.closeSync();
    const expected = Array.from({ length: 3_000 }, (_, k) => 3_000 - k).filter(
      (i) => i % 3 !== 0 && 1000 + i >= 1_100 && 1000 + i < 3_900,
    );
    expect(seen).toEqual(expected);
    expect(removals).toBe(0);
  });

  it("drops its read-ahead once events were removed: an erased event is never served", async () => {
    const a = await withEvents(1, 1_001);
    let removals = 0;
    const page = createEventPager(() => removals);
    const conn = await a.connect();
    const q = { from: 0, to: Number.MAX_SAFE_INTEGER, limit: 10 };
    const first = await page(async () => conn, "site_1", q);
    // The second page reads ahead; the third would come from it.
    const second = await page(async () => conn, "site_1", { ...q, before: first.next as number });
    // An erasure applied by the feed: the rows go, the count moves.
    await a.writer.run("DELETE FROM events WHERE vid = 1");
    removals += 1;
    const third = await page(async () => conn, "site_1", { ...q, before: second.next as number });
    conn.closeSync();
    expect(third.events).toHaveLength(10);
    expect(third.events.filter((e) => e.visitorId === "v1")).toEqual([]);
    expect(third.events.every((e) => tagOf(e.url) < tagOf(second.events.at(-1)?.url ?? ""))).toBe(
      true,
    );
  });
});
