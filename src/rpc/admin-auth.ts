/**
 * AdminService answers only callers with
 * `Authorization: Bearer <ADMIN_TOKEN>`: one interceptor checks every call to
 * them before its handler runs and puts the principal in the call's context
 * values, so no handler checks for itself.
 */
import type { DescService } from "@bufbuild/protobuf";
import { createContextKey, type Interceptor } from "@connectrpc/connect";
import { checkAdminToken } from "../domain/admin-token.js";

/** Who an admin call runs for: the holder of ADMIN_TOKEN. */
export interface AdminPrincipal {
  readonly kind: "admin_token";
}

/** The admin principal of an authenticated call; undefined on other calls. */
export const adminPrincipalKey = createContextKey<AdminPrincipal | undefined>(undefined, {
  description: "the caller authenticated by ADMIN_TOKEN",
});

const ADMIN: AdminPrincipal = { kind: "admin_token" };

/**
 * The interceptor: calls to `services` need ADMIN_TOKEN (refused while it is
 * unset), others pass. Place it inside the error interceptor, which turns its
 * refusals into ConnectErrors.
 */
export function createAdminAuthInterceptor(
  adminToken: string | undefined,
  services: readonly DescService[],
): Interceptor {
  const guarded = new Set(services.map((s) => s.typeName));
  return (next) => async (req) => {
    if (!guarded.has(req.service.typeName)) return next(req);
    checkAdminToken(adminToken, req.header.get("authorization"));
    req.contextValues.set(adminPrincipalKey, ADMIN);
    return next(req);
  };
}
