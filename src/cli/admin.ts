/**
 * Admin CLI: `npm run --silent admin -- <command>`. Prints exactly one JSON
 * value on stdout (`demo` prints shell `export` lines instead, and `help`
 * prints usage); errors go to stderr with a non-zero exit. Uses the same
 * STORE_URL and the same application code as AdminService.
 */
import { randomBytes } from "node:crypto";
import { createWriteStream, existsSync, rmSync } from "node:fs";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseArgs } from "node:util";
import { createApp } from "../app.js";
import { loadConfig } from "../config.js";
import { createAdmin, type SiteView } from "../domain/admin.js";
import { createAttributor } from "../domain/attribution/attribute.js";
import { systemClock } from "../domain/clock.js";
import {
  COLLECT_ALLOWANCE_DIVISOR,
  COLLECT_FLOOR_PER_MINUTE,
  collectPerMinuteOf,
  createCollectLimits,
  MAX_COLLECT_PER_MINUTE,
} from "../domain/collect-limits.js";
import { createErasure, type ErasureAudit, erasureAuditFields } from "../domain/erasure.js";
import { DomainError, errors } from "../domain/errors.js";
import { KEY_PREFIX } from "../domain/keys.js";
import { createReports } from "../domain/reports.js";
import { createRetention } from "../domain/retention.js";
import {
  isOneOf,
  MAX_RETENTION_DAYS,
  PLANS,
  PROVIDERS,
  ROLES,
  WRITE_SCOPES,
} from "../domain/vocabulary.js";
import {
  EVENT_CSV_HEAD,
  EXPORT_FORMATS,
  eventCsvRow,
  eventNdjsonLine,
  PAYMENT_CSV_HEAD,
  paymentCsvRow,
  paymentNdjsonLine,
} from "../edge/export-formats.js";
import { httpErrorOf } from "../edge/http-errors.js";
import { backupDataDirectory } from "../store/duckdb/analytics-backup.js";
import { analyticsPathBeside } from "../store/duckdb/analytics-store.js";
import { type MigrationReport, openStore } from "../store/open-store.js";
import { CopyRefusedError, restoreSqlite } from "../store/sqlite/backup.js";
import { openCliEventReads } from "./cli-analytics.js";
import { DEMO_DAYS, loadDemoMonth } from "./demo-data.js";

/** Each command: its arguments and what it does, for `help`. */
const COMMANDS = {
  "account create": [
    `--name N --plan ${PLANS.join("|")} --owner EMAIL`,
    "Creates an account and its owner.",
  ],
  "account set-plan": [
    "--account ID --plan P",
    "Moves an account to another plan. Below scale, payments and connector deliveries are refused (docs/api.md, Plan changes).",
  ],
  "account list": ["", "Lists every account: id, name, plan, created_at."],
  "member add": [
    `--account ID --email E --role ${ROLES.join("|")}`,
    "Adds a user (created by email if new) to an account, or changes their role.",
  ],
  "member list": ["--account ID", "Lists an account's members: user id, email and role."],
  "site create": [
    "--account ID --hostname H [--hostname H2 …] [--timezone TZ]",
    "Creates a site; events must come from one of its hostnames. TZ: an IANA time zone such as Europe/Paris (default UTC).",
  ],
  "site list": [
    "[--account ID]",
    "Lists every site, or an account's: id, account, name, hostnames, time zone, created_at.",
  ],
  "site update": [
    "--site ID [--name N] [--hostnames H1,H2] [--timezone TZ]",
    "Changes a site's name, hostnames (all of them) or IANA time zone; at least one. Prints the site.",
  ],
  "site set-timezone": [
    "--site ID --timezone TZ",
    "Sets a site's IANA time zone (e.g. Europe/Paris, UTC).",
  ],
  "site set-retention": [
    `--site ID (--days N | --keep)`,
    `Keeps N days (1 to ${MAX_RETENTION_DAYS}) of the site's raw events; older ones are pruned in the background (first touches, links and payments stay). --keep (or --days 0) keeps every event again.`,
  ],
  "site set-collect-limit": [
    `--site ID (--per-minute N | --default)`,
    `Sets how many events a minute the public collect endpoint accepts for the site (1 to ${MAX_COLLECT_PER_MINUTE}); past it browsers get 429 until the minute refills. Key-authenticated requests are not limited. --default (or --per-minute 0) goes back to the plan's default: the monthly allowance / ${COLLECT_ALLOWANCE_DIVISOR}, at least ${COLLECT_FLOOR_PER_MINUTE}.`,
  ],
  "key create": [
    `--site ID --name N --scopes ${WRITE_SCOPES.join(",")}|reports --as USER_ID`,
    "Creates an API key (Scale plan; owner or admin). The key is printed this once. A reports key reads ReportsService and the dashboard for its site only.",
  ],
  "key list": ["--site ID", "Lists a site's keys, without their secrets."],
  "key delete": [
    "--key KEY_ID --as USER_ID",
    "Deletes a key by its id (key_…, from key list), never by its secret.",
  ],
  "connector create": [
    `--site ID --provider ${PROVIDERS.join("|")} --secret SIGNING_SECRET --as USER_ID`,
    "Connects a site to a payment provider's webhooks (Scale plan; owner or admin); prints the url_path to paste into the provider.",
  ],
  "connector list": ["--site ID", "Lists a site's connectors, without their secrets."],
  "connector delete": ["--connector ID --as USER_ID", "Deletes a connector (owner or admin)."],
  usage: ["--account ID", "This UTC month's counted events, allowance and ceiling."],
  "export events": [
    "--site ID --format ndjson|csv [--from T] [--to T] [--out FILE]",
    "Writes a site's events with ts in [from, to) (RFC 3339; default: all), newest first, to stdout or to FILE (a new file; prints a summary). The lines of GET /api/v1/export/events.",
  ],
  "export payments": [
    "--site ID --format ndjson|csv [--from T] [--to T] [--out FILE]",
    "Writes a site's payments paid in [from, to), oldest first, to stdout or to FILE (a new file; prints a summary). The lines of GET /api/v1/export/payments.",
  ],
  "erase customer": [
    "--site ID --customer ID --as USER_ID",
    "Erases a customer's personal data (owner or admin); its payments stay under a pseudonym. Prints the counts.",
  ],
  "erase user": [
    "--site ID --user ID --as USER_ID",
    "Erases a user id's identify links and events and the customers that carry it. Prints the counts.",
  ],
  "erase visitor": [
    "--site ID --visitor ID --as USER_ID",
    "Erases a visitor (daily id, vid or p:<vid>): events, first touch, links, stitches. Prints the counts.",
  ],
  "store migrate": [
    "",
    "Creates the store's collections, validators and indexes (MongoDB; idempotent). Run once per deploy, before the servers.",
  ],
  "store backup": [
    "FILE",
    "Copies the SQLite store to FILE (a new file) while the server keeps serving; prints path, bytes, pages, seconds.",
  ],
  "store restore": [
    "FILE",
    "Replaces the SQLite store with the backup FILE; refused while a server has the store open.",
  ],
  demo: [
    "[--empty]",
    "Creates a demo account, site (example.com, localhost), key and Stripe connector, and loads the last 30 days of visitors, events and payments into it through the service's own doors (--empty: none); prints `export KEY=… SITE=… ADMIN_TOKEN=… ACCOUNT=… USER_ID=…`.",
  ],
} as const;

type Command = keyof typeof COMMANDS;

const USAGE = `usage: npm run --silent admin -- <command> [options]
       npm run --silent admin -- help [<command>]

commands:
${Object.entries(COMMANDS)
  .map(([name, [args, what]]) => `  ${`${name} ${args}`.trimEnd()}\n      ${what}`)
  .join("\n")}

STORE_URL names the store (default sqlite:./data/ingest.sqlite), as for the server.`;

/** Usage of one command. */
function commandUsage(command: Command): string {
  const [args, what] = COMMANDS[command];
  return `usage: npm run --silent admin -- ${`${command} ${args}`.trimEnd()}\n\n${what}`;
}

/** A command line that cannot run; `command` is set when the command itself was understood. */
class UsageError extends Error {
  command: Command | undefined;
}

/** Not an error: prints `text` on stdout and exits 0. */
class HelpRequest {
  constructor(readonly text: string) {}
}

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
  provider: { type: "string" },
  secret: { type: "string" },
  connector: { type: "string" },
  customer: { type: "string" },
  user: { type: "string" },
  visitor: { type: "string" },
  days: { type: "string" },
  keep: { type: "boolean" },
  "per-minute": { type: "string" },
  default: { type: "boolean" },
  timezone: { type: "string" },
  hostnames: { type: "string" },
  format: { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  out: { type: "string" },
  empty: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * `store migrate`: creates what the store needs and prints what it did,
 * e.g. `{"store":"mongodb","created":["collection events",…],"updated":[],"dropped":[]}`;
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

/** A site as `site list` and `site update` print it. */
const siteJson = (s: SiteView) => ({
  site_id: s.siteId,
  account_id: s.accountId,
  name: s.name === "" ? null : s.name,
  hostnames: s.hostnames,
  time_zone: s.timeZone,
  created_at: iso(s.createdAt),
});

/** The result of a command that wrote its own output (an export to stdout): nothing more is printed. */
const WRITTEN = Symbol("written");

/**
 * Writes an export's `head` and lines to stdout, or to `out`, a file that
 * must not exist yet (an export never overwrites one; a failed export
 * removes what it wrote). Pages are read as the target takes them, so
 * memory stays bounded whatever the range. Returns the number of rows.
 */
async function writeExport<T>(
  pages: AsyncIterable<T[]>,
  line: (item: T) => string,
  head: string,
  out: string | undefined,
): Promise<number> {
  let rows = 0;
  async function* chunks() {
    if (head) yield head;
    for await (const items of pages) {
      let chunk = "";
      for (const item of items) chunk += line(item);
      rows += items.length;
      yield chunk;
    }
  }
  if (out === undefined) {
    await pipeline(Readable.from(chunks()), process.stdout, { end: false });
    return rows;
  }
  const file = createWriteStream(out, { flags: "wx" });
  try {
    await pipeline(Readable.from(chunks()), file);
  } catch (err) {
    if ((err as { code?: string }).code === "EEXIST") {
      throw new Error(`${out} already exists; export writes a new file`);
    }
    rmSync(out, { force: true });
    throw err;
  }
  return rows;
}

/** Text for stderr: a secret key that was typed by mistake is never echoed. */
function redactKeys(text: string): string {
  return text
    .replace(new RegExp(`${KEY_PREFIX}[0-9A-Za-z]*`, "g"), `${KEY_PREFIX}…`)
    .replace(/whsec_[0-9A-Za-z+/=]*/g, "whsec_…");
}

/**
 * The command named by the positionals. `help`, `help <command>`, `--help`
 * and `<command> --help` throw a HelpRequest (usage on stdout, exit 0); with
 * --help, a partial command such as `key` gets the general usage.
 */
function commandOf(positionals: string[], help: boolean | undefined): Command {
  const words = positionals.join(" ");
  const isCommand = (w: string): w is Command => Object.hasOwn(COMMANDS, w);
  if (words === "help") throw new HelpRequest(USAGE);
  if (words.startsWith("help ")) {
    const topic = words.slice("help ".length);
    if (!isCommand(topic)) throw new UsageError(`unknown command "${topic}"`);
    throw new HelpRequest(commandUsage(topic));
  }
  if (isCommand(words)) {
    if (help) throw new HelpRequest(commandUsage(words));
    return words;
  }
  if (help) throw new HelpRequest(USAGE);
  throw new UsageError(words === "" ? "a command is required" : `unknown command "${words}"`);
}

/** Warns before a SQLite store is created from nothing: usually a mistyped STORE_URL. */
function warnIfNewDatabase(storeUrl: string, command: Command): void {
  if (!storeUrl.startsWith("sqlite:")) return;
  const path = storeUrl.slice("sqlite:".length);
  if (path === ":memory:" || existsSync(path)) return;
  if (command === "demo") {
    process.stderr.write(`creating a new database at ${path}\n`);
    return;
  }
  process.stderr.write(
    `warning: ${path} does not exist; creating a new, empty database there (check STORE_URL)\n`,
  );
}

/** The commands whose last word is followed by a file name. */
const FILE_COMMANDS: readonly string[] = ["store backup", "store restore"];

/** `store backup|restore FILE`: the SQLite store's file copied out or back in. */
/** How long `store backup` waits for a running server to copy its analytics file. */
const BACKUP_ANSWER_MS = 600_000;

async function copyStore(
  command: "store backup" | "store restore",
  file: string,
  config: ReturnType<typeof loadConfig>,
): Promise<unknown> {
  if (!config.storeUrl.startsWith("sqlite:") || config.storeUrl === "sqlite::memory:") {
    throw new CopyRefusedError(
      `${command} copies a SQLite file; for MongoDB use mongodump or snapshots (docs/operations.md)`,
    );
  }
  const path = config.storeUrl.slice("sqlite:".length);
  return command === "store backup"
    ? backupDataDirectory({
        sqlitePath: path,
        analyticsPath: analyticsPathBeside(path),
        file,
        busyTimeoutMs: config.sqliteBusyTimeoutMs,
        threads: config.analyticsThreads,
        memoryLimit: config.analyticsMemoryLimit,
        timeoutMs: BACKUP_ANSWER_MS,
        now: () => systemClock.now(),
      })
    : restoreSqlite(file, path);
}

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: OPTIONS,
    allowPositionals: true,
  });
  const files = FILE_COMMANDS.includes(positionals.slice(0, 2).join(" "))
    ? positionals.splice(2)
    : [];
  const command = commandOf(positionals, values.help);
  const usageError = (message: string) => {
    const e = new UsageError(message);
    e.command = command;
    return e;
  };
  const need = (name: keyof typeof OPTIONS): string => {
    const v = values[name];
    if (typeof v !== "string" || v === "") throw usageError(`--${name} is required`);
    return v;
  };
  if (command === "key delete" && need("key").startsWith(KEY_PREFIX)) {
    throw usageError(
      `--key takes the key's id (key_…), not its secret; find the id with "key list --site SITE_ID"`,
    );
  }

  const config = loadConfig();
  if (!FILE_COMMANDS.includes(command)) warnIfNewDatabase(config.storeUrl, command);
  if (command === "store migrate") return migrate(config);
  if (command === "store backup" || command === "store restore") {
    if (files.length !== 1 || files[0] === "") throw usageError("exactly one FILE is required");
    return copyStore(command, files[0] as string, config);
  }
  const store = await openStore(config.storeUrl, { storeTimeoutMs: config.storeTimeoutMs });
  // Only the commands that read or erase stored events open the analytics file.
  const events =
    command === "export events" || command.startsWith("erase ")
      ? await openCliEventReads(config, store, systemClock.now)
      : { close: async () => {} };
  try {
    const admin = createAdmin({ store, clock: systemClock });
    /**
     * After an erasure of events while a server holds the analytics file: it ran in
     * SQLite, which logs what the server's feed deletes from the file at its next
     * batch; only the events not yet moved could be counted here.
     */
    const warnIfHeld = () => {
      if (events.reads) return;
      process.stderr.write(
        `${JSON.stringify({ warning: "a running server holds the analytics store: it erases the events it holds at its next batch; the counts here are of the events not yet moved to it" })}\n`,
      );
    };
    const erasure = createErasure({
      store,
      attributor: createAttributor({ store, clock: systemClock }),
      audit: writeAudit,
      ...(events.reads?.countEvents ? { countEvents: events.reads.countEvents } : {}),
    });
    switch (command) {
      case "account create": {
        const r = await admin.createAccount({
          name: need("name"),
          plan: need("plan"),
          ownerEmail: need("owner"),
        });
        return { account_id: r.accountId, owner_user_id: r.ownerUserId };
      }
      case "account list": {
        const accounts = await admin.listAccounts();
        return accounts.map((a) => ({
          account_id: a.id,
          name: a.name,
          plan: a.plan,
          created_at: iso(a.createdAt),
        }));
      }
      case "member list": {
        const members = await admin.listMembers({ accountId: need("account") });
        return members.map((m) => ({ user_id: m.userId, email: m.email, role: m.role }));
      }
      case "site list": {
        const sites = await admin.listSites(
          values.account === undefined ? {} : { accountId: need("account") },
        );
        return sites.map(siteJson);
      }
      case "site update": {
        const site = await admin.updateSite({
          siteId: need("site"),
          name: values.name,
          hostnames: values.hostnames
            ?.split(",")
            .map((h) => h.trim())
            .filter(Boolean),
          timeZone: values.timezone,
        });
        return siteJson(site);
      }
      case "site set-timezone": {
        const site = await admin.updateSite({ siteId: need("site"), timeZone: need("timezone") });
        return siteJson(site);
      }
      case "export events":
      case "export payments": {
        const format = need("format");
        if (!isOneOf(EXPORT_FORMATS, format)) throw usageError("--format must be ndjson or csv");
        if (values.out === "") throw usageError("--out needs a file name");
        const reports = createReports({
          store,
          clock: systemClock,
          ...(events.reads ? { events: events.reads } : {}),
        });
        const range = { siteId: need("site"), from: values.from ?? "", to: values.to ?? "" };
        const csv = format === "csv";
        const eventPages =
          command === "export events" ? await reports.exportEvents(range) : undefined;
        if (eventPages && !events.reads) {
          // Checked first (the request's errors come before this one); nothing was read.
          await eventPages.return();
          throw errors.eventsHeldByServer();
        }
        const rows = eventPages
          ? await writeExport(
              eventPages,
              csv ? eventCsvRow : eventNdjsonLine,
              csv ? EVENT_CSV_HEAD : "",
              values.out,
            )
          : await writeExport(
              await reports.exportPayments(range),
              csv ? paymentCsvRow : paymentNdjsonLine,
              csv ? PAYMENT_CSV_HEAD : "",
              values.out,
            );
        return values.out === undefined ? WRITTEN : { out: values.out, format, rows };
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
        if (hostnames.length === 0) throw usageError("--hostname is required");
        const r = await admin.createSite({
          accountId: need("account"),
          hostnames,
          timeZone: values.timezone,
        });
        return { site_id: r.siteId };
      }
      case "site set-retention": {
        const r = await createRetention({ store }).setSiteRetention({
          siteId: need("site"),
          days: retentionDays(values.days, values.keep, usageError),
        });
        return { site_id: r.siteId, events_retention_days: r.eventsRetentionDays ?? null };
      }
      case "site set-collect-limit": {
        const r = await createCollectLimits({ store }).setSiteCollectLimit({
          siteId: need("site"),
          perMinute: collectPerMinute(values["per-minute"], values.default, usageError),
        });
        const site = await store.getSite(r.siteId);
        const account = site && (await store.getAccount(site.accountId));
        return {
          site_id: r.siteId,
          collect_per_minute: r.collectPerMinute ?? null,
          // What is in force: the setting, or the plan's default.
          effective_per_minute: site && account ? collectPerMinuteOf(site, account.plan) : null,
        };
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
      case "connector create": {
        const c = await admin.createConnector({
          siteId: need("site"),
          provider: need("provider"),
          secret: need("secret"),
          actorUserId: need("as"),
        });
        return { connector_id: c.connectorId, url_path: c.urlPath };
      }
      case "connector list": {
        const connectors = await admin.listConnectors({ siteId: need("site") });
        return connectors.map((c) => ({
          connector_id: c.connectorId,
          site_id: c.siteId,
          provider: c.provider,
          url_path: c.urlPath,
          created_at: iso(c.createdAt),
          created_by: c.createdBy,
        }));
      }
      case "connector delete": {
        const r = await admin.deleteConnector({
          connectorId: need("connector"),
          actorUserId: need("as"),
        });
        return { connector_id: r.connectorId, deleted: true };
      }
      case "erase customer": {
        const r = await erasure.eraseCustomer({
          siteId: need("site"),
          customerId: need("customer"),
          actorUserId: need("as"),
        });
        return {
          customers: r.customers,
          payments: r.payments,
          subscriptions: r.subscriptions,
          customer_links: r.customerLinks,
        };
      }
      case "erase user": {
        const r = await erasure.eraseUser({
          siteId: need("site"),
          userId: need("user"),
          actorUserId: need("as"),
        });
        warnIfHeld();
        return {
          identity_links: r.identityLinks,
          events: r.events,
          customers: r.customers,
          payments: r.payments,
          subscriptions: r.subscriptions,
          customer_links: r.customerLinks,
        };
      }
      case "erase visitor": {
        const r = await erasure.eraseVisitor({
          siteId: need("site"),
          visitorId: need("visitor"),
          actorUserId: need("as"),
        });
        warnIfHeld();
        return {
          events: r.events,
          touches: r.touches,
          identity_links: r.identityLinks,
          customer_links: r.customerLinks,
          stitches: r.stitches,
          reattributed_customers: r.reattributedCustomers,
        };
      }
      case "demo": {
        const vars = await demo(admin, config.adminToken);
        if (!values.empty) await loadDemoData(config, store, admin, vars);
        return new ShellExports(vars);
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
    await events.close();
    await store.close();
  }
}

/**
 * `--days N` or `--keep` (the same as `--days 0`), exactly one of them. N
 * must be written as a whole number; its range is the domain's check.
 */
function retentionDays(
  days: string | undefined,
  keep: boolean | undefined,
  usageError: (message: string) => Error,
): number {
  if (keep && days !== undefined) throw usageError("give either --days or --keep, not both");
  if (keep) return 0;
  if (days === undefined || days === "") throw usageError("--days or --keep is required");
  // Not Number(): "1e3", "0x10" or " 7" are not what an operator means by a number of days.
  return /^[0-9]{1,9}$/.test(days) ? Number(days) : Number.NaN;
}

/**
 * `--per-minute N` or `--default` (the same as `--per-minute 0`), exactly one
 * of them. N must be written as a whole number; its range is the domain's check.
 */
function collectPerMinute(
  perMinute: string | undefined,
  byDefault: boolean | undefined,
  usageError: (message: string) => Error,
): number {
  if (byDefault && perMinute !== undefined) {
    throw usageError("give either --per-minute or --default, not both");
  }
  if (byDefault) return 0;
  if (perMinute === undefined || perMinute === "") {
    throw usageError("--per-minute or --default is required");
  }
  return /^[0-9]{1,9}$/.test(perMinute) ? Number(perMinute) : Number.NaN;
}

/** The audit line of an erasure, on stderr (stdout carries the one result): hashes and counts only. */
function writeAudit(line: ErasureAudit): void {
  process.stderr.write(
    `${JSON.stringify({ time: new Date().toISOString(), ...erasureAuditFields(line) })}\n`,
  );
}

/** Variables printed as one `export` line for `eval "$(npm run --silent demo)"`. */
class ShellExports {
  constructor(readonly vars: Record<string, string>) {}
  toString(): string {
    // Every value is an id, a key or hex: nothing needs quoting.
    return `export ${Object.entries(this.vars)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ")}`;
  }
}

/**
 * A Scale account, a site on example.com and localhost, and a key with both
 * scopes; the ADMIN_TOKEN already set, or a new random one, for the server to
 * be started with.
 */
async function demo(
  admin: ReturnType<typeof createAdmin>,
  adminToken: string | undefined,
): Promise<Record<string, string>> {
  const { accountId, ownerUserId } = await admin.createAccount({
    name: "Demo",
    plan: "scale",
    ownerEmail: "demo@example.com",
  });
  const { siteId } = await admin.createSite({
    accountId,
    hostnames: ["example.com", "localhost"],
  });
  const { key } = await admin.createKey({
    siteId,
    name: "demo",
    scopes: [...WRITE_SCOPES],
    actorUserId: ownerUserId,
  });
  return {
    KEY: key,
    SITE: siteId,
    ADMIN_TOKEN: adminToken ?? randomBytes(24).toString("hex"),
    ACCOUNT: accountId,
    USER_ID: ownerUserId,
  };
}

/**
 * The demo's month (demo-data.ts): a Stripe connector on the demo site, then
 * the service itself on a free loopback port over this same store, with a
 * clock the loader moves, so the data goes through the real doors. A summary
 * goes to stderr; stdout keeps the one export line.
 */
async function loadDemoData(
  config: ReturnType<typeof loadConfig>,
  store: Awaited<ReturnType<typeof openStore>>,
  admin: ReturnType<typeof createAdmin>,
  vars: Record<string, string>,
): Promise<void> {
  const started = performance.now();
  const secret = `whsec_${randomBytes(24).toString("base64url")}`;
  const connector = await admin.createConnector({
    siteId: vars.SITE as string,
    provider: "stripe",
    secret,
    actorUserId: vars.USER_ID as string,
  });
  const end = systemClock.now();
  let now = end;
  const app = await createApp({
    config: { ...config, host: "127.0.0.1", port: 0, logLevel: "silent", retentionIntervalMs: 0 },
    store,
    clock: { now: () => now },
    pruneEvents: false,
  });
  try {
    const port = await app.listen();
    const summary = await loadDemoMonth(
      {
        url: `http://127.0.0.1:${port}`,
        key: vars.KEY as string,
        siteId: vars.SITE as string,
        connector: { id: connector.connectorId, secret },
        setNow: (ms) => {
          now = ms;
        },
      },
      { end },
    );
    const s = ((performance.now() - started) / 1000).toFixed(1);
    process.stderr.write(
      `loaded ${DEMO_DAYS} days into ${vars.SITE} in ${s} s: ${summary.visitors} visitors, ${summary.events} events (${summary.identifies} identify calls), ${summary.payments} payments (${summary.refunds} refunds, ${summary.chargebacks} chargeback), ${summary.stripeDeliveries} Stripe deliveries\n`,
    );
  } finally {
    await app.close();
  }
}

run(process.argv.slice(2)).then(
  (result) => {
    if (result === WRITTEN) return;
    process.stdout.write(
      result instanceof ShellExports ? `${result}\n` : `${JSON.stringify(result)}\n`,
    );
  },
  (err: unknown) => {
    if (err instanceof HelpRequest) {
      process.stdout.write(`${err.text}\n`);
    } else if (
      err instanceof UsageError ||
      (err as { code?: string })?.code?.startsWith("ERR_PARSE_ARGS")
    ) {
      // The command's own usage when it was understood, a pointer to help otherwise.
      const command = err instanceof UsageError ? err.command : undefined;
      const hint = command ? commandUsage(command) : "see: npm run --silent admin -- help";
      process.stderr.write(`${redactKeys(`error: ${(err as Error).message}`)}\n${hint}\n`);
      process.exitCode = 2;
    } else if (err instanceof CopyRefusedError) {
      process.stderr.write(`error: ${err.message}\n`);
      process.exitCode = 1;
    } else if (err instanceof DomainError) {
      process.stderr.write(`${redactKeys(`error: ${httpErrorOf(err).code}: ${err.message}`)}\n`);
      process.exitCode = 1;
    } else {
      const message = err instanceof Error ? err.message : String(err);
      process.stderr.write(`${redactKeys(`error: ${message}`)}\n`);
      process.exitCode = 1;
    }
  },
);
