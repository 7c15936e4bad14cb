/**
 * Keys, sites and accounts are cached in the server process
 * (src/store/directory-cache.ts); a change made by another process, here the
 * admin CLI, still applies from the very next request.
 */
import { describe, expect, it } from "vitest";
import { utcMonth } from "../../src/domain/plans.js";
import { runAdminCli } from "../helpers/cli.js";
import { pageview, presetUsage, sendEvents } from "../helpers/events.js";
import { createTenant } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer({ tenant: false });

describe("directory changes from another process", () => {
  it("a plan lowered through the CLI applies its ceiling on the next request", async () => {
    const t = await createTenant(ctx.server);
    // 11,000 used: within Scale, exactly the Free ceiling.
    await presetUsage(ctx.store, t.accountId, utcMonth(ctx.clock.now()), 11_000);
    for (let i = 0; i < 3; i += 1) {
      expect((await sendEvents(ctx.url, t, pageview(t.siteId))).status).toBe(204);
    }
    const cli = await runAdminCli(
      ["account", "set-plan", "--account", t.accountId, "--plan", "free"],
      { STORE_URL: `sqlite:${ctx.server.dir}/ingest.sqlite` },
    );
    expect(cli.exitCode).toBe(0);
    const res = await sendEvents(ctx.url, t, pageview(t.siteId));
    expect(res.status).toBe(429);
  });

  it("a key made through the CLI works on the next request; deleting it refuses the next one", async () => {
    const t = await createTenant(ctx.server);
    expect((await sendEvents(ctx.url, t, pageview(t.siteId))).status).toBe(204);
    const env = { STORE_URL: `sqlite:${ctx.server.dir}/ingest.sqlite` };
    const made = await runAdminCli(
      [
        "key",
        "create",
        "--site",
        t.siteId,
        "--name",
        "cli",
        "--scopes",
        "events",
        "--as",
        t.ownerUserId,
      ],
      env,
    );
    expect(made.exitCode).toBe(0);
    const { key, key_id: keyId } = made.json as { key: string; key_id: string };
    expect((await sendEvents(ctx.url, { key }, pageview(t.siteId))).status).toBe(204);
    const gone = await runAdminCli(["key", "delete", "--key", keyId, "--as", t.ownerUserId], env);
    expect(gone.exitCode).toBe(0);
    const res = await sendEvents(ctx.url, { key }, pageview(t.siteId));
    expect(res.status).toBe(401);
    // The tenant's own key, cached all along, is unaffected.
    expect((await sendEvents(ctx.url, t, pageview(t.siteId))).status).toBe(204);
  });
});
