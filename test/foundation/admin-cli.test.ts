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

  it("creates a read-only reports key and refuses one that would also write", async () => {
    const created = await cli(
      "key",
      "create",
      "--site",
      siteId,
      "--name",
      "dashboard",
      "--scopes",
      "reports",
      "--as",
      ownerUserId,
    );
    expect(created.exitCode).toBe(0);
    const { key_id } = created.json as { key_id: string };
    const listed = (await cli("key", "list", "--site", siteId)).json as { scopes: string[] }[];
    expect(listed.map((k) => k.scopes)).toEqual([["reports"]]);
    const mixed = await cli(
      "key",
      "create",
      "--site",
      siteId,
      "--name",
      "mixed",
      "--scopes",
      "reports,events",
      "--as",
      ownerUserId,
    );
    expect(mixed.exitCode).not.toBe(0);
    expect(mixed.stderr).toContain(
      "the reports scope is read-only and cannot be combined with events or payments",
    );
    await cli("key", "delete", "--key", key_id, "--as", ownerUserId);
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

  it("points to help on stderr and exits 2 for an unknown command", async () => {
    const r = await cli("frobnicate");
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      'error: unknown command "frobnicate"\nsee: npm run --silent admin -- help\n',
    );
  });
});

describe("admin CLI help", () => {
  it.each([["--help"], ["-h"], ["help"]])(
    "%s prints the usage on stdout and exits 0",
    async (arg) => {
      const r = await cli(arg);
      expect(r.exitCode).toBe(0);
      expect(r.stderr).toBe("");
      expect(r.stdout).toMatch(/^usage: npm run --silent admin -- <command> \[options\]\n/);
      for (const command of [
        "account create",
        "key delete --key KEY_ID --as USER_ID",
        "usage",
        "demo",
      ]) {
        expect(r.stdout).toContain(`  ${command}`);
      }
    },
  );

  it.each([[["key", "delete", "--help"]], [["help", "key", "delete"]]])(
    "%j prints that command's usage and exits 0",
    async (args) => {
      const r = await cli(...args);
      expect(r.exitCode).toBe(0);
      expect(r.stderr).toBe("");
      expect(r.stdout).toBe(
        "usage: npm run --silent admin -- key delete --key KEY_ID --as USER_ID\n\n" +
          "Deletes a key by its id (key_…, from key list), never by its secret.\n",
      );
    },
  );
});

describe("admin CLI safety", () => {
  const secret = `mk_live_${"ab12".repeat(12)}`;

  it("refuses key delete given a secret key, says what to pass, and never echoes it", async () => {
    const r = await cli("key", "delete", "--key", secret, "--as", "user_x");
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr.split("\n")[0]).toBe(
      `error: --key takes the key's id (key_…), not its secret; find the id with "key list --site SITE_ID"`,
    );
    expect(r.stderr).not.toContain(secret.slice(8));
  });

  it("never echoes a secret key typed where a command was expected", async () => {
    const r = await cli("key", "delete", secret);
    expect(r.exitCode).toBe(2);
    expect(r.stderr.split("\n")[0]).toBe('error: unknown command "key delete mk_live_…"');
    expect(r.stderr).not.toContain(secret.slice(8));
  });

  it("warns on stderr before creating a new, empty database, and only then", async () => {
    const fresh = join(dir, "typo", "db.sqlite");
    const first = await runAdminCli(["usage", "--account", "acct_x"], {
      STORE_URL: `sqlite:${fresh}`,
    });
    expect(first.stderr.split("\n")[0]).toBe(
      `warning: ${fresh} does not exist; creating a new, empty database there (check STORE_URL)`,
    );
    expect(first.stderr.split("\n")[1]).toBe("error: not_found: account acct_x not found");
    const again = await runAdminCli(["usage", "--account", "acct_x"], {
      STORE_URL: `sqlite:${fresh}`,
    });
    expect(again.stderr).toBe("error: not_found: account acct_x not found\n");
  });
});
