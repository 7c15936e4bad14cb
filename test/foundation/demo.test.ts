/**
 * `npm run demo` and the README walk-through it starts: a demo account, site
 * and key on the embedded store, then pageview → $identify → payment →
 * GetPayment showing the channel, against the real server started with the
 * printed ADMIN_TOKEN.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChildServer, startChildServer } from "../helpers/child-server.js";
import { runNpmScript } from "../helpers/cli.js";
import { postJson } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";

let dir: string;
let env: Record<string, string>;
let vars: Record<string, string>;
let child: ChildServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ingest-demo-"));
  // The user's shell has no ADMIN_TOKEN yet: the demo makes one.
  env = { STORE_URL: `sqlite:${join(dir, "data", "ingest.sqlite")}`, ADMIN_TOKEN: "" };
});
afterAll(async () => {
  if (child) {
    child.proc.kill("SIGTERM");
    await child.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

// The demo loads a month through a server of its own: seconds alone, more on a loaded machine.
describe("npm run demo", { timeout: scaled(120_000) }, () => {
  it("creates an account, site and key, loads a month, and prints one export line", async () => {
    const r = await runNpmScript("demo", [], env);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^export KEY=mk_live_[0-9a-f]{48} SITE=site_[0-9a-f]{24} ADMIN_TOKEN=[0-9a-f]{48} ACCOUNT=acct_[0-9a-f]{24} USER_ID=user_[0-9a-f]{24}\n$/,
    );
    expect(r.stderr).toMatch(
      /^creating a new database at .*\nloaded 30 days into site_[0-9a-f]{24} in [0-9.]+ s: \d+ visitors, \d+ events \(\d+ identify calls\), \d+ payments \(2 refunds, 1 chargeback\), \d+ Stripe deliveries\n$/,
    );
    vars = Object.fromEntries(
      r.stdout
        .trim()
        .slice("export ".length)
        .split(" ")
        .map((kv) => kv.split("=") as [string, string]),
    );
  });

  it("keeps an ADMIN_TOKEN that is already set", async () => {
    const token = "an-operator-chosen-token-42";
    const r = await runNpmScript("demo", ["--empty"], { ...env, ADMIN_TOKEN: token });
    expect(r.stdout).toMatch(new RegExp(` ADMIN_TOKEN=${token} ACCOUNT=`));
    expect(r.stderr).toBe("");
  });

  it("runs the README walk-through: pageview, $identify, payment, GetPayment with the channel", async () => {
    child = await startChildServer({
      STORE_URL: env.STORE_URL as string,
      ADMIN_TOKEN: vars.ADMIN_TOKEN as string,
    });
    const { KEY: key, SITE: site } = vars as { KEY: string; SITE: string };
    const visitor = { ip: "203.0.113.9", ua: "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0" };
    const pageview = await postJson(
      `${child.url}/api/v1/events`,
      {
        s: site,
        e: "pageview",
        u: "https://example.com/pricing?utm_source=newsletter&utm_medium=email",
        ...visitor,
      },
      { key },
    );
    expect(pageview.status).toBe(204);
    const identify = await postJson(
      `${child.url}/api/v1/events`,
      { s: site, e: "$identify", u: "https://example.com/signup", uid: "u_42", ...visitor },
      { key },
    );
    expect(identify.status).toBe(204);
    const payment = await postJson(
      `${child.url}/api/v1/payments`,
      {
        payment_id: "pay_1001",
        customer: { id: "cus_42", user_id: "u_42" },
        amount: 29.99,
        currency: "USD",
        kind: "charge",
        paid_at: "2026-01-15T10:30:00Z",
      },
      { key },
    );
    expect(payment.body).toEqual({ ok: true, data: { payment_id: "pay_1001" } });

    const read = await postJson(
      `${child.url}/ingest.v1.ReportsService/GetPayment`,
      { site_id: site, payment_id: "pay_1001" },
      { headers: { authorization: `Bearer ${vars.ADMIN_TOKEN}` } },
    );
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      payment: {
        paymentId: "pay_1001",
        channel: "Email",
        attribution: {
          channel: "Email",
          source: "newsletter",
          medium: "email",
          landingPage: "https://example.com/pricing",
          link: "user_id",
        },
      },
    });
  });
});
