/**
 * The read memo (src/store/duckdb/read-memo.ts) over a real in-memory store:
 * a statement runs once per write generation, a write (or a write still
 * running) makes the next read compute again, a shared table is read by every
 * connection and dropped once its generation passed and no query holds it,
 * a passed generation's tables are dropped as soon as a write passes it,
 * and a read that waited on a cancelled computation computes its own.
 */
import type { DuckDBConnection } from "@duckdb/node-api";
import { afterEach, describe, expect, it } from "vitest";
import { recordingStore } from "../../../../bench/lib/recording-store.mjs";
import type { QueryPlan } from "../../../../src/domain/analytics/query-plan.js";
import { createDuckDbAnalytics } from "../../../../src/store/duckdb/analytics-engine.js";
import {
  type AnalyticsStore,
  openAnalyticsStore,
} from "../../../../src/store/duckdb/analytics-store.js";
import { createReadMemo } from "../../../../src/store/duckdb/read-memo.js";

const stores: AnalyticsStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

async function store() {
  const s = await openAnalyticsStore({ path: ":memory:", threads: 1, memoryLimit: "256MB" });
  stores.push(s);
  await s.writer.run("CREATE TABLE t (x INTEGER)");
  await s.writer.run("INSERT INTO t VALUES (1), (2)");
  return s;
}

/** `conn` counting the statements it runs. */
function counted(conn: DuckDBConnection) {
  const ran: string[] = [];
  const c = new Proxy(conn, {
    get(target, prop) {
      const f = Reflect.get(target, prop, target);
      if (prop === "runAndReadAll" || prop === "run") {
        return (sql: string, values?: unknown) => {
          ran.push(sql);
          return f.call(target, sql, values);
        };
      }
      return typeof f === "function" ? f.bind(target) : f;
    },
  });
  return { conn: c, ran };
}

const SUM = "SELECT sum(x)::INTEGER FROM t";

/** The tables of the memo's database. */
async function memoTables(conn: DuckDBConnection): Promise<string[]> {
  const r = await conn.runAndReadAll(
    "SELECT table_name FROM duckdb_tables() WHERE database_name = 'read_memo' ORDER BY table_name",
  );
  return r.getRows().map((row) => String(row[0]));
}

describe("the read memo", () => {
  it("runs a statement once per write generation, on any connection, and again after a write", async () => {
    const s = await store();
    const memo = createReadMemo(s);
    const a = counted(await s.connect());
    const b = counted(await s.connect());
    expect(await memo.reads(a.conn).rows(SUM)).toEqual([[3]]);
    expect(await memo.reads(b.conn).rows(SUM)).toEqual([[3]]);
    expect(a.ran).toEqual([SUM]);
    expect(b.ran).toEqual([]);
    await s.writer.run("INSERT INTO t VALUES (4)");
    expect(await memo.reads(b.conn).rows(SUM)).toEqual([[7]]);
    expect(b.ran).toEqual([SUM]);
    // The same text with other parameters is another statement.
    expect(
      await memo.reads(a.conn).rows("SELECT count(*)::INTEGER FROM t WHERE x > $1", [1]),
    ).toEqual([[2]]);
    expect(
      await memo.reads(b.conn).rows("SELECT count(*)::INTEGER FROM t WHERE x > $1", [3]),
    ).toEqual([[1]]);
  });

  it("keeps at most maxTotalRows rows in all, the least recently used answer out first", async () => {
    const s = await store();
    const memo = createReadMemo(s, { maxTotalRows: 3 });
    const a = counted(await s.connect());
    const two = "SELECT x FROM t ORDER BY x";
    const one = "SELECT max(x) FROM t";
    const other = "SELECT min(x) FROM t";
    await memo.reads(a.conn).rows(two);
    await memo.reads(a.conn).rows(one);
    // 3 rows kept; a fourth pushes out the least recently used (the two rows).
    await memo.reads(a.conn).rows(other);
    await memo.reads(a.conn).rows(one);
    await memo.reads(a.conn).rows(other);
    expect(a.ran).toEqual([two, one, other]);
    expect(await memo.reads(a.conn).rows(two)).toEqual([[1], [2]]);
    expect(a.ran).toEqual([two, one, other, two]);
  });

  it("keeps nothing read while a write runs, and nothing past a write that ran meanwhile", async () => {
    const source = { generation: 1, writing: true };
    const s = await store();
    const memo = createReadMemo(source);
    const a = counted(await s.connect());
    await memo.reads(a.conn).rows(SUM);
    await memo.reads(a.conn).rows(SUM);
    expect(a.ran).toEqual([SUM, SUM]);
    source.writing = false;
    // A write starts and ends while the statement runs: its answer may be of either generation.
    const first = memo.reads(a.conn).rows(SUM);
    source.generation = 3;
    await first;
    await memo.reads(a.conn).rows(SUM);
    expect(a.ran).toEqual([SUM, SUM, SUM, SUM]);
    await memo.reads(a.conn).rows(SUM);
    expect(a.ran).toHaveLength(4);
  });

  it("keeps an answer that says what it reads past the writes that changed none of it, and only those", async () => {
    const s = await store();
    const memo = createReadMemo(s);
    const a = counted(await s.connect());
    const COUNT = "SELECT count(*)::INTEGER FROM t";
    const ask = async () => [
      await memo.reads(a.conn).rows(SUM, [], { siteId: "s1", before: 1_000 }),
      await memo.reads(a.conn).rows(COUNT),
    ];
    expect(await ask()).toEqual([[[3]], [[2]]]);
    expect(a.ran).toEqual([SUM, COUNT]);
    /** A write on the store's writer that says it changed `sites` (site → earliest time). */
    const write = (sites: [string, number][]) => {
      const scope = { sites: new Map<string, number>() };
      return s.scopedWrite(scope, async () => {
        await s.writer.run("INSERT INTO t VALUES (0)");
        for (const [site, at] of sites) scope.sites.set(site, at);
      });
    };
    // Later times of the site, another site: the scoped answer stays, the other is asked again.
    await write([
      ["s1", 1_000],
      ["s2", 0],
    ]);
    expect(await ask()).toEqual([[[3]], [[3]]]);
    expect(a.ran).toEqual([SUM, COUNT, COUNT]);
    // A time the answer reads: asked again.
    await write([["s1", 999]]);
    expect(await ask()).toEqual([[[3]], [[4]]]);
    expect(a.ran).toEqual([SUM, COUNT, COUNT, SUM, COUNT]);
    // A write that says nothing: asked again.
    await s.writer.run("INSERT INTO t VALUES (10)");
    expect(await ask()).toEqual([[[13]], [[5]]]);
    expect(a.ran).toEqual([SUM, COUNT, COUNT, SUM, COUNT, SUM, COUNT]);
  });

  it("shares a table between connections, and drops it once its generation passed and no query holds it", async () => {
    const s = await store();
    const memo = createReadMemo(s);
    const a = await s.connect();
    const b = await s.connect();
    const name = await memo.reads(a).table("SELECT x * 10 AS y FROM t");
    expect(await memo.reads(b).table("SELECT x * 10 AS y FROM t")).toBe(name);
    expect((await b.runAndReadAll(`SELECT sum(y)::INTEGER FROM ${name}`)).getRows()).toEqual([
      [30],
    ]);
    await memo.release(a);
    await s.writer.run("INSERT INTO t VALUES (4)");
    // b still reads it: it stays until b's query ends.
    const after = await memo.reads(a).table("SELECT x * 10 AS y FROM t");
    expect(after).not.toBe(name);
    expect((await a.runAndReadAll(`SELECT sum(y)::INTEGER FROM ${after}`)).getRows()).toEqual([
      [70],
    ]);
    expect(await memoTables(a)).toHaveLength(2);
    await memo.release(b);
    expect(await memoTables(a)).toEqual([after.split(".")[1]]);
    await memo.release(a);
  });

  it("keeps tables up to maxTableRows rows in all, and a larger one for its own query alone", async () => {
    const s = await store();
    const memo = createReadMemo(s, { maxTableRows: 3 });
    const a = await s.connect();
    const b = await s.connect();
    const first = await memo.reads(a).table("SELECT x FROM t");
    const second = await memo.reads(a).table("SELECT x + 1 AS y FROM t");
    // 4 rows kept would pass 3: the least recently used (the first) goes once released.
    expect(await memo.reads(b).table("SELECT x + 1 AS y FROM t")).toBe(second);
    expect(await memo.reads(b).table("SELECT x FROM t")).not.toBe(first);
    const big = "SELECT x FROM t, range(3)";
    const own = await memo.reads(a).table(big);
    expect(await memo.reads(b).table(big)).not.toBe(own);
    await memo.release(a);
    await memo.release(b);
    expect(await memoTables(a)).toHaveLength(1);
  });

  it("drops a passed generation's tables when a write passes it, without waiting for another read", async () => {
    const s = await store();
    const memo = createReadMemo(s);
    const a = await s.connect();
    const name = await memo.reads(a).table("SELECT x FROM t");
    await memo.release(a);
    expect(await memoTables(a)).toEqual([name.split(".")[1]]);
    // An erasure, say: what the memo held of the rows before it goes now.
    await s.writer.run("DELETE FROM t WHERE x = 1");
    await memo.idle();
    expect(await memoTables(a)).toEqual([]);
  });

  it("lets a query that waited on another's cancelled computation compute its own, unless it ended meanwhile", async () => {
    const s = await store();
    const memo = createReadMemo(s);
    // The first query's connection: its statement runs until the test cancels it.
    let cancel: (err: Error) => void = () => {};
    const a = {
      runAndReadAll: () =>
        new Promise((_resolve, reject) => {
          cancel = reject;
        }),
    } as unknown as DuckDBConnection;
    const b = counted(await s.connect());
    const c = counted(await s.connect());
    const owner = memo.reads(a).rows(SUM);
    const waiter = memo.reads(b.conn).rows(SUM);
    // Past its own time limit by the time the owner fails.
    const ended = memo
      .reads(c.conn, () => false)
      .rows(SUM)
      .catch((err: unknown) => err);
    cancel(new Error("INTERRUPT Error: Interrupted!"));
    await expect(owner).rejects.toThrow("INTERRUPT Error: Interrupted!");
    expect(await waiter).toEqual([[3]]);
    expect(b.ran).toEqual([SUM]);
    expect(await ended).toEqual(new Error("INTERRUPT Error: the query ended while it waited"));
    expect(c.ran).toEqual([]);
  });

  it("gives the country, device, browser and OS breakdowns of revenue one share table, the exit page its own, and makes none under first touch", async () => {
    const s = await store();
    const ran: string[] = [];
    // The engine over the real store, each statement it sends recorded.
    const recording = recordingStore(s, (st) => ran.push(st.sql));
    const engine = createDuckDbAnalytics({ analytics: recording, timeoutMs: 60_000, perSite: 4 });
    const plan = (dimension: QueryPlan["dimensions"][number]): QueryPlan => ({
      siteId: "s1",
      timeZone: "UTC",
      metrics: ["net_revenue"],
      dimensions: [dimension],
      filters: [],
      period: { from: 0, to: 86_400_000 },
      model: "linear",
      currency: "USD",
      orderBy: [{ field: "net_revenue", desc: true }],
      limit: 10,
      offset: 0,
    });
    const made = () => ran.filter((sql) => sql.startsWith("CREATE TABLE read_memo.")).length;
    for (const d of ["country", "device", "browser", "os"] as const) await engine.query(plan(d));
    expect(made()).toBe(1);
    await engine.query(plan("exit_page"));
    expect(made()).toBe(2);
    // Under first touch without the touches, the payments are read whole by
    // each query (a table of them cost more than the reads): every currency,
    // one currency, and the credited visit's country make no table.
    const before = ran.length;
    await engine.query({ ...plan("currency"), model: "first_touch", currency: undefined });
    await engine.query({ ...plan("channel"), model: "first_touch" });
    await engine.query({ ...plan("channel"), model: "first_touch", currency: "EUR" });
    await engine.query({ ...plan("country"), model: "first_touch" });
    expect(made()).toBe(2);
    expect(ran.slice(before).filter((sql) => sql.includes("FROM payments")).length).toBe(4);
  });
});
