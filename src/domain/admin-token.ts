/** The bearer token that guards AdminService and ReportsService. */
import { createHash, timingSafeEqual } from "node:crypto";
import { errors } from "./errors.js";
import { bearerToken } from "./keys.js";

/**
 * Checks an `Authorization` header against ADMIN_TOKEN in constant time.
 * Both sides are hashed first so the comparison takes the same time whatever
 * the lengths. Every call is refused while the token is unset.
 */
export function checkAdminToken(configured: string | undefined, header: string | null | undefined) {
  if (configured === undefined) throw errors.adminTokenUnset();
  const given = bearerToken(header) ?? "";
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(configured).digest();
  if (!timingSafeEqual(a, b)) throw errors.badAdminToken();
}
