/**
 * Connectors are managed like keys: AdminService CreateConnector /
 * ListConnectors / DeleteConnector over Connect and gRPC, and the admin CLI's
 * `connector create|list|delete`. The signing secret is never shown again.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { runAdminCli } from "../helpers/cli.js";
import { PROTOCOLS, rpcClient, rpcError } from "../helpers/rpc-clients.js";
import { ADMIN_TOKEN } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const SECRET = "whsec_test_0123456789abcdefSECRET";
const auth = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };

describe("AdminService connectors", () => {
  const ctx = useTestServer();

  for (const protocol of PROTOCOLS) {
    it(`creates, lists without the secret and deletes a connector over ${protocol}`, async () => {
      const client = rpcClient(AdminService, ctx.server.url, protocol);
      const created = await client.createConnector(
        {
          siteId: ctx.tenant.siteId,
          provider: "stripe",
          secret: SECRET,
          actorUserId: ctx.tenant.ownerUserId,
        },
        auth,
      );
      expect(created.connectorId).toMatch(/^conn_[0-9a-f]{24}$/);
      expect(created.urlPath).toBe(`/api/v1/connectors/${created.connectorId}`);
      expect(JSON.stringify(created)).not.toContain("SECRET");

      const listed = await client.listConnectors({ siteId: ctx.tenant.siteId }, auth);
      const mine = listed.connectors.find((c) => c.connectorId === created.connectorId);
      expect(mine).toMatchObject({
        siteId: ctx.tenant.siteId,
        provider: "stripe",
        urlPath: created.urlPath,
        createdBy: ctx.tenant.ownerUserId,
        createdAt: "2026-03-11T12:00:00.000Z",
      });
      expect(JSON.stringify(listed)).not.toContain("SECRET");

      const deleted = await client.deleteConnector(
        { connectorId: created.connectorId, actorUserId: ctx.tenant.ownerUserId },
        auth,
      );
      expect(deleted.connectorId).toBe(created.connectorId);
      expect(await ctx.server.store.getConnector(created.connectorId)).toBeUndefined();
    });
  }

  it("refuses without the admin token", async () => {
    const client = rpcClient(AdminService, ctx.server.url, "connect");
    const e = await rpcError(client.listConnectors({ siteId: ctx.tenant.siteId }));
    expect(e).toEqual({
      code: "unauthenticated",
      message: "missing or invalid admin token",
      reason: "unauthorized",
    });
  });

  it("refuses an unknown provider, a malformed secret and never quotes the secret", async () => {
    const client = rpcClient(AdminService, ctx.server.url, "connect");
    const base = { siteId: ctx.tenant.siteId, actorUserId: ctx.tenant.ownerUserId };
    expect(
      await rpcError(
        client.createConnector({ ...base, provider: "shopify", secret: SECRET }, auth),
      ),
    ).toEqual({
      code: "invalid_argument",
      message: "provider must be one of stripe, paddle, lemonsqueezy, polar",
      reason: "invalid_input",
    });
    const spaced = await rpcError(
      client.createConnector({ ...base, provider: "paddle", secret: "pdl ntfset SECRET" }, auth),
    );
    expect(spaced.message).toBe("secret must be 1 to 512 characters without whitespace");
    const notStripe = await rpcError(
      client.createConnector({ ...base, provider: "stripe", secret: "sk_live_SECRET" }, auth),
    );
    expect(notStripe.message).toBe("a Stripe signing secret starts with whsec_");
    expect(notStripe.message).not.toContain("SECRET");
  });

  it("lets only owners and admins create and delete, and creating needs the Scale plan", async () => {
    const client = rpcClient(AdminService, ctx.server.url, "connect");
    const { userId: memberId } = await ctx.server.admin.addMember({
      accountId: ctx.tenant.accountId,
      email: "member@example.com",
      role: "member",
    });
    const asMember = await rpcError(
      client.createConnector(
        {
          siteId: ctx.tenant.siteId,
          provider: "polar",
          secret: "polar_whs_x",
          actorUserId: memberId,
        },
        auth,
      ),
    );
    expect(asMember).toEqual({
      code: "permission_denied",
      message: `only owners and admins can create connectors; user ${memberId} is a member`,
      reason: "forbidden",
    });
    const { connectorId } = await client.createConnector(
      {
        siteId: ctx.tenant.siteId,
        provider: "polar",
        secret: "polar_whs_x",
        actorUserId: ctx.tenant.ownerUserId,
      },
      auth,
    );
    const deleteAsMember = await rpcError(
      client.deleteConnector({ connectorId, actorUserId: memberId }, auth),
    );
    expect(deleteAsMember.message).toBe(
      `only owners and admins can delete connectors; user ${memberId} is a member`,
    );

    await ctx.server.admin.setPlan({ accountId: ctx.tenant.accountId, plan: "growth" });
    const onGrowth = await rpcError(
      client.createConnector(
        {
          siteId: ctx.tenant.siteId,
          provider: "paddle",
          secret: "pdl_x",
          actorUserId: ctx.tenant.ownerUserId,
        },
        auth,
      ),
    );
    expect(onGrowth).toEqual({
      code: "failed_precondition",
      message: `creating connectors requires the scale plan; account ${ctx.tenant.accountId} is on the growth plan`,
      reason: "forbidden",
    });
    // Deleting works on any plan, so a downgraded account can still disconnect.
    await client.deleteConnector({ connectorId, actorUserId: ctx.tenant.ownerUserId }, auth);
    await ctx.server.admin.setPlan({ accountId: ctx.tenant.accountId, plan: "scale" });
    expect(
      await rpcError(
        client.deleteConnector({ connectorId, actorUserId: ctx.tenant.ownerUserId }, auth),
      ),
    ).toEqual({
      code: "not_found",
      message: `connector ${connectorId} not found`,
      reason: "not_found",
    });
  });
});

describe("admin CLI connector commands", () => {
  let dir: string;
  let env: Record<string, string>;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "ingest-cli-connectors-"));
    env = { STORE_URL: `sqlite:${join(dir, "db.sqlite")}` };
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const cli = (...args: string[]) => runAdminCli(args, env);

  it("creates a connector printing connector_id and url_path, lists it without the secret, deletes it", async () => {
    const account = (
      await cli("account", "create", "--name", "Shop", "--plan", "scale", "--owner", "o@shop.test")
    ).json as { account_id: string; owner_user_id: string };
    const site = (
      await cli("site", "create", "--account", account.account_id, "--hostname", "shop.test")
    ).json as { site_id: string };

    const created = await cli(
      "connector",
      "create",
      "--site",
      site.site_id,
      "--provider",
      "stripe",
      "--secret",
      SECRET,
      "--as",
      account.owner_user_id,
    );
    expect(created.exitCode).toBe(0);
    expect(created.stdout.trim().split("\n")).toHaveLength(1);
    const { connector_id } = created.json as { connector_id: string };
    expect(created.json).toEqual({
      connector_id: expect.stringMatching(/^conn_[0-9a-f]{24}$/),
      url_path: `/api/v1/connectors/${connector_id}`,
    });

    const listed = await cli("connector", "list", "--site", site.site_id);
    expect(listed.exitCode).toBe(0);
    expect(listed.json).toEqual([
      {
        connector_id,
        site_id: site.site_id,
        provider: "stripe",
        url_path: `/api/v1/connectors/${connector_id}`,
        // The CLI's clock starts at TEST_NOW and runs.
        created_at: expect.stringMatching(/^2026-03-11T12:00:/),
        created_by: account.owner_user_id,
      },
    ]);
    expect(listed.stdout).not.toContain("SECRET");

    const deleted = await cli(
      "connector",
      "delete",
      "--connector",
      connector_id,
      "--as",
      account.owner_user_id,
    );
    expect(deleted.json).toEqual({ connector_id, deleted: true });
    expect((await cli("connector", "list", "--site", site.site_id)).json).toEqual([]);
  });

  it("never echoes a signing secret in an error", async () => {
    const r = await cli(
      "connector",
      "create",
      "--site",
      "site_missing",
      "--provider",
      "stripe",
      "--secret",
      SECRET,
      "--as",
      "user_x",
    );
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toBe("error: not_found: site site_missing not found\n");
    const usage = await cli(
      "connector",
      "create",
      "--site",
      "s",
      "--provider",
      "stripe",
      "--as",
      "u",
    );
    expect(usage.exitCode).toBe(2);
    expect(usage.stderr).toContain("error: --secret is required");
  });
});
