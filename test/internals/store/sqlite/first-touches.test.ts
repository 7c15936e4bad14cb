/**
 * First touches by journal (migration 25, src/store/sqlite/first-touches.ts):
 * each visitor's first touch is the best it was offered (the domain's
 * isBetterTouch), whether its row is still in the journal or merged, on
 * every connection of the file, after a merge's slices, an erasure, a
 * rolled-back commit and a restart.
 */
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { isBetterTouch } from "../../../../src/domain/attribution/ranking.js";
import type { VisitorTouch } from "../../../../src/store/port.js";
import { firstTouchesOf } from "../../../../src/store/sqlite/first-touches.js";
import { type Db, openSqlite } from "../../../../src/store/sqlite/open-sqlite.js";
import { createSqliteStore } from "../../../../src/store/sqlite/sqlite-store.js";
import { useTempDirs } from "../../../helpers/temp-dirs.js";

const tempDir = useTempDirs("first-touches-");
const opened: { close(): void }[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
});

/** A connection to a new (or the given) file, its first touches merging every `mergeRows` rows. */
function connect(path = join(tempDir(), "ingest.sqlite"), mergeRows = 4) {
  const db = openSqlite(path);
  opened.push(db);
  const touches = firstTouchesOf(db, mergeRows);
  /** Runs `fn` as the events' commit does: an IMMEDIATE transaction that reads the journal first. */
  const inWrite = <T>(fn: () => T): T =>
    db
      .transaction(() => {
        touches.sync();
        return fn();
      })
      .immediate();
  const read = (site: string, visitor: string) => {
    touches.sync();
    return touches.get(site, visitor);
  };
  return { db, path, touches, inWrite, read };
}

const touch = (
  visitorId: string,
  ts: number,
  internal = false,
  page = `/landing/${ts}`,
): VisitorTouch => ({
  siteId: "site_a",
  visitorId,
  ts,
  internal,
  channel: internal ? "Direct" : "Organic Search",
  source: internal ? undefined : "google.com",
  landingPage: page,
});

const rows = (db: Db, table: string) =>
  (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;

describe("first touches by journal", () => {
  it("keeps each visitor's best touch, whether its row is in the journal or merged, through every slice of the merges", () => {
    const visitors = ["0a", "3f", "7c", "b2", "fe", "p_persistent"];
    const op = fc.oneof(
      fc.record({
        kind: fc.constant("offer" as const),
        v: fc.constantFrom(...visitors),
        ts: fc.integer({ min: 0, max: 6 }),
        internal: fc.boolean(),
      }),
      fc.record({ kind: fc.constant("merge" as const) }),
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 60 }), (ops) => {
        const c = connect();
        const ref = new Map<string, VisitorTouch>();
        for (const [i, o] of ops.entries()) {
          if (o.kind === "merge") {
            c.inWrite(() => c.touches.mergeStep());
            continue;
          }
          // Touches of equal rank differ by their page: the first offered stays.
          const t = touch(o.v, o.ts, o.internal, `/p${i}`);
          const better = isBetterTouch(t, ref.get(o.v));
          const written = c.inWrite(() => c.touches.offer(t));
          // Every change is reported (the customers' attribution is computed again).
          if (better) expect(written).toBe(true);
          if (better) ref.set(o.v, t);
        }
        for (const v of visitors) expect(c.read("site_a", v)).toEqual(ref.get(v));
        // A connection that starts now (a restart, another process) reads the same.
        const other = connect(c.path);
        for (const v of visitors) expect(other.read("site_a", v)).toEqual(ref.get(v));
        c.db.close();
        other.db.close();
        opened.length = 0;
      }),
      { numRuns: 40 },
    );
  });

  it("merges once the journal holds mergeRows rows since the last merge, one slice per commit, into the table", () => {
    const c = connect();
    const ids = Array.from({ length: 40 }, (_, i) => (i * 37).toString(16).padStart(4, "0"));
    c.inWrite(() => {
      for (const [i, v] of ids.entries()) c.touches.offer(touch(v, 1_000 + i));
    });
    expect(rows(c.db, "touch_journal")).toBe(40);
    // Sixteen slices (the visitor id's first hex character), each with a commit;
    // the journal's merged rows go with the last.
    for (let k = 0; k < 15; k++) c.inWrite(() => c.touches.mergeStep());
    expect(rows(c.db, "touch_journal")).toBe(40);
    c.inWrite(() => c.touches.mergeStep());
    expect(rows(c.db, "touch_journal")).toBe(0);
    expect(rows(c.db, "visitor_touches")).toBe(40);
    expect(
      c.db.prepare("SELECT merged_through, cycle_through, slice FROM touch_journal_state").get(),
    ).toEqual({ merged_through: 40, cycle_through: 0, slice: 0 });
    for (const [i, v] of ids.entries()) expect(c.read("site_a", v)?.ts).toBe(1_000 + i);
    // Fewer than mergeRows new rows: no merge starts.
    c.inWrite(() => {
      c.touches.offer(touch("new1", 5));
      c.touches.mergeStep();
    });
    expect(rows(c.db, "touch_journal")).toBe(1);
  });

  it("a second connection reads what the first appended, merged and erased", () => {
    const a = connect();
    const b = connect(a.path);
    a.inWrite(() => a.touches.offer(touch("v1", 50)));
    expect(b.read("site_a", "v1")?.ts).toBe(50);
    // b offers a better one; a sees it.
    b.inWrite(() => b.touches.offer(touch("v1", 40)));
    expect(a.read("site_a", "v1")?.ts).toBe(40);
    a.inWrite(() => {
      for (let i = 0; i < 4; i++) a.touches.offer(touch(`e${i}`, 60 + i));
    });
    for (let k = 0; k < 16; k++) a.inWrite(() => a.touches.mergeStep());
    expect(rows(a.db, "touch_journal")).toBe(0);
    expect(b.read("site_a", "v1")?.ts).toBe(40);
    expect(b.read("site_a", "e3")?.ts).toBe(63);
    // An internal touch never replaces a touch with a channel: the journal's is
    // compared with it when held, the merged table's when read.
    expect(b.inWrite(() => b.touches.offer(touch("v2", 30)))).toBe(true);
    expect(b.inWrite(() => b.touches.offer(touch("v2", 1, true)))).toBe(false);
    b.inWrite(() => b.touches.offer(touch("v1", 1, true)));
    expect(a.read("site_a", "v1")?.ts).toBe(40);
    expect(b.read("site_a", "v2")?.ts).toBe(30);
    expect(b.inWrite(() => b.touches.forget("site_a", ["v1", "v2", "never"]))).toBe(2);
    expect(a.read("site_a", "v1")).toBeUndefined();
    expect(a.read("site_a", "v2")).toBeUndefined();
    expect(a.read("site_a", "e0")?.ts).toBe(60);
  });

  it("a commit of events that rolls back leaves none of its first touches behind", async () => {
    const path = join(tempDir(), "ingest.sqlite");
    const store = createSqliteStore(path);
    opened.push({ close: () => void store.close() });
    const group = (links: unknown[]) => ({
      accountId: "acct",
      month: "2026-11",
      countable: 0,
      ceiling: 1_000,
      events: [],
      touches: [touch("rolled", 10)],
      links,
    });
    // A link without a user id breaks the transaction after the touches were offered.
    await expect(
      store.commitEvents([
        group([{ siteId: "site_a", userId: null, visitorId: "rolled", ts: 10 }]),
      ] as never),
    ).rejects.toThrow();
    expect(await store.getFirstTouches("site_a", ["rolled"])).toEqual([]);
    await store.commitEvents([group([])] as never);
    expect(await store.getFirstTouches("site_a", ["rolled"])).toEqual([touch("rolled", 10)]);
  });
});
