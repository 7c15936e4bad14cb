/**
 * The first run's setup page, on the dashboard door (docs/running.md, First
 * run): `GET /dashboard/setup?token=…` (a shell that loads setup.js), `POST
 * /dashboard/setup/check` (is this token still good? the page asks before it
 * shows the form) and `POST /dashboard/setup` (spend the token: the owner's
 * account, the first site and a reports key). The rules are the domain's
 * (src/domain/first-run.ts); the door decodes the JSON body strictly and
 * answers the REST envelope, so the page shows the service's own refusal.
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import { errors } from "../../domain/errors.js";
import { type FirstRun, SETUP_PATH } from "../../domain/first-run.js";
import { parseJsonBody } from "../../edge/decode-json.js";
import type { BodyLimitRouteConfig } from "../../edge/fastify-errors.js";
import { registerMethodNotAllowed } from "../method-not-allowed.js";

/** A setup form is a few hundred bytes; 8 KB leaves room for many hostnames. */
const SETUP_BODY_LIMIT = 8 * 1024;
export const SETUP_CHECK_PATH = `${SETUP_PATH}/check`;

/** The setup page: a shell that loads the setup bundle and the dashboard's stylesheet. */
export function setupPage(assetsPath: string): Buffer {
  return Buffer.from(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>Set up the revenue dashboard</title>
<link rel="stylesheet" href="${assetsPath}/app.css">
<script type="module" src="${assetsPath}/setup.js"></script>
</head>
<body>
<div id="app"><noscript>The setup page needs JavaScript.</noscript></div>
</body>
</html>
`);
}

const FIELDS = ["token", "owner_email", "account_name", "hostnames", "time_zone"] as const;

/** The body as an object of known fields of the right types, or the refusal naming the first wrong one. */
function readBody(body: unknown, required: readonly (typeof FIELDS)[number][]) {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw errors.invalid("the body must be a JSON object");
  }
  const o = body as Record<string, unknown>;
  for (const name of Object.keys(o)) {
    if (!(FIELDS as readonly string[]).includes(name))
      throw errors.invalid(`unknown field ${name}`);
  }
  for (const name of required) {
    if (o[name] === undefined) throw errors.invalid(`${name} is required`);
  }
  const text = (name: (typeof FIELDS)[number]) => {
    const v = o[name];
    if (v !== undefined && typeof v !== "string") throw errors.invalid(`${name} must be a string`);
    return v ?? "";
  };
  const hostnames = o.hostnames ?? [];
  if (!Array.isArray(hostnames) || !hostnames.every((h) => typeof h === "string")) {
    throw errors.invalid("hostnames must be a list of strings");
  }
  if (hostnames.length > 100) throw errors.invalid("at most 100 hostnames");
  return {
    token: text("token"),
    ownerEmail: text("owner_email"),
    accountName: text("account_name"),
    hostnames: hostnames as string[],
    timeZone: text("time_zone"),
  };
}

/** An answer that carries a secret (the reports key) or is about one: never stored anywhere. */
function noStore(reply: FastifyReply): void {
  reply.header("cache-control", "no-store");
}

/**
 * Registers the setup routes on the dashboard door's scope. `page` is
 * undefined when the dashboard is not built; `notBuilt` answers then.
 */
export function registerSetupRoutes(
  scope: FastifyInstance,
  options: { firstRun: FirstRun; page: Buffer | undefined; notBuilt(reply: FastifyReply): unknown },
): void {
  const { firstRun, page } = options;
  const config: BodyLimitRouteConfig = { bodyLimit: SETUP_BODY_LIMIT };

  scope.get(SETUP_PATH, async (_request, reply) => {
    if (!page) return options.notBuilt(reply);
    noStore(reply);
    reply.type("text/html; charset=utf-8");
    return reply.send(page);
  });

  scope.post(SETUP_CHECK_PATH, { bodyLimit: SETUP_BODY_LIMIT, config }, async (request, reply) => {
    noStore(reply);
    const { token } = readBody(parseJsonBody(request.body as Buffer), ["token"]);
    await firstRun.checkSetupToken(token);
    return reply.code(204).send();
  });

  scope.post(SETUP_PATH, { bodyLimit: SETUP_BODY_LIMIT, config }, async (request, reply) => {
    noStore(reply);
    const input = readBody(parseJsonBody(request.body as Buffer), [
      "token",
      "owner_email",
      "hostnames",
    ]);
    const r = await firstRun.completeSetup(input);
    return reply.code(200).send({
      ok: true,
      data: {
        account_id: r.accountId,
        owner_user_id: r.ownerUserId,
        site_id: r.siteId,
        time_zone: r.timeZone,
        reports_key_id: r.reportsKeyId,
        reports_key: r.reportsKey,
      },
    });
  });

  registerMethodNotAllowed(scope, {
    url: SETUP_PATH,
    allow: ["GET", "HEAD", "POST"],
    use: "GET or POST",
  });
  registerMethodNotAllowed(scope, { url: SETUP_CHECK_PATH, allow: ["POST"], use: "POST" });
}
