/**
 * The analytics file's owner lease (migration 24): one holder at a time,
 * renewed by it, taken over once it lapsed (judged with the injected clock)
 * or at once when its process on this host is gone, given up at a clean stop.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnalyticsLease } from "../../../../src/domain/store/analytics-lease-port.js";
import {
  analyticsLeaseHeld,
  openAnalyticsLease,
} from "../../../../src/store/sqlite/analytics-lease.js";
import { openSqlite } from "../../../../src/store/sqlite/open-sqlite.js";
import { analyticsLeaseContract } from "../../../helpers/analytics-lease-contract.js";
import { useTempDirs } from "../../../helpers/temp-dirs.js";

const tempDir = useTempDirs("analytics-lease-");
const opened: { close(): void }[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
});

const TTL = 15_000;

function setUp() {
  const sqlitePath = join(tempDir(), "ingest.sqlite");
  opened.push(openSqlite(sqlitePath));
  let now = 1_700_000_000_000;
  const lease = (holder?: string): AnalyticsLease => {
    const l = openAnalyticsLease({
      sqlitePath,
      ttlMs: TTL,
      now: () => now,
      busyTimeoutMs: 1_000,
      ...(holder ? { holder } : {}),
    });
    opened.push(l);
    return l;
  };
  return {
    sqlitePath,
    lease,
    advance: (ms: number) => {
      now += ms;
    },
    now: () => now,
  };
}

describe("the analytics owner's lease", () => {
  analyticsLeaseContract(setUp, TTL);

  it("is read as held by the row until it lapses (analyticsLeaseHeld, for commands that must not open the file)", async () => {
    const t = setUp();
    expect(analyticsLeaseHeld(t.sqlitePath, t.now())).toBe(false);
    const a = t.lease();
    expect(await a.acquire()).toBe(true);
    t.advance(TTL - 1);
    expect(analyticsLeaseHeld(t.sqlitePath, t.now())).toBe(true);
    t.advance(1);
    expect(analyticsLeaseHeld(t.sqlitePath, t.now())).toBe(false);
  });
});
