/**
 * Admin CLI: `npm run --silent admin -- <command>`. Prints exactly one JSON
 * value on stdout; errors go to stderr with a non-zero exit. Uses the same
 * STORE_URL and the same application code as AdminService.
 */
import { parseArgs } from "node:util";
import { loadConfig } from "../config.js";
import { createAdmin } from "../domain/admin.js";
import { systemClock } from "../domain/clock.js";
import { DomainError } from "../domain/errors.js";
import { type MigrationReport, openStore } from "../store/open-store.js";

const USAGE = `usage: npm run --silent admin -- <command>
  account create --name N --plan free|starter|growth|scale --owner EMAIL
  account set-plan --account ID --plan P
  member add --account ID --email E --role owner|admin|member
  site create --account ID --hostname H [--hostname H2 …]
  key create --site ID --name N --scopes events,payments --as USER_ID
  key list --site ID
  key delete --key KEY_ID --as USER_ID
  usage --account ID
  store migrate          (creates MongoDB collections, validators and indexes; idempotent)`;

class UsageError extends Error {}

const OPTIONS = {
  name: { type: "string" },
  plan: { type: "string" },
  owner: { type: "string" },
  account: { type: "string" },
  email: { type: "string" },
  role: { type: "string" },
  hostname: { type: "string", multiple: true },
  site: { type: "string" },
  scopes: { type: "string" },
  as: { type: "string" },
  key: { type: "string" },
} as const;

/**
 * `store migrate`: creates what the store needs and prints what it did,
 * e.g. `{"store":"mongodb","created":["collection events",…],"updated":[]}`;
 * a second run prints empty lists.
 */
async function migrate(config: ReturnType<typeof loadConfig>): Promise<unknown> {
  let report: MigrationReport = { created: [], updated: [], dropped: [] };
  const store = await openStore(config.storeUrl, {
    storeTimeoutMs: config.storeTimeoutMs,
    migrate: (r) => {
      report = r;
    },
  });
  await store.close();
  return { store: store.kind, ...report };
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: OPTIONS,
    allowPositionals: true,
  });
  const need = (name: keyof typeof OPTIONS): string => {
    const v = values[name];
    if (typeof v !== "string" || v === "") throw new UsageError(`--${name} is required`);
    return v;
  };
  const command = positionals.join(" ");
  const known = [
    "account create",
    "account set-plan",
    "member add",
    "site create",
    "key create",
    "key list",
    "key delete",
    "usage",
    "store migrate",
  ];
  if (!known.includes(command)) throw new UsageError(`unknown command "${command}"`);

  const config = loadConfig();
  if (command === "store migrate") return migrate(config);
  const store = await openStore(config.storeUrl, { storeTimeoutMs: config.storeTimeoutMs });
  try {
    const admin = createAdmin({ store, clock: systemClock });
    switch (command) {
      case "account create": {
        const r = await admin.createAccount({
          name: need("name"),
          plan: need("plan"),
          ownerEmail: need("owner"),
        });
        return { account_id: r.accountId, owner_user_id: r.ownerUserId };
      }
      case "account set-plan": {
        const r = await admin.setPlan({ accountId: need("account"), plan: need("plan") });
        return { account_id: r.accountId, plan: r.plan };
      }
      case "member add": {
        const r = await admin.addMember({
          accountId: need("account"),
          email: need("email"),
          role: need("role"),
        });
        return { user_id: r.userId };
      }
      case "site create": {
        const hostnames = values.hostname ?? [];
        if (hostnames.length === 0) throw new UsageError("--hostname is required");
        const r = await admin.createSite({ accountId: need("account"), hostnames });
        return { site_id: r.siteId };
      }
      case "key create": {
        const r = await admin.createKey({
          siteId: need("site"),
          name: need("name"),
          scopes: need("scopes").split(","),
          actorUserId: need("as"),
        });
        return { key_id: r.keyId, key: r.key };
      }
      case "key list": {
        const keys = await admin.listKeys({ siteId: need("site") });
        return keys.map((k) => ({
          key_id: k.keyId,
          site_id: k.siteId,
          name: k.name,
          scopes: k.scopes,
          prefix: k.prefix,
          created_at: iso(k.createdAt),
          created_by: k.createdBy,
          last_used_at: iso(k.lastUsedAt),
        }));
      }
      case "key delete": {
        const r = await admin.deleteKey({ keyId: need("key"), actorUserId: need("as") });
        return { key_id: r.keyId, deleted: true };
      }
      default: {
        const u = await admin.getUsage({ accountId: need("account") });
        return {
          account_id: u.accountId,
          plan: u.plan,
          month: u.month,
          counted: u.counted,
          allowance: u.allowance,
          ceiling: u.ceiling,
        };
      }
    }
  } finally {
    await store.close();
  }
}

run(process.argv.slice(2)).then(
  (result) => {
    process.stdout.write(`${JSON.stringify(result)}\n`);
  },
  (err: unknown) => {
    if (
      err instanceof UsageError ||
      (err as { code?: string })?.code?.startsWith("ERR_PARSE_ARGS")
    ) {
      process.stderr.write(`error: ${(err as Error).message}\n${USAGE}\n`);
      process.exitCode = 2;
    } else if (err instanceof DomainError) {
      process.stderr.write(`error: ${err.shape.code}: ${err.message}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    }
  },
);
