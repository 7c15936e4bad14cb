/**
 * The first run over HTTP: a server whose store has no account issues a
 * one-time setup URL (src/domain/first-run.ts); POST /dashboard/setup spends
 * its token to create the owner's account, the first site and a reports key.
 * Wrong, expired (the injected clock) and used tokens get their exact
 * refusals; only the token's SHA-256 is stored. The printed line and the page
 * in Chromium are test/dashboard/setup-browser.test.ts.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { DASHBOARD_CSP } from "../../src/http/dashboard/dashboard-door.js";
import { createTestClock, postJson, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const HOUR = 3_600_000;
const INVALID =
  "this setup link is not valid: open the setup URL the server printed at its last start";
const EXPIRED = "this setup link has expired: restart the server to print a new one";
const USED = "this setup link has already been used: sign in with the reports key it created";
const DONE = "this service is already set up: sign in with a reports key or the admin token";

const refusal = (code: string, message: string) => ({ ok: false, error: { code, message } });
const tokenOf = (url: string | undefined) =>
  new URL(url ?? "http://x/").searchParams.get("token") ?? "";

describe("first run: the setup URL and the setup call", () => {
  const clock = createTestClock();
  const ctx = useTestServer({ clock, tenant: false });
  let token = "";
  const form = () => ({
    token,
    owner_email: "Owner@Shop.example",
    account_name: "My shop",
    hostnames: ["shop.example", "www.shop.example"],
    time_zone: "Europe/Paris",
  });

  it("issues a URL with 32 random bytes while there is no account; only their SHA-256 is stored", async () => {
    const url = await ctx.server.app.setupUrl(ctx.server.port);
    expect(url).toMatch(
      new RegExp(
        `^http://127\\.0\\.0\\.1:${ctx.server.port}/dashboard/setup\\?token=[A-Za-z0-9_-]{43}$`,
      ),
    );
    token = tokenOf(url);
    expect(Buffer.from(token, "base64url")).toHaveLength(32);
    const stored = await ctx.store.getSetupToken();
    expect(stored).toEqual({
      hash: createHash("sha256").update(token).digest("hex"),
      createdAt: TEST_NOW,
      expiresAt: TEST_NOW + HOUR,
    });
    expect(readFileSync(join(ctx.server.dir, "ingest.sqlite")).includes(token)).toBe(false);
  });

  it("serves the setup page under the dashboard's CSP, never cached", async () => {
    const res = await fetch(`${ctx.url}/dashboard/setup?token=${token}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toBe(DASHBOARD_CSP);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const html = await res.text();
    expect(html).toContain('<script type="module" src="/dashboard/setup.js"></script>');
    const js = await fetch(`${ctx.url}/dashboard/setup.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
  });

  it("checks a token: 204 for the issued one, 401 for any other", async () => {
    const ok = await postJson(`${ctx.url}/dashboard/setup/check`, { token });
    expect(ok.status).toBe(204);
    // The last character changed to another one (never to itself, whatever the token ends with).
    const altered = `${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`;
    for (const other of ["", "x", altered]) {
      const r = await postJson(`${ctx.url}/dashboard/setup/check`, { token: other });
      expect(r.status).toBe(401);
      expect(r.body).toEqual(refusal("unauthorized", INVALID));
    }
  });

  it("refuses a malformed body with 400 and the field it is about", async () => {
    const cases: [unknown, string][] = [
      ["[1]", "the body must be a JSON object"],
      [{ ...form(), admin: true }, "unknown field admin"],
      [{ ...form(), hostnames: "shop.example" }, "hostnames must be a list of strings"],
      [{ ...form(), owner_email: 7 }, "owner_email must be a string"],
      [{ token, hostnames: ["a.example"] }, "owner_email is required"],
      ["{", "invalid JSON: syntax error at position 1"],
    ];
    for (const [body, message] of cases) {
      const r = await postJson(`${ctx.url}/dashboard/setup`, body);
      expect([r.status, (r.body as { error: { message: string } }).error.message]).toEqual([
        400,
        message,
      ]);
    }
  });

  it("refuses bad input before it spends the token", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ owner_email: "not an email" }, "email must be an email address"],
      [{ hostnames: [] }, "at least one hostname is required"],
      [{ hostnames: ["bad host!"] }, 'hostname "bad host!" is not a valid host name'],
      [{ time_zone: "Mars/Olympus" }, "time zone Mars/Olympus is not a known IANA time zone"],
    ];
    for (const [over, message] of cases) {
      const r = await postJson(`${ctx.url}/dashboard/setup`, { ...form(), ...over });
      expect([r.status, r.body]).toEqual([400, refusal("invalid_input", message)]);
    }
    expect((await ctx.store.getSetupToken())?.usedAt).toBeUndefined();
    expect(await ctx.store.hasAccount()).toBe(false);
  });

  it("creates the owner's account, the site and a reports key of that site", async () => {
    const r = await postJson(`${ctx.url}/dashboard/setup`, form());
    expect(r.status).toBe(200);
    expect(r.headers.get("cache-control")).toBe("no-store");
    const data = (r.body as { data: Record<string, string> }).data;
    expect(data).toEqual({
      account_id: expect.stringMatching(/^acct_[0-9a-f]{24}$/),
      owner_user_id: expect.stringMatching(/^user_[0-9a-f]{24}$/),
      site_id: expect.stringMatching(/^site_[0-9a-f]{24}$/),
      time_zone: "Europe/Paris",
      reports_key_id: expect.stringMatching(/^key_[0-9a-f]{24}$/),
      reports_key: expect.stringMatching(/^mk_live_[0-9a-f]{48}$/),
    });
    const account = await ctx.store.getAccount(data.account_id as string);
    expect(account).toMatchObject({ name: "My shop", plan: "scale" });
    expect(await ctx.store.getRole(data.account_id as string, data.owner_user_id as string)).toBe(
      "owner",
    );
    const site = await ctx.store.getSite(data.site_id as string);
    expect(site).toMatchObject({
      accountId: data.account_id,
      hostnames: ["shop.example", "www.shop.example"],
      timeZone: "Europe/Paris",
    });
    const keys = await ctx.store.listKeys(data.site_id as string);
    expect(keys.map((k) => [k.id, k.name, k.scopes, k.createdBy])).toEqual([
      [data.reports_key_id, "dashboard", ["reports"], data.owner_user_id],
    ]);
    // The key reads its site: what the dashboard asks first when signed in with it.
    const access = await ctx
      .client(ReportsService)
      .getAccess({}, { headers: { authorization: `Bearer ${data.reports_key}` } });
    expect(access.siteId).toBe(data.site_id);
    expect((await ctx.store.getSetupToken())?.usedAt).toBe(TEST_NOW);
  });

  it("refuses the token once used, and issues no other URL once an account exists", async () => {
    for (const path of ["/dashboard/setup", "/dashboard/setup/check"]) {
      const r = await postJson(`${ctx.url}${path}`, form());
      expect([r.status, r.body]).toEqual([401, refusal("unauthorized", USED)]);
    }
    await expect(ctx.server.app.setupUrl(ctx.server.port)).resolves.toBeUndefined();
  });

  it("answers other verbs with 405", async () => {
    const r = await fetch(`${ctx.url}/dashboard/setup`, { method: "PUT" });
    expect(r.status).toBe(405);
    expect(r.headers.get("allow")).toBe("GET, HEAD, POST");
    const c = await fetch(`${ctx.url}/dashboard/setup/check`);
    expect(c.status).toBe(405);
    expect(c.headers.get("allow")).toBe("POST");
  });
});

describe("first run: expiry and replacement", () => {
  const clock = createTestClock();
  const ctx = useTestServer({ clock, tenant: false });

  it("accepts the token until an hour after it was issued, then refuses it as expired", async () => {
    const token = tokenOf(await ctx.server.app.setupUrl(ctx.server.port));
    clock.advance(HOUR - 1);
    expect((await postJson(`${ctx.url}/dashboard/setup/check`, { token })).status).toBe(204);
    clock.advance(1);
    const r = await postJson(`${ctx.url}/dashboard/setup`, {
      token,
      owner_email: "owner@shop.example",
      hostnames: ["shop.example"],
    });
    expect([r.status, r.body]).toEqual([401, refusal("unauthorized", EXPIRED)]);
    expect(await ctx.store.hasAccount()).toBe(false);
  });

  it("a new start replaces the token: the last printed URL works, the one before does not", async () => {
    const first = tokenOf(await ctx.server.app.setupUrl(ctx.server.port));
    const second = tokenOf(await ctx.server.app.setupUrl(ctx.server.port));
    expect(second).not.toBe(first);
    const old = await postJson(`${ctx.url}/dashboard/setup/check`, { token: first });
    expect([old.status, old.body]).toEqual([401, refusal("unauthorized", INVALID)]);
    expect((await postJson(`${ctx.url}/dashboard/setup/check`, { token: second })).status).toBe(
      204,
    );
  });

  it("refuses a valid token once an account was made another way (the admin CLI)", async () => {
    const token = tokenOf(await ctx.server.app.setupUrl(ctx.server.port));
    await ctx.server.admin.createAccount({ name: "CLI", plan: "scale", ownerEmail: "a@b.example" });
    const r = await postJson(`${ctx.url}/dashboard/setup/check`, { token });
    expect([r.status, r.body]).toEqual([409, refusal("conflict", DONE)]);
  });
});
