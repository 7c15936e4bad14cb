/**
 * Erasure end to end (issue 24): EraseCustomer, EraseUser and EraseVisitor
 * through real clients (Connect, grpc-js, the admin CLI) against a listening
 * server, then every read path checked for the erased data.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { auditIdHash } from "../../src/domain/erasure.js";
import { runAdminCli } from "../helpers/cli.js";
import { recordPayment, sendFrom } from "../helpers/events.js";
import { grpcJsClient, rpcError } from "../helpers/rpc-clients.js";
import { useTestServer } from "../helpers/use-test-server.js";

const logs: string[] = [];
const ctx = useTestServer({
  env: { LOG_LEVEL: "info" },
  logStream: { write: (line) => void logs.push(line) },
});

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const ADA_EMAIL = "ada.lovelace@example.com";

/** One event as a server would send it, for a browser at `ip`; one payment. */
const send = (event: Record<string, unknown>, ip: string) => sendFrom(ctx, event, ip);
const pay = (body: Record<string, unknown>) => recordPayment(ctx, body);

describe("erasure over RPC and the CLI", () => {
  const reports = () => ctx.client(ReportsService);
  const admin = () => ctx.client(AdminService);
  const headers = () => ({ headers: ctx.adminHeaders });
  let ada = "";
  let bob = "";
  let adminUser = "";
  let memberUser = "";

  beforeAll(async () => {
    adminUser = (
      await ctx.server.admin.addMember({
        accountId: ctx.tenant.accountId,
        email: "admin@example.com",
        role: "admin",
      })
    ).userId;
    memberUser = (
      await ctx.server.admin.addMember({
        accountId: ctx.tenant.accountId,
        email: "member@example.com",
        role: "member",
      })
    ).userId;
    await send(
      { e: "pageview", u: "https://example.com/ada?utm_source=newsletter" },
      "203.0.113.9",
    );
    await send({ e: "$identify", u: "https://example.com/ada", uid: "u_ada" }, "203.0.113.9");
    await send({ e: "pageview", u: "https://example.com/bob?utm_source=google" }, "203.0.113.10");
    const events = (await reports().listEvents({ siteId: ctx.siteId, limit: 10 }, headers()))
      .events;
    ada = events.find((e) => e.url.includes("/ada?"))?.visitorId ?? "";
    bob = events.find((e) => e.url.includes("/bob?"))?.visitorId ?? "";
    expect(ada).toMatch(/^[0-9a-f]{32}$/);
    expect(bob).toMatch(/^[0-9a-f]{32}$/);
    await pay({
      payment_id: "pay_ada",
      customer: {
        id: "cus_ada",
        email: ADA_EMAIL,
        name: "Ada Lovelace",
        country: "GB",
        user_id: "u_ada",
        visitor_id: ada,
        metadata: { plan: "pro" },
      },
      amount: 49,
      currency: "USD",
      kind: "charge",
      paid_at: "2026-03-11T11:00:00Z",
      metadata: { order: "A-1" },
    });
    await pay({
      payment_id: "pay_bob",
      customer: { id: "cus_bob", email: "bob@example.com", visitor_id: bob },
      amount: 10,
      currency: "USD",
      kind: "charge",
      paid_at: "2026-03-11T11:30:00Z",
    });
  });

  it("refuses members, strangers, a missing actor, an unknown site and a missing admin token, with exact codes and messages", async () => {
    const req = { siteId: ctx.siteId, customerId: "cus_ada" };
    expect(
      await rpcError(admin().eraseCustomer({ ...req, actorUserId: memberUser }, headers())),
    ).toEqual({
      code: "permission_denied",
      message: `only owners and admins can erase personal data; user ${memberUser} is a member`,
      reason: "forbidden",
    });
    expect(
      await rpcError(
        admin().eraseVisitor(
          { siteId: ctx.siteId, visitorId: ada, actorUserId: "user_nobody" },
          headers(),
        ),
      ),
    ).toEqual({
      code: "permission_denied",
      message: `user user_nobody is not a member of account ${ctx.tenant.accountId}`,
      reason: "forbidden",
    });
    expect(
      await rpcError(
        admin().eraseUser({ siteId: ctx.siteId, userId: "u_ada", actorUserId: "" }, headers()),
      ),
    ).toEqual({
      code: "invalid_argument",
      message: "the acting user id is required",
      reason: "invalid_input",
    });
    expect(
      await rpcError(
        admin().eraseCustomer({ ...req, customerId: "", actorUserId: adminUser }, headers()),
      ),
    ).toEqual({
      code: "invalid_argument",
      message: "customer_id is required",
      reason: "invalid_input",
    });
    expect(
      await rpcError(
        admin().eraseCustomer({ ...req, siteId: "site_nope", actorUserId: adminUser }, headers()),
      ),
    ).toEqual({
      code: "not_found",
      message: "site site_nope not found",
      reason: "not_found",
    });
    expect(await rpcError(admin().eraseCustomer({ ...req, actorUserId: adminUser }))).toEqual({
      code: "unauthenticated",
      message: "missing or invalid admin token",
      reason: "unauthorized",
    });
    // Nothing was erased by the refused calls.
    expect(
      (await reports().getCustomer({ siteId: ctx.siteId, customerId: "cus_ada" }, headers()))
        .customer?.email,
    ).toBe(ADA_EMAIL);
    const cli = await runAdminCli(
      ["erase", "customer", "--site", ctx.siteId, "--customer", "cus_ada", "--as", memberUser],
      { STORE_URL: `sqlite:${join(ctx.server.dir, "ingest.sqlite")}` },
    );
    expect(cli.exitCode).toBe(1);
    expect(cli.stderr).toBe(
      `error: forbidden: only owners and admins can erase personal data; user ${memberUser} is a member\n`,
    );
  });

  it("EraseCustomer (Connect) removes the customer's personal data, keeps its revenue under a pseudonym, is idempotent and logs hashes only", async () => {
    const before = await reports().getPayment(
      { siteId: ctx.siteId, paymentId: "pay_ada" },
      headers(),
    );
    const channel = before.payment?.channel;
    expect(channel).not.toBe("unattributed");
    const revenue = await reports().revenueByChannel({ siteId: ctx.siteId }, headers());

    const erased = await admin().eraseCustomer(
      { siteId: ctx.siteId, customerId: "cus_ada", actorUserId: adminUser },
      headers(),
    );
    expect({ ...erased }).toMatchObject({
      customers: 1,
      payments: 1,
      subscriptions: 0,
      customerLinks: 1,
    });

    const after = (
      await reports().getPayment({ siteId: ctx.siteId, paymentId: "pay_ada" }, headers())
    ).payment;
    expect(after?.customerId).toMatch(/^erased_[0-9a-f]{24}$/);
    expect(after?.metadata).toEqual({});
    expect(after?.attribution).toBeUndefined();
    expect(after?.channel).toBe(channel);
    expect(after?.amount?.decimal).toBe("49.00");
    expect(
      await rpcError(
        reports().getCustomer({ siteId: ctx.siteId, customerId: "cus_ada" }, headers()),
      ),
    ).toEqual({
      code: "not_found",
      message: "customer cus_ada not found",
      reason: "not_found",
    });
    // Not in the file's free space either (secure_delete), nor in the WAL (checkpointed, truncated).
    const path = join(ctx.server.dir, "ingest.sqlite");
    expect(readFileSync(path).includes(ADA_EMAIL)).toBe(false);
    expect(readFileSync(path).includes("Ada Lovelace")).toBe(false);
    expect(existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0).toBe(0);
    // Read after the WAL's check: RevenueByChannel reads the engine, whose feed first applies
    // the erasure's log entry (a write of its own to SQLite, after the erasure's checkpoint).
    expect(await reports().revenueByChannel({ siteId: ctx.siteId }, headers())).toEqual(revenue);

    const again = await admin().eraseCustomer(
      { siteId: ctx.siteId, customerId: "cus_ada", actorUserId: ctx.tenant.ownerUserId },
      headers(),
    );
    expect({ ...again }).toMatchObject({
      customers: 0,
      payments: 0,
      subscriptions: 0,
      customerLinks: 0,
    });
    const unknown = await admin().eraseCustomer(
      { siteId: ctx.siteId, customerId: "cus_never_seen", actorUserId: adminUser },
      headers(),
    );
    expect(unknown.customers).toBe(0);

    const audits = logs.map((l) => JSON.parse(l)).filter((l) => l.audit === "erasure");
    const key = await ctx.server.store.auditKey();
    const keyed = (id: string) => auditIdHash(key, id);
    expect(audits.slice(0, 2).map((a) => [a.erasure, a.id_hmac, a.counts])).toEqual([
      [
        "customer",
        keyed("cus_ada"),
        { customers: 1, payments: 1, subscriptions: 0, customerLinks: 1 },
      ],
      [
        "customer",
        keyed("cus_ada"),
        { customers: 0, payments: 0, subscriptions: 0, customerLinks: 0 },
      ],
    ]);
    // Not the unsalted SHA-256 (`echo -n cus_ada | sha256sum` would match it).
    expect(audits[0]?.id_hmac).not.toBe(sha256("cus_ada"));
    expect(JSON.stringify(audits)).not.toContain(sha256("cus_ada"));
    expect(audits[0]).toMatchObject({
      site_id: ctx.siteId,
      actor_user_id: adminUser,
      msg: "personal data erased",
    });
    for (const line of logs) {
      expect(line).not.toContain("cus_ada");
      expect(line).not.toContain(ADA_EMAIL);
    }
  });

  it("EraseVisitor (grpc-js) removes the visitor's events and first touch and re-attributes its customer from what remains", async () => {
    expect(
      (await reports().getPayment({ siteId: ctx.siteId, paymentId: "pay_bob" }, headers())).payment
        ?.channel,
    ).toBe("Organic Search");
    const grpc = grpcJsClient("admin.proto", "AdminService", ctx.server.port);
    try {
      const call = () =>
        grpc.call<Record<string, number>>(
          "EraseVisitor",
          { site_id: ctx.siteId, visitor_id: bob, actor_user_id: ctx.tenant.ownerUserId },
          ctx.adminHeaders,
        );
      // proto3 leaves zero counts off the wire (grpc-js reads them as absent).
      expect(await call()).toEqual({
        events: 1,
        touches: 1,
        customer_links: 1,
        reattributed_customers: 1,
      });
      expect(await call()).toEqual({});
    } finally {
      grpc.close();
    }
    const events = (await reports().listEvents({ siteId: ctx.siteId, limit: 10 }, headers()))
      .events;
    expect(events.map((e) => e.visitorId)).not.toContain(bob);
    expect(events).toHaveLength(2);
    const payment = (
      await reports().getPayment({ siteId: ctx.siteId, paymentId: "pay_bob" }, headers())
    ).payment;
    expect(payment?.channel).toBe("unattributed");
    expect(payment?.attribution).toBeUndefined();
    const customer = await reports().getCustomer(
      { siteId: ctx.siteId, customerId: "cus_bob" },
      headers(),
    );
    expect(customer.customer?.visitorId ?? "").toBe("");
    expect(customer.visitors).toEqual([]);
    expect(customer.customer?.email).toBe("bob@example.com");
    const revenue = await reports().revenueByChannel({ siteId: ctx.siteId }, headers());
    expect(revenue.rows.map((r) => r.channel).sort()).toContain("unattributed");
    for (const line of logs) expect(line).not.toContain(bob);
  });

  it("erase user (CLI) removes the user id's identify links and events and prints the counts", async () => {
    const env = { STORE_URL: `sqlite:${join(ctx.server.dir, "ingest.sqlite")}` };
    const args = ["erase", "user", "--site", ctx.siteId, "--user", "u_ada", "--as", adminUser];
    // The running server's feed moved the events to its analytics store, which the CLI
    // (another process) cannot open: the erasure runs in SQLite and logs their removal
    // for the server's feed; the CLI counts the events not yet moved (none here) and says so.
    await ctx.server.app.analytics?.feed.catchUp();
    const first = await runAdminCli(args, env);
    expect(first.exitCode).toBe(0);
    expect(first.json).toEqual({
      identity_links: 1,
      events: 0,
      customers: 0,
      payments: 0,
      subscriptions: 0,
      customer_links: 0,
    });
    const [auditLine, warning] = first.stderr.trim().split("\n");
    expect(JSON.parse(warning as string)).toEqual({
      warning:
        "a running server holds the analytics store: it erases the events it holds at its next batch; the counts here are of the events not yet moved to it",
    });
    const audit = JSON.parse(auditLine as string);
    expect(audit).toMatchObject({
      audit: "erasure",
      erasure: "user",
      site_id: ctx.siteId,
      // The CLI is another process on the same database: the same key, so the same value
      // as the server logs for this id, and never the plain SHA-256.
      id_hmac: auditIdHash(await ctx.server.store.auditKey(), "u_ada"),
    });
    expect(first.stderr).not.toContain(sha256("u_ada"));
    expect(first.stderr).not.toContain("u_ada");
    const events = (await reports().listEvents({ siteId: ctx.siteId, limit: 10 }, headers()))
      .events;
    expect(events.map((e) => [e.name, e.userId ?? ""])).toEqual([["pageview", ""]]);
    const second = await runAdminCli(args, env);
    expect(second.json).toMatchObject({ identity_links: 0, events: 0 });

    const visitor = await runAdminCli(
      ["erase", "visitor", "--site", ctx.siteId, "--visitor", ada, "--as", adminUser],
      env,
    );
    expect(visitor.json).toEqual({
      events: 0,
      touches: 1,
      identity_links: 0,
      customer_links: 0,
      stitches: 0,
      reattributed_customers: 0,
    });
    expect(
      (await reports().listEvents({ siteId: ctx.siteId, limit: 10 }, headers())).events,
    ).toEqual([]);
  });
});
