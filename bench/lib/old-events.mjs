/**
 * Old pageviews written straight through a store's commit path, in groups of
 * 5,000 (no HTTP): what the retention rows prune. Used by row r of `npm run
 * bench` (bench/run.mjs) and `npm run bench:retention-step`.
 */

const BATCH = 5000;

/**
 * Writes `n` pageviews of `siteId`, event `j` at `tsOf(j)` (received then),
 * from `visitors` visitor ids in turn.
 * @param {{ store: any, siteId: string, accountId: string, n: number, tsOf: (j: number) => number, visitors: number }} o
 */
export async function writeOldPageviews({ store, siteId, accountId, n, tsOf, visitors }) {
  for (let i = 0; i < n; i += BATCH) {
    const events = [];
    for (let j = i; j < Math.min(n, i + BATCH); j++) {
      const ts = tsOf(j);
      events.push({
        siteId,
        name: "pageview",
        url: `https://example.com/p${j % 50}`,
        referrer: "https://www.google.com/",
        ts,
        receivedAt: ts,
        visitorId: `v${j % visitors}`,
        browser: "Chrome",
        os: "Windows",
        device: "desktop",
        country: "DE",
      });
    }
    await store.commitEvents([
      { accountId, month: "2026-01", ceiling: 1e15, countable: 0, events, links: [], touches: [] },
    ]);
  }
}
