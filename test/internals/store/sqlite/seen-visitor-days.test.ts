/**
 * The memory of visitors already in visitor_days (seen-visitor-days.ts):
 * bounded, forgets everything when full, and the traffic rollup stays exact
 * whatever it forgets or when a commit rolls back.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteEvents } from "../../../../src/store/sqlite/events.js";
import { openSqlite } from "../../../../src/store/sqlite/open-sqlite.js";
import { createSeenVisitorDays } from "../../../../src/store/sqlite/seen-visitor-days.js";
import { event, group, T0 } from "../../../helpers/store-contract.js";

const dir = mkdtempSync(join(tmpdir(), "seen-visitor-days-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("seen visitor days", () => {
  it("remembers visitors per site and day, at most `max`, forgetting all at once when full", () => {
    const seen = createSeenVisitorDays(3);
    seen.remember("s1", "2025-06-01", ["v1", "v2"]);
    expect([...seen.of("s1", "2025-06-01")]).toEqual(["v1", "v2"]);
    expect(seen.of("s1", "2025-06-02").size).toBe(0);
    expect(seen.of("s2", "2025-06-01").size).toBe(0);
    seen.remember("s1", "2025-06-02", ["v3"]);
    expect(seen.of("s1", "2025-06-01").size).toBe(2);
    expect([...seen.of("s1", "2025-06-02")]).toEqual(["v3"]);
    // Full: the next visitors start a new memory.
    seen.remember("s1", "2025-06-02", ["v4"]);
    expect(seen.of("s1", "2025-06-01").size).toBe(0);
    expect([...seen.of("s1", "2025-06-02")]).toEqual(["v4"]);
    seen.clear();
    expect(seen.of("s1", "2025-06-02").size).toBe(0);
  });

  it("the daily visitors stay exact with a memory far smaller than the traffic, and after a rolled-back commit", async () => {
    const db = openSqlite(join(dir, "small.sqlite"));
    try {
      db.prepare(
        "INSERT INTO accounts (id, name, plan, created_at) VALUES ('a', 'A', 'scale', 0)",
      ).run();
      db.prepare(
        "INSERT INTO sites (id, account_id, hostnames, created_at) VALUES ('s', 'a', '[]', 0)",
      ).run();
      const events = createSqliteEvents(db, createSeenVisitorDays(2));
      const pv = (visitorId: string, ts = T0 + 1) =>
        event("s", "pageview", { visitorId, ts, receivedAt: ts });
      const traffic = () =>
        db.prepare("SELECT day, visitors, pageviews FROM traffic_days ORDER BY day").all();
      // Seven commits over five visitors with a memory of two: every order of seen and forgotten.
      for (const ids of [
        ["v1", "v2"],
        ["v1"],
        ["v3", "v4", "v5"],
        ["v1", "v2"],
        ["v5"],
        ["v4", "v1"],
        ["v2"],
      ]) {
        await events.commitEvents([
          group(
            "a",
            ids.map((v) => pv(v)),
            { ceiling: 1000 },
          ),
        ]);
      }
      expect(traffic()).toEqual([{ day: "2025-06-01", visitors: 5, pageviews: 12 }]);

      // A commit that fails after the visitor set took v6 rolls back; v6 is not remembered.
      db.exec(
        "CREATE TEMP TRIGGER fail_traffic BEFORE INSERT ON traffic_days BEGIN SELECT RAISE(ABORT, 'disk gone'); END",
      );
      await expect(
        events.commitEvents([group("a", [pv("v6", T0 + 86_400_000)], { ceiling: 1000 })]),
      ).rejects.toThrow("disk gone");
      db.exec("DROP TRIGGER fail_traffic");
      await events.commitEvents([group("a", [pv("v6", T0 + 86_400_000)], { ceiling: 1000 })]);
      expect(traffic()).toEqual([
        { day: "2025-06-01", visitors: 5, pageviews: 12 },
        { day: "2025-06-02", visitors: 1, pageviews: 1 },
      ]);
    } finally {
      db.close();
    }
  });
});
