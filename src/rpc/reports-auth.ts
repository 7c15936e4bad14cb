/**
 * ReportsService answers the holder of ADMIN_TOKEN, or a `reports` key for
 * its own site (src/domain/reports-access.ts): one interceptor checks every
 * call before its handler runs, against the request's `site_id`, and puts the
 * principal in the call's context values, so no handler checks for itself.
 */
import type { DescService } from "@bufbuild/protobuf";
import { createContextKey, type Interceptor, type StreamRequest } from "@connectrpc/connect";
import type { ReportsAccess, ReportsPrincipal } from "../domain/reports-access.js";

/** The principal of an authorized report call; undefined on other calls. */
export const reportsPrincipalKey = createContextKey<ReportsPrincipal | undefined>(undefined, {
  description: "the caller authorized to read reports",
});

/** A message of a streaming call's input. */
type InputMessage = StreamRequest["message"] extends AsyncIterable<infer M> ? M : never;

/**
 * The input of a server-streaming call (ExportEvents, ExportPayments), read
 * before its handler so its `site_id` can be checked: the messages read (one,
 * from a well-behaved client), and the same messages again for the handler,
 * whose own check (exactly one) then answers a client that sent none or more.
 */
async function readInput(
  req: StreamRequest,
): Promise<{ siteId: string; message: StreamRequest["message"] }> {
  const messages: InputMessage[] = [];
  for await (const m of req.message) messages.push(m);
  const only = messages.length === 1 ? (messages[0] as { siteId?: unknown }) : undefined;
  // No single message: an empty site, so a key is refused before the handler's own error.
  return {
    siteId: only ? String(only.siteId) : "",
    message: (async function* replay() {
      yield* messages;
    })(),
  };
}

/**
 * The interceptor: calls to `service` need `access`, others pass. Every
 * method of ReportsService names its site in `site_id`, but GetAccess, whose
 * `site_id` is optional (empty: none); the exports are server streaming, their one request message
 * read here first. Place it inside the error interceptor, which turns its
 * refusals into ConnectErrors.
 */
export function createReportsAuthInterceptor(
  access: ReportsAccess,
  service: DescService,
): Interceptor {
  return (next) => async (req) => {
    if (req.service.typeName !== service.typeName) return next(req);
    const names = req.method.input.fields.some((f) => f.name === "site_id");
    const header = req.header.get("authorization");
    if (!names) {
      req.contextValues.set(reportsPrincipalKey, await access.authorize(header, undefined));
      return next(req);
    }
    if (!req.stream) {
      const siteId = String((req.message as { siteId?: unknown }).siteId);
      // GetAccess names a site only if it wants it described: empty names none.
      const named = siteId === "" && req.method.name === "GetAccess" ? undefined : siteId;
      req.contextValues.set(reportsPrincipalKey, await access.authorize(header, named));
      return next(req);
    }
    const input = await readInput(req);
    req.contextValues.set(reportsPrincipalKey, await access.authorize(header, input.siteId));
    return next({ ...req, message: input.message });
  };
}
