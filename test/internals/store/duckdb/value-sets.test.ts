/**
 * The values kept per site, column and period (value-sets.ts): read once,
 * then only the events appended since; past the cap remembered as many and
 * not read again; within the cap but past the most values kept, read afresh
 * each time; all let go once the feed removed events (an erasure, a pruning).
 */
import { describe, expect, it } from "vitest";
import { openAnalyticsStore } from "../../../../src/store/duckdb/analytics-store.js";
import { directReads, type QueryReads } from "../../../../src/store/duckdb/read-memo.js";
import { createValueSets } from "../../../../src/store/duckdb/value-sets.js";

describe("kept values", () => {
  it("grow by the events appended since, stop at the cap, and are not kept past 1,024", async () => {
    const s = await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" });
    try {
      let seq = 0;
      /** Events of site s1 at minute `at`, one per page. */
      const add = (pages: string[], at = 1) =>
        s.writer
          .run(
            `INSERT INTO events BY NAME
           SELECT ${seq} + i AS seq, 's1' AS site_id, ${at} * 60000 AS ts, i AS vid, 'pageview' AS name,
             p AS page, 'https://example.com/' AS url, 0 AS received_at, 'v' || i AS visitor_id, i AS dv, 1 AS sn
           FROM (SELECT unnest(l) AS p, generate_subscripts(l, 1) AS i
                 FROM (SELECT [${pages.map((p) => `'${p}'`).join(", ")}] AS l))`,
          )
          .then(() => {
            seq += pages.length + 1;
          });
      const sets = createValueSets();
      const conn = await s.connect();
      const ran: string[] = [];
      const q: QueryReads = {
        ...directReads(conn),
        rows: async (sql, values) => {
          ran.push(/seq > \$/.test(sql) ? "since" : "all");
          return (await conn.runAndReadAll(sql, values)).getRows();
        },
      };
      const day = { from: 0, to: 86_400_000 };
      const bound = async (column: string, cap: number, period = day) => {
        ran.length = 0;
        return { n: await sets.bound(q, "s1", 1, column, period, cap), ran: [...ran] };
      };
      await add(["/a", "/b", "/a"]);
      // Another site's page (site number 2), in the period: never counted.
      await s.writer.run(`INSERT INTO events BY NAME
        SELECT -1 AS seq, 's2' AS site_id, 60000 AS ts, 1 AS vid, 'pageview' AS name, '/other' AS page,
          'https://example.com/' AS url, 0 AS received_at, 'v1' AS visitor_id, 0 AS dv, 2 AS sn`);
      expect(await bound("page", 10)).toEqual({ n: 2, ran: ["all"] });
      await add(["/c", "/a"]);
      // Outside the period: not counted, though read since.
      await add(["/late"], 2000);
      expect(await bound("page", 10)).toEqual({ n: 3, ran: ["since"] });
      expect(await bound("page", 10)).toEqual({ n: 3, ran: ["since"] });
      // Past the cap: many, and not read again.
      await add(["/d", "/e"]);
      expect(await bound("page", 4)).toEqual({ n: 5, ran: ["since"] });
      await add(["/f"]);
      expect(await bound("page", 4)).toEqual({ n: 5, ran: [] });
      // Another period is kept apart.
      const two = { from: 0, to: 2 * 86_400_000 };
      expect(await bound("page", 100, two)).toEqual({ n: 7, ran: ["all"] });
      // 1,100 values within a cap of 5,000: read whole each time.
      const many = Array.from({ length: 1100 }, (_, i) => `/m${i}`);
      await add(many, 3000);
      const three = { from: 0, to: 3 * 86_400_000 };
      expect(await bound("page", 5000, three)).toEqual({ n: 1107, ran: ["all"] });
      expect(await bound("page", 5000, three)).toEqual({ n: 1107, ran: ["all"] });
      // A removal committed (an erasure…): every kept value goes, the period is read afresh.
      let removed = 0;
      const sweeping = createValueSets({ removals: () => removed });
      let during: (() => void) | undefined;
      const counted: QueryReads = {
        ...q,
        rows: async (sql, values) => {
          const r = await q.rows(sql, values);
          during?.();
          return r;
        },
      };
      const swept = async () => {
        ran.length = 0;
        return { n: await sweeping.bound(counted, "s1", 1, "page", day, 100), ran: [...ran] };
      };
      expect(await swept()).toEqual({ n: 6, ran: ["all"] });
      expect(await swept()).toEqual({ n: 6, ran: ["since"] });
      await s.writer.run("DELETE FROM events WHERE page = '/f'");
      removed += 1;
      sweeping.sweep();
      expect(await swept()).toEqual({ n: 5, ran: ["all"] });
      // A removal committed (and swept, as at its write's end) while the values
      // were read: what the read saw is not kept.
      during = () => {
        removed += 1;
        sweeping.sweep();
        during = undefined;
      };
      await s.writer.run("DELETE FROM events WHERE page = '/e'");
      expect(await swept()).toEqual({ n: 5, ran: ["since"] });
      expect(await swept()).toEqual({ n: 4, ran: ["all"] });
      conn.closeSync();
    } finally {
      s.close();
    }
  });
});
