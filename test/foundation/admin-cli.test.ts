import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { utcMonth } from "../../src/domain/plans.js";
import { runAdminCli } from "../helpers/cli.js";
import { TEST_NOW } from "../helpers/test-server.js";

let dir: string;
let env: Record<string, string>;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ingest-cli-"));
  env = { STORE_URL: `sqlite:${join(dir, "db.sqlite")}` };
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cli = (...args: string[]) => runAdminCli(args, env);

describe("admin CLI", () => {
  let accountId: string;
  let ownerUserId: string;
  let siteId: string;

  it("creates an account with its owner and prints one JSON value", async () => {
    const r = await cli(
      "account",
      "create",
      "--name",
      "Acme",
      "--plan",
      "scale",
      "--owner",
      "Owner@Acme.test",
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout.trim().split("\n")).toHaveLength(1);
    expect(r.json).toEqual({
      account_id: expect.stringMatching(/^acct_[0-9a-f]{24}$/),
      owner_user_id: expect.stringMatching(/^user_[0-9a-f]{24}$/),
    });
    ({ account_id: accountId, owner_user_id: ownerUserId } = r.json as {
      account_id: string;
      owner_user_id: string;
    });
  });

  it("creates a site with several hostnames", async () => {
    const r = await cli(
      "site",
      "create",
      "--account",
      accountId,
      "--hostname",
      "acme.test",
      "--hostname",
      "WWW.Acme.test",
    );
    expect(r.exitCode).toBe(0);
    expect(r.json).toEqual({ site_id: expect.stringMatching(/^site_[0-9a-f]{24}$/) });
    siteId = (r.json as { site_id: string }).site_id;
  });

  it("creates a key shown once, lists it without its secret, and deletes it", async () => {
    const created = await cli(
      "key",
      "create",
      "--site",
      siteId,
      "--name",
      "prod server",
      "--scopes",
      "events,payments",
      "--as",
      ownerUserId,
    );
    expect(created.exitCode).toBe(0);
    const { key, key_id } = created.json as { key: string; key_id: string };
    expect(key).toMatch(/^mk_live_[0-9a-f]{48}$/);

    const listed = await cli("key", "list", "--site", siteId);
    expect(listed.json).toEqual([
      {
        key_id,
        site_id: siteId,
        name: "prod server",
        scopes: ["events", "payments"],
        prefix: key.slice(0, 12),
        created_at: expect.any(String),
        created_by: ownerUserId,
        last_used_at: null,
      },
    ]);
    expect(listed.stdout).not.toContain(key);

    const deleted = await cli("key", "delete", "--key", key_id, "--as", ownerUserId);
    expect(deleted.exitCode).toBe(0);
    expect(deleted.json).toEqual({ key_id, deleted: true });
    expect((await cli("key", "list", "--site", siteId)).json).toEqual([]);
  });

  it("refuses key creation to a plain member, saying why", async () => {
    const member = await cli(
      "member",
      "add",
      "--account",
      accountId,
      "--email",
      "dev@acme.test",
      "--role",
      "member",
    );
    const { user_id } = member.json as { user_id: string };
    const r = await cli(
      "key",
      "create",
      "--site",
      siteId,
      "--name",
      "x",
      "--scopes",
      "events",
      "--as",
      user_id,
    );
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim()).toBe(
      `error: forbidden: only owners and admins can create API keys; user ${user_id} is a member`,
    );
  });

  it("refuses key creation on a free-plan account", async () => {
    const acc = (
      await cli(
        "account",
        "create",
        "--name",
        "Free Co",
        "--plan",
        "free",
        "--owner",
        "a@free.test",
      )
    ).json as Record<string, string>;
    const site = (
      await cli("site", "create", "--account", acc.account_id as string, "--hostname", "free.test")
    ).json as Record<string, string>;
    const r = await cli(
      "key",
      "create",
      "--site",
      site.site_id as string,
      "--name",
      "k",
      "--scopes",
      "events",
      "--as",
      acc.owner_user_id as string,
    );
    expect(r.exitCode).toBe(1);
    expect(r.stderr.trim()).toBe(
      `error: forbidden: creating API keys requires the scale plan; account ${acc.account_id} is on the free plan`,
    );
  });

  it("reports this month's usage with the plan's allowance and ceiling", async () => {
    const set = await cli("account", "set-plan", "--account", accountId, "--plan", "growth");
    expect(set.json).toEqual({ account_id: accountId, plan: "growth" });
    const r = await cli("usage", "--account", accountId);
    expect(r.json).toEqual({
      account_id: accountId,
      plan: "growth",
      month: utcMonth(TEST_NOW),
      counted: 0,
      allowance: 1_000_000,
      ceiling: 2_000_000,
    });
  });

  it("rejects a key name longer than 100 characters", async () => {
    await cli("account", "set-plan", "--account", accountId, "--plan", "scale");
    const r = await cli(
      "key",
      "create",
      "--site",
      siteId,
      "--name",
      "n".repeat(101),
      "--scopes",
      "events",
      "--as",
      ownerUserId,
    );
    expect(r.exitCode).toBe(1);
    expect(r.stderr.trim()).toBe("error: invalid_input: key name must be 1 to 100 characters");
  });

  it("prints usage on stderr and exits 2 for an unknown command", async () => {
    const r = await cli("frobnicate");
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain('error: unknown command "frobnicate"');
  });
});
