/**
 * ReportsService answers the holder of ADMIN_TOKEN, or a `reports` key for
 * its own site (src/domain/reports-access.ts): one interceptor checks every
 * call before its handler runs, against the request's `site_id`, and puts the
 * principal in the call's context values, so no handler checks for itself.
 */
import type { DescService } from "@bufbuild/protobuf";
import { createContextKey, type Interceptor } from "@connectrpc/connect";
import type { ReportsAccess, ReportsPrincipal } from "../domain/reports-access.js";

/** The principal of an authorized report call; undefined on other calls. */
export const reportsPrincipalKey = createContextKey<ReportsPrincipal | undefined>(undefined, {
  description: "the caller authorized to read reports",
});

/**
 * The interceptor: calls to `service` need `access`, others pass. Every
 * method of ReportsService is unary and names its site in `site_id`, but
 * GetAccess, which names none. Place it inside the error interceptor, which
 * turns its refusals into ConnectErrors.
 */
export function createReportsAuthInterceptor(
  access: ReportsAccess,
  service: DescService,
): Interceptor {
  return (next) => async (req) => {
    if (req.service.typeName !== service.typeName) return next(req);
    const names = req.method.input.fields.some((f) => f.name === "site_id");
    // A streaming call has no message yet: an empty site, so a key is refused.
    const siteId = !names
      ? undefined
      : req.stream
        ? ""
        : String((req.message as { siteId?: unknown }).siteId);
    const principal = await access.authorize(req.header.get("authorization"), siteId);
    req.contextValues.set(reportsPrincipalKey, principal);
    return next(req);
  };
}
