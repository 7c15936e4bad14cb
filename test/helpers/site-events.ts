/**
 * One site's events written straight into an analytics store, as the feed
 * stores them (site `s1`, site number 1, each visitor's number its key), and
 * then the site's numbers and visits as a rebuild gives them: the fixture of
 * the tests of what the engine keeps across writes.
 */
import type { AnalyticsStore } from "../../src/store/duckdb/analytics-store.js";
import { rebuildVisits } from "../../src/store/duckdb/visits-maintenance.js";

/** An event of visitor `dv`, stored `seq`th, at `minute`; its page and URL as given. */
export interface SiteEvent {
  seq: number;
  dv: number;
  name: string;
  page: string;
  url: string;
  minute: number;
}

/** Appends one event of site `s1` to `store`'s events. */
export function addSiteEvent(store: AnalyticsStore, e: SiteEvent): Promise<unknown> {
  return store.writer.run(`INSERT INTO events BY NAME
    SELECT ${e.seq} AS seq, 's1' AS site_id, ${e.minute * 60_000} AS ts, ${e.dv} AS vid, '${e.name}' AS name,
      '${e.page}' AS page, '${e.url}' AS url, 0 AS received_at,
      'v${e.dv}' AS visitor_id, ${e.dv} AS dv, 1 AS sn`);
}

/** Numbers site `s1` and its visitors 0…`visitors`−1, then derives its visits (rebuildVisits). */
export async function settleSite(store: AnalyticsStore, visitors: number): Promise<void> {
  await store.writer.run(
    `INSERT INTO visitor_numbers SELECT 's1', i, i FROM range(${visitors}) t(i)`,
  );
  await store.writer.run("INSERT INTO site_numbers VALUES ('s1', 1)");
  await rebuildVisits(store.writer);
}
