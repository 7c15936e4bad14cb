/**
 * Lean rows: every index on the tables that events and payments write is
 * used by a statement of the SQLite adapter (each index costs a B-tree write
 * per row written). The statements are the adapter's own, recorded as it
 * prepares them, and each is asked for its query plan.
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

/** The tables an events or payments request writes to. */
const WRITTEN = [
  "events",
  "identities",
  "visitor_touches",
  "customer_visitors",
  "quota_usage",
  "payments",
  "customers",
  "subscriptions",
  "visitor_stitches",
];

const dir = mkdtempSync(join(tmpdir(), "sqlite-indexes-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Indexes declared by migrations (not the automatic ones of primary keys and UNIQUE). */
function declaredIndexes(db: Database.Database): string[] {
  const placeholders = WRITTEN.map(() => "?").join(",");
  return (
    db
      .prepare(
        `SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN (${placeholders}) ORDER BY name`,
      )
      .pluck()
      .all(...WRITTEN) as string[]
  ).sort();
}

/** Every SQL text the adapter prepares while it opens and serves the calls in `use`. */
async function preparedStatements(
  file: string,
  use: (store: ReturnType<typeof createSqliteStore>) => Promise<void>,
): Promise<string[]> {
  const seen = new Set<string>();
  const original = Database.prototype.prepare;
  Database.prototype.prepare = function (this: Database.Database, sql: string) {
    seen.add(sql);
    return original.call(this, sql);
  } as typeof original;
  try {
    const store = createSqliteStore(file);
    try {
      await use(store);
    } finally {
      await store.close();
    }
  } finally {
    Database.prototype.prepare = original;
  }
  return [...seen];
}

/** The indexes a statement's plan searches, with every parameter bound to NULL. */
function indexesUsed(db: Database.Database, sql: string): string[] {
  if (!/^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i.test(sql)) return [];
  const named = [...new Set([...sql.matchAll(/[@:$](\w+)/g)].map((m) => m[1] as string))];
  const positional = (sql.match(/\?/g) ?? []).length;
  const stmt = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
  const args: unknown[] = named.length > 0 ? [Object.fromEntries(named.map((n) => [n, null]))] : [];
  for (let i = 0; i < positional; i += 1) args.push(null);
  const plan = stmt.all(...args) as { detail: string }[];
  return plan.flatMap((r) =>
    [...r.detail.matchAll(/USING (?:COVERING )?INDEX (\w+)/g)].map((m) => m[1] as string),
  );
}

describe("SQLite indexes on the written tables", () => {
  it("each one is used by a statement of the adapter, and only those exist", async () => {
    const file = join(dir, "fresh.sqlite");
    const statements = await preparedStatements(file, async (store) => {
      // Statements prepared per call (lists of ids of varying length).
      await store.findCustomersToReattribute("site", { userIds: ["u"], visitorIds: ["v"] });
      await store.getFirstTouches("site", ["v"]);
      await store.findStitches("site", ["v", "p:vid_0123456789abcdef"]);
    });
    const db = new Database(file, { readonly: true });
    try {
      const used = new Map<string, string>();
      for (const sql of statements) {
        for (const index of indexesUsed(db, sql)) used.set(index, sql.replace(/\s+/g, " "));
      }
      const declared = declaredIndexes(db);
      expect(declared.filter((i) => !used.has(i))).toEqual([]);
      // What is kept, and which statement needs it (docs/performance.md, "Lean rows").
      expect(declared).toEqual([
        "customer_visitors_visitor", // customers to re-attribute after new first touches
        "customers_user", // customers of a user id (identify links, payments)
        "events_site", // ReportsService.ListEvents: a site's newest events
        "payments_customer", // a customer's payments when its attribution changes
        "payments_paid_at", // ReportsService revenue by channel over a period
        "payments_paying", // revenue by channel: distinct paying customers of a period
        "visitor_stitches_persistent", // a persistent visitor's daily ids (attribution)
        "visitor_touches_ts", // ReportsService.SiteOverview: new visitors of a period
      ]);
    } finally {
      db.close();
    }
  });

  it("migration 6 drops the unused ones from a database made by earlier versions", async () => {
    const file = join(dir, "v5.sqlite");
    const old = new Database(file);
    for (const m of MIGRATIONS.filter((x) => x.version <= 5)) {
      old.exec(m.sql);
      old.pragma(`user_version = ${m.version}`);
    }
    const before = declaredIndexes(old);
    old.close();
    expect(before).toEqual(
      expect.arrayContaining([
        "identities_visitor",
        "payments_channel",
        "subscriptions_customer",
        "subscriptions_status",
      ]),
    );
    const store = createSqliteStore(file);
    await store.close();
    const db = new Database(file, { readonly: true });
    try {
      expect(db.pragma("user_version", { simple: true })).toBe(MIGRATIONS.at(-1)?.version);
      expect(declaredIndexes(db)).toEqual([
        "customer_visitors_visitor",
        "customers_user",
        "events_site",
        "payments_customer",
        "payments_paid_at",
        "payments_paying",
        "visitor_stitches_persistent",
        "visitor_touches_ts",
      ]);
    } finally {
      db.close();
    }
  });
});

/*
 * Migration 11 on a database made before the rollups existed: it back-fills
 * them from the stored events and first touches, so SiteOverview's traffic
 * and new visitors (whole days from the rollups) are what they were (read
 * from the rows), and the group commit keeps them from there on.
 */
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

describe("SQLite migration 20: no daily rollups", () => {
  it("drops the rollups of an older database (tables and triggers); the overview's numbers stay the same", async () => {
    const file = join(dir, "rollups-old.db");
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
    // Then migrations 11 to 19: the back-fills fill the rollups, as an upgraded store had them.
    for (const m of MIGRATIONS.filter((x) => x.version >= 11 && x.version < 20)) {
      old.exec(m.sql);
      old.pragma(`user_version = ${m.version}`);
    }
    const before = {
      traffic: old
        .prepare("SELECT day, visitors, pageviews FROM traffic_days WHERE site_id = ? ORDER BY day")
        .all(SITE),
      newVisitors: old
        .prepare("SELECT sum(visitors) AS n FROM new_visitor_days WHERE site_id = ?")
        .get(SITE),
    };
    expect(before.traffic).toHaveLength(3);
    expect(before.newVisitors).toEqual({ n: 10 });
    old.close();

    const store = createSqliteStore(file);
    try {
      const db = new Database(file, { readonly: true });
      const names = (type: string) =>
        (
          db.prepare("SELECT name FROM sqlite_master WHERE type = ? ORDER BY name").all(type) as {
            name: string;
          }[]
        ).map((r) => r.name);
      const gone = [
        "traffic_days",
        "visitor_days",
        "new_visitor_days",
        "revenue_days",
        "revenue_dims",
      ];
      expect(names("table").filter((t) => gone.includes(t))).toEqual([]);
      expect(
        names("trigger").filter((t) => !t.startsWith("analytics_feed_") && !t.endsWith("_bump")),
      ).toEqual([]);
      expect(db.pragma("user_version", { simple: true })).toBe(MIGRATIONS.at(-1)?.version);
      db.close();
      // The same numbers, now read from the rows.
      const [from, to] = [D0, D0 + 3 * DAY];
      expect(await store.trafficRollup(SITE, "2026-03-01", "2026-03-04")).toEqual(before.traffic);
      expect(await trafficOfPeriod(store, SITE, from, to)).toEqual(before.traffic);
      const rawNew = await store.newVisitorCounts(SITE, from, to);
      expect(rawNew.reduce((n, r) => n + r.visitors, 0)).toBe(10);
      expect(byKey(await newVisitorsOfPeriod(store, SITE, from, to))).toEqual(byKey(rawNew));
    } finally {
      await store.close();
    }
  });
});
