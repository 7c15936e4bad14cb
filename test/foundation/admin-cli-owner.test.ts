/**
 * The admin CLI's day-one commands for an owner (issue 32): account list,
 * member list, site list, site create --timezone, site update, site
 * set-timezone, and export events|payments in NDJSON and CSV, run as the
 * README says against the store of a running server. Every refusal exact.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAdminCli } from "../helpers/cli.js";
import { sendTagged } from "../helpers/events.js";
import { postPayment } from "../helpers/payment-clients.js";
import { minimalPayment } from "../helpers/payment-fixtures.js";
import { ADMIN_TOKEN, TEST_NOW } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";
import { useTestServer, withTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();
let env: Record<string, string>;
let dir: string;
const cli = (...args: string[]) => runAdminCli(args, env);
const CREATED = new Date(TEST_NOW).toISOString();

beforeAll(() => {
  env = { STORE_URL: `sqlite:${ctx.server.dir}/ingest.sqlite` };
  dir = mkdtempSync(join(tmpdir(), "ingest-cli-export-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Each command is a process of its own (npm, tsx): a table of them takes a while on a busy machine.
describe("admin CLI: accounts, members and sites", { timeout: scaled(120_000) }, () => {
  it("lists accounts, an account's members and its sites as JSON", async () => {
    const accounts = await cli("account", "list");
    expect(accounts.exitCode).toBe(0);
    expect(accounts.json).toContainEqual({
      account_id: ctx.tenant.accountId,
      name: "Test account",
      plan: "scale",
      created_at: CREATED,
    });
    const members = await cli("member", "list", "--account", ctx.tenant.accountId);
    expect(members.json).toEqual([
      { user_id: ctx.tenant.ownerUserId, email: expect.stringMatching(/^owner-/), role: "owner" },
    ]);
    const sites = await cli("site", "list", "--account", ctx.tenant.accountId);
    expect(sites.json).toEqual([
      {
        site_id: ctx.tenant.siteId,
        account_id: ctx.tenant.accountId,
        name: null,
        hostnames: ["example.com", "www.example.com"],
        time_zone: "UTC",
        created_at: CREATED,
      },
    ]);
  });

  it("creates a site in a time zone, sets it, and updates name and hostnames", async () => {
    const created = await cli(
      "site",
      "create",
      "--account",
      ctx.tenant.accountId,
      "--hostname",
      "tz.example",
      "--timezone",
      "America/New_York",
    );
    expect(created.exitCode).toBe(0);
    const siteId = (created.json as { site_id: string }).site_id;
    const set = await cli("site", "set-timezone", "--site", siteId, "--timezone", "Asia/Tokyo");
    expect(set.json).toEqual({
      site_id: siteId,
      account_id: ctx.tenant.accountId,
      name: null,
      hostnames: ["tz.example"],
      time_zone: "Asia/Tokyo",
      // The CLI's own clock (it starts at TEST_NOW and runs).
      created_at: expect.stringMatching(/^2026-03-11T12:00:/),
    });
    const updated = await cli(
      "site",
      "update",
      "--site",
      siteId,
      "--name",
      "Tokyo shop",
      "--hostnames",
      "tz.example, WWW.tz.example",
    );
    expect(updated.exitCode).toBe(0);
    expect(updated.json).toMatchObject({
      name: "Tokyo shop",
      hostnames: ["tz.example", "www.tz.example"],
      time_zone: "Asia/Tokyo",
    });
    // What the server itself reads (its cache follows the directory version).
    expect(await ctx.server.store.getSite(siteId)).toMatchObject({
      name: "Tokyo shop",
      hostnames: ["tz.example", "www.tz.example"],
      timeZone: "Asia/Tokyo",
    });
  });

  it("refuses each bad command exactly, with exit 1 for the domain's and 2 for usage", async () => {
    const site = ctx.tenant.siteId;
    const cases: [string[], number, string][] = [
      [
        ["site", "set-timezone", "--site", site, "--timezone", "Mars/Base"],
        1,
        "error: invalid_input: time zone Mars/Base is not a known IANA time zone",
      ],
      [
        [
          "site",
          "create",
          "--account",
          ctx.tenant.accountId,
          "--hostname",
          "x.example",
          "--timezone",
          "GMT+2",
        ],
        1,
        "error: invalid_input: time zone GMT+2 is not a known IANA time zone",
      ],
      [
        ["site", "update", "--site", site],
        1,
        "error: invalid_input: nothing to change: give a name, hostnames or a time zone",
      ],
      [
        ["site", "update", "--site", site, "--hostnames", ","],
        1,
        "error: invalid_input: at least one hostname is required",
      ],
      [
        ["site", "update", "--site", "site_nope", "--name", "x"],
        1,
        "error: not_found: site site_nope not found",
      ],
      [
        ["site", "list", "--account", "acct_nope"],
        1,
        "error: not_found: account acct_nope not found",
      ],
      [
        ["member", "list", "--account", "acct_nope"],
        1,
        "error: not_found: account acct_nope not found",
      ],
    ];
    for (const [args, exitCode, stderr] of cases) {
      const r = await cli(...args);
      expect({ args, exitCode: r.exitCode, stderr: r.stderr.trim(), stdout: r.stdout }).toEqual({
        args,
        exitCode,
        stderr,
        stdout: "",
      });
    }
    const usage = await cli("member", "list");
    expect(usage.exitCode).toBe(2);
    expect(usage.stderr).toBe(
      "error: --account is required\nusage: npm run --silent admin -- member list --account ID\n\nLists an account's members: user id, email and role.\n",
    );
    const noZone = await cli("site", "set-timezone", "--site", site);
    expect(noZone.exitCode).toBe(2);
    expect(noZone.stderr.split("\n")[0]).toBe("error: --timezone is required");
    // Nothing refused was changed.
    expect(await ctx.server.store.getSite(site)).toEqual({
      id: site,
      accountId: ctx.tenant.accountId,
      hostnames: ["example.com", "www.example.com"],
      createdAt: TEST_NOW,
    });
  });
});

describe("admin CLI: export", { timeout: scaled(120_000) }, () => {
  const T = TEST_NOW - 600_000;
  const range = [`--from`, new Date(T).toISOString(), "--to", new Date(T + 10_000).toISOString()];
  const query = `site_id=${"$SITE"}&from=${new Date(T).toISOString()}&to=${new Date(T + 10_000).toISOString()}`;

  /** The REST export's body for the same site, range and format. */
  async function rest(kind: "events" | "payments", format: string): Promise<string> {
    const res = await fetch(
      `${ctx.url}/api/v1/export/${kind}?${query.replace("$SITE", ctx.siteId)}&format=${format}`,
      { headers: ctx.adminHeaders },
    );
    expect(res.status).toBe(200);
    return res.text();
  }

  beforeAll(async () => {
    await sendTagged(ctx.url, ctx.tenant, [1, 2, 3], (tag) => T + tag * 1000);
    for (const [id, at] of [
      ["pay_cli_1", T + 1000],
      ["-pay_cli_2", T + 2000],
    ] as const) {
      const res = await postPayment(
        ctx.server,
        minimalPayment({ payment_id: id, paid_at: new Date(at).toISOString(), amount: 12.5 }),
        ctx.key,
      );
      expect(res.status).toBe(200);
    }
  });

  it.each([
    ["payments", "ndjson"],
    ["payments", "csv"],
  ] as const)(
    "writes %s as %s to stdout, line for line what the REST export gives",
    async (kind, format) => {
      const r = await cli("export", kind, "--site", ctx.siteId, "--format", format, ...range);
      expect(r.exitCode).toBe(0);
      expect(r.stderr).toBe("");
      const expected = await rest(kind, format);
      expect(r.stdout).toBe(expected);
      const rows =
        format === "csv" ? expected.split("\r\n").length - 2 : expected.split("\n").length - 1;
      expect(rows).toBe(2);
    },
  );

  it("refuses to export events while the server holds the analytics store, saying where to export them", async () => {
    for (const format of ["ndjson", "csv"]) {
      const r = await cli("export", "events", "--site", ctx.siteId, "--format", format, ...range);
      expect(r).toMatchObject({
        exitCode: 1,
        stdout: "",
        stderr:
          "error: unavailable: a running server holds the analytics store, where the stored events are: export them over its REST or RPC door, or stop it first\n",
      });
    }
  });

  it("guards formula cells", async () => {
    const payments = await cli(
      "export",
      "payments",
      "--site",
      ctx.siteId,
      "--format",
      "csv",
      ...range,
    );
    expect(payments.stdout.split("\r\n")[2]).toMatch(
      /^'-pay_cli_2,cus_min,charge,succeeded,USD,12.50,/,
    );
  });

  it("writes to a new file with --out and prints a summary; never overwrites a file", async () => {
    const out = join(dir, "payments.csv");
    const r = await cli(
      "export",
      "payments",
      "--site",
      ctx.siteId,
      "--format",
      "csv",
      "--out",
      out,
      ...range,
    );
    expect(r.exitCode).toBe(0);
    expect(r.json).toEqual({ out, format: "csv", rows: 2 });
    expect(readFileSync(out, "utf8")).toBe(await rest("payments", "csv"));

    const existing = join(dir, "keep.ndjson");
    writeFileSync(existing, "mine\n");
    const again = await cli(
      "export",
      "payments",
      "--site",
      ctx.siteId,
      "--format",
      "ndjson",
      "--out",
      existing,
    );
    expect(again.exitCode).toBe(1);
    expect(again.stderr.trim()).toBe(`error: ${existing} already exists; export writes a new file`);
    expect(readFileSync(existing, "utf8")).toBe("mine\n");
  });

  it("refuses bad exports exactly, before writing anything", async () => {
    const out = join(dir, "never.csv");
    const cases: [string[], number, string][] = [
      [
        ["export", "events", "--site", ctx.siteId, "--format", "xml"],
        2,
        "error: --format must be ndjson or csv",
      ],
      [["export", "events", "--site", ctx.siteId], 2, "error: --format is required"],
      [["export", "payments", "--format", "csv"], 2, "error: --site is required"],
      [
        ["export", "events", "--site", "site_nope", "--format", "csv", "--out", out],
        1,
        "error: not_found: site site_nope not found",
      ],
      [
        [
          "export",
          "payments",
          "--site",
          ctx.siteId,
          "--format",
          "csv",
          "--from",
          "yesterday",
          "--out",
          out,
        ],
        1,
        "error: invalid_input: from: must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
      ],
      [
        [
          "export",
          "events",
          "--site",
          ctx.siteId,
          "--format",
          "csv",
          ...range.slice(2),
          "--from",
          new Date(T + 20_000).toISOString(),
        ],
        1,
        "error: invalid_input: to: must not be before from",
      ],
    ];
    for (const [args, exitCode, first] of cases) {
      const r = await cli(...args);
      expect({
        args,
        exitCode: r.exitCode,
        first: r.stderr.split("\n")[0],
        stdout: r.stdout,
      }).toEqual({
        args,
        exitCode,
        first,
        stdout: "",
      });
    }
    expect(() => readFileSync(out)).toThrow(/ENOENT/);
  });
});

describe("admin CLI: export events from a stopped server's data directory", {
  timeout: scaled(120_000),
}, () => {
  it("writes events as NDJSON and CSV, byte for byte what the REST export gave, ISO times beside", async () => {
    const T = TEST_NOW - 600_000;
    const query = `from=${new Date(T).toISOString()}&to=${new Date(T + 10_000).toISOString()}`;
    await withTestServer({}, async (server, tenant) => {
      await sendTagged(server.url, tenant, [1, 2, 3], (tag) => T + tag * 1000);
      const rest: Record<string, string> = {};
      for (const format of ["ndjson", "csv"]) {
        const res = await fetch(
          `${server.url}/api/v1/export/events?site_id=${tenant.siteId}&${query}&format=${format}`,
          { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
        );
        expect(res.status).toBe(200);
        rest[format] = await res.text();
      }
      // The server stops: its analytics file (where the events now are) is free.
      await server.app.close();
      const stopped = { STORE_URL: `sqlite:${server.dir}/ingest.sqlite` };
      for (const format of ["ndjson", "csv"]) {
        const r = await runAdminCli(
          [
            "export",
            "events",
            "--site",
            tenant.siteId,
            "--format",
            format,
            "--from",
            new Date(T).toISOString(),
            "--to",
            new Date(T + 10_000).toISOString(),
          ],
          stopped,
        );
        expect(r).toMatchObject({ exitCode: 0, stderr: "" });
        expect(r.stdout).toBe(rest[format]);
      }
      const first = JSON.parse((rest.ndjson as string).split("\n")[0] as string);
      expect(first).toMatchObject({
        ts: String(T + 3000),
        tsIso: new Date(T + 3000).toISOString(),
      });
      expect((rest.csv as string).split("\r\n").length - 2).toBe(3);
    });
  });
});
