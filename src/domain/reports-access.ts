/**
 * Who may read ReportsService (and so the dashboard): the operator's
 * ADMIN_TOKEN, for every site, or an API key with the `reports` scope, for
 * its own site only.
 */
import { checkAdminToken } from "./admin-token.js";
import type { Authenticator } from "./auth.js";
import { errors } from "./errors.js";
import { bearerToken, KEY_PREFIX } from "./keys.js";

/** The caller of a report: the operator, or a site's reports key. */
export type ReportsPrincipal =
  | { readonly kind: "admin_token" }
  | { readonly kind: "reports_key"; readonly keyId: string; readonly siteId: string };

export interface ReportsAccess {
  /**
   * Checks an `Authorization` header for a read of `siteId`. A bearer token
   * with the API-key prefix is a key (401 when unknown or revoked, 403 without
   * the `reports` scope or for another site); anything else is checked
   * against ADMIN_TOKEN, as AdminService does. `siteId` is undefined for a
   * call that names no site (GetAccess): a key then reads only what it is.
   */
  authorize(
    header: string | null | undefined,
    siteId: string | undefined,
  ): Promise<ReportsPrincipal>;
}

const ADMIN: ReportsPrincipal = { kind: "admin_token" };

/** The access rule of ReportsService. */
export function createReportsAccess(deps: {
  adminToken: string | undefined;
  auth: Authenticator;
}): ReportsAccess {
  const { adminToken, auth } = deps;
  return {
    async authorize(header, siteId) {
      // The prefix decides which check applies, so a key is never compared
      // with ADMIN_TOKEN and the operator's token never reaches the key store.
      if (bearerToken(header)?.startsWith(KEY_PREFIX)) {
        const key = await auth.authenticate(header, "reports");
        if (siteId !== undefined && key.siteId !== siteId) throw errors.foreignSite();
        return { kind: "reports_key", keyId: key.id, siteId: key.siteId };
      }
      checkAdminToken(adminToken, header);
      return ADMIN;
    },
  };
}
