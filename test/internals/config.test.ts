/**
 * The analytics store's settings of src/config.ts: ANALYTICS_OWNER is a
 * boolean or unset (the store kind's default then applies, in services.ts),
 * ANALYTICS_PATH a path or unset; the owner's lease and the running rewrite's
 * interval within their bounds; anything else stops start-up with one line.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

describe("analytics settings", () => {
  it("leaves ANALYTICS_OWNER and ANALYTICS_PATH unset by default", () => {
    const c = loadConfig({});
    expect([c.analyticsOwner, c.analyticsPath]).toEqual([undefined, undefined]);
    expect(loadConfig({ ANALYTICS_OWNER: "" }).analyticsOwner).toBeUndefined();
  });

  it("reads ANALYTICS_OWNER as true or false and ANALYTICS_PATH as given", () => {
    expect(loadConfig({ ANALYTICS_OWNER: "true" }).analyticsOwner).toBe(true);
    expect(loadConfig({ ANALYTICS_OWNER: "false" }).analyticsOwner).toBe(false);
    expect(loadConfig({ ANALYTICS_PATH: "/var/lib/ingest/analytics.duckdb" }).analyticsPath).toBe(
      "/var/lib/ingest/analytics.duckdb",
    );
  });

  it("refuses any other ANALYTICS_OWNER with the exact message", () => {
    for (const value of ["1", "yes", "TRUE"]) {
      expect(() => loadConfig({ ANALYTICS_OWNER: value })).toThrow(
        new ConfigError(`ANALYTICS_OWNER must be true or false, got "${value}"`),
      );
    }
  });

  it("defaults the owner's lease to 15 s and the running rewrite to at most 1 h after a removal", () => {
    const config = loadConfig({});
    expect(config.analyticsLeaseMs).toBe(15_000);
    expect(config.analyticsCompactIntervalMs).toBe(3_600_000);
    expect(
      loadConfig({ ANALYTICS_COMPACT_INTERVAL_MS: "86400000" }).analyticsCompactIntervalMs,
    ).toBe(86_400_000);
  });

  it("refuses a rewrite interval past 24 hours (issue 30's bound) and a lease under 300 ms", () => {
    expect(() => loadConfig({ ANALYTICS_COMPACT_INTERVAL_MS: "86400001" })).toThrow(
      new ConfigError(
        'ANALYTICS_COMPACT_INTERVAL_MS must be an integer from 100 to 86400000, got "86400001"',
      ),
    );
    expect(() => loadConfig({ ANALYTICS_LEASE_MS: "299" })).toThrow(
      new ConfigError('ANALYTICS_LEASE_MS must be an integer from 300 to 600000, got "299"'),
    );
  });

  it("waits a fixed report's plan for a lane at most 10 s by default, 0 to 600 s", () => {
    expect(loadConfig({}).analyticsReportWaitMs).toBe(10_000);
    expect(loadConfig({ ANALYTICS_REPORT_WAIT_MS: "0" }).analyticsReportWaitMs).toBe(0);
    expect(() => loadConfig({ ANALYTICS_REPORT_WAIT_MS: "600001" })).toThrow(
      new ConfigError('ANALYTICS_REPORT_WAIT_MS must be an integer from 0 to 600000, got "600001"'),
    );
  });
});
