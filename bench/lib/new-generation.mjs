/**
 * A new write generation before a timed call, so that nothing an earlier
 * call computed serves it (the engine's queries of one generation share what
 * they compute: src/store/duckdb/read-memo.ts): each call is timed alone, as
 * after a write on a live site.
 */

/**
 * In process: a call on the store's writer moves the generation
 * (write-generation.ts). With `live` ({ siteId, at }) the call says what the
 * feed's batch of one new visitor's pageview at `at` says it changed (that
 * site's events and visits from `at` on: analytics-feed.ts): the answers over
 * earlier times are kept, as on a live site (read-memo.ts). Without it the
 * write may change anything: every piece is computed again.
 */
export async function newGeneration(analytics, live) {
  if (!live) {
    await analytics.writer.run("SELECT 1");
    return;
  }
  const scope = { sites: new Map([[live.siteId, live.at]]) };
  await analytics.scopedWrite(scope, () => analytics.writer.run("SELECT 1"));
}

/**
 * Over HTTP: one pageview of `siteId` (hostname example.com) through the
 * browser's endpoint, then (unless `settle` is false) a Query of the last
 * minute, which waits for the feed to apply it (read-your-writes). `token`:
 * the server's ADMIN_TOKEN.
 */
export async function writePageview(base, token, siteId, { settle = true } = {}) {
  const res = await fetch(`${base}/api/v1/collect`, {
    method: "POST",
    headers: {
      "content-type": "text/plain;charset=UTF-8",
      "user-agent":
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
      origin: "https://example.com",
    },
    body: JSON.stringify({ s: siteId, e: "pageview", u: "https://example.com/bench-write" }),
  });
  if (res.status >= 300) throw new Error(`collect answered ${res.status}: ${await res.text()}`);
  if (!settle) return;
  const now = Date.now();
  const query = await fetch(`${base}/ingest.v1.ReportsService/Query`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({
      siteId,
      metrics: ["visitors"],
      period: {
        from: new Date(now - 60_000).toISOString(),
        to: new Date(now + 1000).toISOString(),
      },
    }),
  });
  await query.arrayBuffer();
  if (query.status !== 200) throw new Error(`the settling Query answered ${query.status}`);
}
