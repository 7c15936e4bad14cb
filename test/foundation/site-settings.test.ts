/**
 * A site's time zone, name and host names through AdminService
 * (CreateSite's time_zone, UpdateSite) over Connect, gRPC-Web and gRPC,
 * each refusal exact; a host name change applies to the very next event.
 */
import { describe, expect, it } from "vitest";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { pageview, sendEvents } from "../helpers/events.js";
import { PROTOCOLS, rpcError } from "../helpers/rpc-clients.js";
import { TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();
const CREATED_AT = new Date(TEST_NOW).toISOString();

describe.each(PROTOCOLS)("site settings over %s", (protocol) => {
  const client = () => ctx.client(AdminService, protocol);
  const headers = () => ctx.adminHeaders;

  it("creates a site in a time zone, and changes only the fields UpdateSite gives", async () => {
    const { siteId } = await client().createSite(
      { accountId: ctx.tenant.accountId, hostnames: ["Tz.Example"], timeZone: "Europe/Paris" },
      { headers: headers() },
    );
    const renamed = await client().updateSite(
      { siteId, name: "  Paris shop " },
      { headers: headers() },
    );
    expect(renamed.site).toMatchObject({
      siteId,
      accountId: ctx.tenant.accountId,
      name: "Paris shop",
      hostnames: ["tz.example"],
      timeZone: "Europe/Paris",
      createdAt: CREATED_AT,
    });
    const moved = await client().updateSite(
      { siteId, timeZone: "Asia/Kolkata", hostnames: ["tz.example", "www.tz.example"] },
      { headers: headers() },
    );
    expect(moved.site).toMatchObject({
      name: "Paris shop",
      hostnames: ["tz.example", "www.tz.example"],
      timeZone: "Asia/Kolkata",
    });
    expect(await ctx.server.store.getSite(siteId)).toMatchObject({
      name: "Paris shop",
      hostnames: ["tz.example", "www.tz.example"],
      timeZone: "Asia/Kolkata",
    });
  });

  it("shows UTC for a site created without a time zone", async () => {
    const { siteId } = await client().createSite(
      { accountId: ctx.tenant.accountId, hostnames: ["utc.example"] },
      { headers: headers() },
    );
    const r = await client().updateSite({ siteId, name: "Plain" }, { headers: headers() });
    expect(r.site?.timeZone).toBe("UTC");
    expect((await ctx.server.store.getSite(siteId))?.timeZone).toBeUndefined();
  });

  it("refuses each bad request with its exact message", async () => {
    const h = { headers: headers() };
    const a = ctx.tenant.accountId;
    const s = ctx.tenant.siteId;
    const cases: [() => Promise<unknown>, string, string][] = [
      [
        () =>
          client().createSite({ accountId: a, hostnames: ["x.example"], timeZone: "Mars/Base" }, h),
        "invalid_argument",
        "time zone Mars/Base is not a known IANA time zone",
      ],
      [
        () => client().updateSite({ siteId: s, timeZone: "europe/paris" }, h),
        "invalid_argument",
        "time zone europe/paris is not a known IANA time zone",
      ],
      [
        () => client().updateSite({ siteId: s }, h),
        "invalid_argument",
        "nothing to change: give a name, hostnames or a time zone",
      ],
      [
        () => client().updateSite({ siteId: s, name: " " }, h),
        "invalid_argument",
        "site name must be 1 to 200 characters",
      ],
      [
        () => client().updateSite({ siteId: s, hostnames: ["bad host"] }, h),
        "invalid_argument",
        'hostname "bad host" is not a valid host name',
      ],
      [
        () => client().updateSite({ siteId: "", name: "x" }, h),
        "invalid_argument",
        "site_id is required",
      ],
      [
        () => client().updateSite({ siteId: "site_nope", name: "x" }, h),
        "not_found",
        "site site_nope not found",
      ],
      [
        () =>
          client().updateSite(
            { siteId: s, name: "x" },
            { headers: { authorization: "Bearer wrong-token-0123456789" } },
          ),
        "unauthenticated",
        "missing or invalid admin token",
      ],
    ];
    for (const [call, code, message] of cases) {
      expect(await rpcError(call())).toMatchObject({ code, message });
    }
    // Nothing refused was changed.
    expect(await ctx.server.store.getSite(s)).toMatchObject({ hostnames: ctx.tenant.hostnames });
  });
});

describe("host names changed by UpdateSite", () => {
  it("apply to the next event: the new host is accepted, the dropped one refused", async () => {
    const client = ctx.client(AdminService);
    const { siteId } = ctx.tenant;
    const before = await sendEvents(
      ctx.url,
      ctx.tenant,
      pageview(siteId, { u: "https://shop.test/" }),
    );
    expect(before.status).toBe(400);
    await client.updateSite({ siteId, hostnames: ["shop.test"] }, { headers: ctx.adminHeaders });
    const after = await sendEvents(
      ctx.url,
      ctx.tenant,
      pageview(siteId, { u: "https://shop.test/" }),
    );
    expect(after.status).toBe(204);
    const dropped = await sendEvents(ctx.url, ctx.tenant, pageview(siteId));
    expect(dropped.status).toBe(400);
    expect(dropped.body).toEqual({
      ok: false,
      error: {
        code: "invalid_input",
        message: "invalid event input: u: host example.com is not one of the site's hostnames",
      },
    });
    await client.updateSite(
      { siteId, hostnames: ctx.tenant.hostnames },
      { headers: ctx.adminHeaders },
    );
  });
});
