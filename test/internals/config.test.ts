/**
 * The analytics store's settings of src/config.ts: ANALYTICS_OWNER is a
 * boolean or unset (the store kind's default then applies, in services.ts),
 * ANALYTICS_PATH a path or unset; anything else stops start-up with one line.
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
});
