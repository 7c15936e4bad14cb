import { describe, expect, it } from "vitest";
import type { Authenticator } from "../../../src/domain/auth.js";
import { errors } from "../../../src/domain/errors.js";
import { createReportsAccess } from "../../../src/domain/reports-access.js";
import type { KeyPrincipal, Scope } from "../../../src/domain/store/store.js";

const KEY = `mk_live_${"a".repeat(48)}`;
const TOKEN = "the-admin-token";

/** An authenticator that knows one key of site_a with `scopes`, and notes what it was asked. */
function authWith(scopes: Scope[]) {
  const asked: Scope[] = [];
  const auth: Authenticator = {
    async authenticate(header, scope) {
      asked.push(scope);
      if (header !== `Bearer ${KEY}`) throw errors.unknownKey();
      if (!scopes.includes(scope)) throw errors.missingScope(scope);
      return { id: "key_1", siteId: "site_a", scopes, accountId: "acc_1" } as KeyPrincipal;
    },
  };
  return { auth, asked };
}

const message = (p: Promise<unknown>) =>
  p.then(
    () => "resolved",
    (e: Error) => e.message,
  );

describe("the ReportsService access rule", () => {
  it("lets a reports key read its own site, and names it", async () => {
    const { auth, asked } = authWith(["reports"]);
    const access = createReportsAccess({ adminToken: TOKEN, auth });
    await expect(access.authorize(`Bearer ${KEY}`, "site_a")).resolves.toEqual({
      kind: "reports_key",
      keyId: "key_1",
      siteId: "site_a",
    });
    await expect(access.authorize(`Bearer ${KEY}`, undefined)).resolves.toMatchObject({
      siteId: "site_a",
    });
    expect(asked).toEqual(["reports", "reports"]);
  });

  it("refuses a reports key another site, or no site", async () => {
    const access = createReportsAccess({ adminToken: TOKEN, ...authWith(["reports"]) });
    for (const site of ["site_b", ""]) {
      expect(await message(access.authorize(`Bearer ${KEY}`, site))).toBe(
        "api key does not belong to this site",
      );
    }
  });

  it("refuses a write key: it lacks the reports scope", async () => {
    const access = createReportsAccess({ adminToken: TOKEN, ...authWith(["events", "payments"]) });
    expect(await message(access.authorize(`Bearer ${KEY}`, "site_a"))).toBe(
      "API key lacks the reports scope",
    );
  });

  it("checks anything else against ADMIN_TOKEN, never against the key store", async () => {
    const { auth, asked } = authWith(["reports"]);
    const access = createReportsAccess({ adminToken: TOKEN, auth });
    await expect(access.authorize(`Bearer ${TOKEN}`, "site_z")).resolves.toEqual({
      kind: "admin_token",
    });
    expect(await message(access.authorize("Bearer wrong", "site_a"))).toBe(
      "missing or invalid admin token",
    );
    expect(await message(access.authorize(undefined, "site_a"))).toBe(
      "missing or invalid admin token",
    );
    expect(asked).toEqual([]);
  });

  it("still serves reports keys while ADMIN_TOKEN is unset", async () => {
    const access = createReportsAccess({ adminToken: undefined, ...authWith(["reports"]) });
    await expect(access.authorize(`Bearer ${KEY}`, "site_a")).resolves.toMatchObject({
      kind: "reports_key",
    });
    expect(await message(access.authorize(`Bearer ${TOKEN}`, "site_a"))).toBe(
      "admin API is disabled: ADMIN_TOKEN is not set",
    );
  });
});
