/**
 * Migration 11 on a database made before the rollups existed: it back-fills
 * them from the stored events and first touches, so SiteOverview's traffic
 * and new visitors (whole days from the rollups) are what they were (read
 * from the rows), and the group commit keeps them from there on.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { newVisitorsOfPeriod, trafficOfPeriod } from "../../../../src/domain/overview-traffic.js";
import type { NewVisitorCount } from "../../../../src/store/port.js";
import { MIGRATIONS } from "../../../../src/store/sqlite/migrations.js";
import { createSqliteStore } from "../../../../src/store/sqlite/sqlite-store.js";

const dir = mkdtempSync(join(tmpdir(), "sqlite-rollups-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DAY = 86_400_000;
const D0 = Date.UTC(2026, 2, 1);
const SITE = "site_old";

const byKey = (rows: NewVisitorCount[]) =>
  [...rows].sort((a, b) =>
    JSON.stringify([a.channel, a.source, a.campaign]) <
    JSON.stringify([b.channel, b.source, b.campaign])
      ? -1
      : 1,
  );

describe("SQLite migration 11: daily rollups", () => {
  it("back-fills the rollups of an older database: the overview's numbers stay the same", async () => {
    const file = join(dir, "old.db");
    const old = new Database(file);
    for (const m of MIGRATIONS.filter((x) => x.version < 11)) {
      old.exec(m.sql);
      old.pragma(`user_version = ${m.version}`);
    }
    const insertEvent = old.prepare(
      `INSERT INTO events (site_id, name, url, ts, received_at, visitor_id)
       VALUES (?, ?, 'https://example.com/', ?, ?, ?)`,
    );
    const insertTouch = old.prepare(
      `INSERT INTO visitor_touches (site_id, visitor_id, ts, internal, channel, source, medium, campaign, landing_page)
       VALUES (?, ?, ?, 0, ?, ?, NULL, ?, 'https://example.com/')`,
    );
    // 3 days: visitors v0..v9 with pageviews and signups, some on several days.
    for (let i = 0; i < 60; i++) {
      const ts = D0 + (i % 3) * DAY + i * 1000;
      insertEvent.run(SITE, i % 4 === 0 ? "signup" : "pageview", ts, ts, `v${i % 10}`);
    }
    insertEvent.run("site_other", "pageview", D0, D0, "v0");
    for (let v = 0; v < 10; v++) {
      insertTouch.run(
        SITE,
        `v${v}`,
        D0 + (v % 3) * DAY + v,
        v % 2 === 0 ? "Organic Search" : "Direct",
        v % 2 === 0 ? "google" : null,
        v % 4 === 0 ? "spring" : null,
      );
    }
    old.close();

    const store = createSqliteStore(file);
    try {
      const [from, to] = [D0, D0 + 3 * DAY];
      const rawTraffic = await store.trafficByDay(SITE, from, to);
      expect(rawTraffic.map((d) => d.day)).toEqual(["2026-03-01", "2026-03-02", "2026-03-03"]);
      expect(await store.trafficRollup(SITE, "2026-03-01", "2026-03-04")).toEqual(rawTraffic);
      expect(await trafficOfPeriod(store, SITE, from, to)).toEqual(rawTraffic);
      const rawNew = await store.newVisitorCounts(SITE, from, to);
      expect(rawNew.reduce((n, r) => n + r.visitors, 0)).toBe(10);
      expect(byKey(await newVisitorsOfPeriod(store, SITE, from, to))).toEqual(byKey(rawNew));

      // From here on the group commit adds to what the back-fill counted.
      await store.commitEvents([
        {
          accountId: "acct_old",
          month: "2026-03",
          ceiling: 1000,
          countable: 2,
          links: [],
          events: [
            {
              siteId: SITE,
              name: "pageview",
              url: "https://example.com/",
              ts: D0 + 5,
              receivedAt: D0 + 5,
              visitorId: "v0",
            },
            {
              siteId: SITE,
              name: "pageview",
              url: "https://example.com/",
              ts: D0 + 6,
              receivedAt: D0 + 6,
              visitorId: "v_new",
            },
          ],
        },
      ]);
      const [first] = await store.trafficRollup(SITE, "2026-03-01", "2026-03-02");
      expect(first).toEqual({
        day: "2026-03-01",
        visitors: (rawTraffic[0]?.visitors ?? 0) + 1,
        pageviews: (rawTraffic[0]?.pageviews ?? 0) + 2,
      });
      expect(await store.trafficRollup(SITE, "2026-03-01", "2026-03-04")).toEqual(
        await store.trafficByDay(SITE, from, to),
      );
    } finally {
      await store.close();
    }
  });
});
