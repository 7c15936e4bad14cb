import { describe, expect, it } from "vitest";
import { EventsService } from "../../gen/ingest/v1/events_pb.js";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { BROWSER_UA, IPHONE_UA, listEvents, presetUsage } from "../helpers/events.js";
import { PROTOCOLS, rpcError } from "../helpers/rpc-clients.js";
import { createTenant, createTestClock, type Tenant } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();

const auth = (t: Pick<Tenant, "key">) => ({ headers: { authorization: `Bearer ${t.key}` } });

describe.each(PROTOCOLS)("RecordEvents over %s", (protocol) => {
  const client = () => ctx.client(EventsService, protocol);

  it("records an enriched event and answers with the counts and the allowance", async () => {
    const t = await createTenant(ctx.server);
    const headers: Record<string, string> = {};
    const res = await client().recordEvents(
      {
        s: t.siteId,
        e: "signup",
        u: "https://example.com/welcome?utm_source=ads&msclkid=m1",
        w: 390,
        p: { plan: "pro" },
        ip: "81.2.69.142",
        ua: IPHONE_UA,
      },
      {
        ...auth(t),
        onHeader: (h) => {
          for (const [k, v] of h) headers[k] = v;
        },
      },
    );
    expect(res.accepted).toBe(1);
    expect(res.dropped).toBe(0);
    expect(res.quotaRemaining).toBe(19_999_999n);
    expect(headers["x-quota-remaining"]).toBe("19999999");
    const [ev] = await listEvents(ctx.url, t.siteId);
    expect(ev).toMatchObject({
      name: "signup",
      width: 390,
      props: { plan: "pro" },
      country: "GB",
      browser: "Mobile Safari",
      device: "mobile",
      utmSource: "ads",
      clickIds: { msclkid: "m1" },
    });
  });

  it("drops the client's own user agent as a bot when no ua is forwarded", async () => {
    const t = await createTenant(ctx.server);
    const headers: Record<string, string> = {};
    const res = await client().recordEvents(
      { s: t.siteId, e: "pageview", u: "https://example.com/" },
      {
        ...auth(t),
        onHeader: (h) => {
          for (const [k, v] of h) headers[k] = v;
        },
      },
    );
    expect({ accepted: res.accepted, dropped: res.dropped }).toEqual({ accepted: 0, dropped: 1 });
    expect(headers["x-ingest-dropped"]).toBe("1 bot");
    expect(await listEvents(ctx.url, t.siteId)).toEqual([]);
  });

  it("stores a batch of 50 and refuses 51 with the REST message", async () => {
    const t = await createTenant(ctx.server);
    const ev = (i: number) => ({ e: "pageview", u: `https://example.com/${i}`, ua: BROWSER_UA });
    const ok = await client().recordEvents(
      { s: t.siteId, b: Array.from({ length: 50 }, (_, i) => ev(i)) },
      auth(t),
    );
    expect(ok.accepted).toBe(50);
    const err = await rpcError(
      client().recordEvents(
        { s: t.siteId, b: Array.from({ length: 51 }, (_, i) => ev(i)) },
        auth(t),
      ),
    );
    expect(err).toEqual({
      code: "invalid_argument",
      message: "invalid event input: b: must hold 1 to 50 events",
      reason: "invalid_input",
    });
    expect(await listEvents(ctx.url, t.siteId)).toHaveLength(50);
  });

  it("refuses a foreign host, an unknown site, another site and a missing key", async () => {
    const other = await createTenant(ctx.server);
    const body = { s: ctx.siteId, e: "pageview", u: "https://evil.com/", ua: BROWSER_UA };
    expect(await rpcError(client().recordEvents(body, auth(ctx.tenant)))).toEqual({
      code: "invalid_argument",
      message: "invalid event input: u: host evil.com is not one of the site's hostnames",
      reason: "invalid_input",
    });
    expect(
      await rpcError(client().recordEvents({ ...body, s: "site_nope" }, auth(ctx.tenant))),
    ).toEqual({ code: "not_found", message: "unknown site", reason: "not_found" });
    expect(
      await rpcError(client().recordEvents({ ...body, s: other.siteId }, auth(ctx.tenant))),
    ).toEqual({
      code: "permission_denied",
      message: "api key does not belong to this site",
      reason: "forbidden",
    });
    expect(await rpcError(client().recordEvents(body))).toEqual({
      code: "unauthenticated",
      message: "missing or malformed API key",
      reason: "unauthorized",
    });
  });

  it("applies the ts tolerance to int64 times", async () => {
    const t = await createTenant(ctx.server);
    const now = ctx.clock.now();
    const at = (minutes: number) => BigInt(now - minutes * 60_000);
    const headers: Record<string, string> = {};
    await client().recordEvents(
      {
        s: t.siteId,
        b: [
          { e: "a", u: "https://example.com/", ua: BROWSER_UA, ts: at(59) },
          { e: "b", u: "https://example.com/", ua: BROWSER_UA, ts: at(61) },
        ],
      },
      {
        ...auth(t),
        onHeader: (h) => {
          for (const [k, v] of h) headers[k] = v;
        },
      },
    );
    expect(headers["x-ingest-ts-replaced"]).toBe("1");
    const [b, a] = await listEvents(ctx.url, t.siteId);
    expect(a?.ts).toBe(at(59));
    expect(b?.ts).toBe(b?.receivedAt);
  });
});

describe("quota over Connect", () => {
  const quota = useTestServer({
    clock: createTestClock(Date.UTC(2025, 5, 30, 23, 0, 0)),
    tenant: { plan: "free" },
  });

  it("is resource_exhausted with Retry-After", async () => {
    const t = quota.tenant;
    await presetUsage(quota.store, t.accountId, "2025-06", 11_000);
    const client = quota.client(EventsService);
    let retryAfter: string | null = null;
    try {
      await client.recordEvents(
        { s: t.siteId, e: "pageview", u: "https://example.com/", ua: BROWSER_UA },
        auth(t),
      );
    } catch (err) {
      retryAfter = (err as { metadata: Headers }).metadata.get("retry-after");
    }
    expect(retryAfter).toBe("3600");
    expect(
      await rpcError(
        client.recordEvents(
          { s: t.siteId, e: "pageview", u: "https://example.com/", ua: BROWSER_UA },
          auth(t),
        ),
      ),
    ).toEqual({
      code: "resource_exhausted",
      message: "monthly event quota exceeded",
      reason: "quota_exceeded",
    });
  });
});

describe("ReportsService.ListEvents", () => {
  const reports = () => ctx.client(ReportsService);
  const admin = { headers: ctx.adminHeaders };

  it("returns the newest first, up to the limit", async () => {
    const t = await createTenant(ctx.server);
    const client = ctx.client(EventsService);
    for (const e of ["one", "two", "three"]) {
      await client.recordEvents(
        { s: t.siteId, e, u: "https://example.com/", ua: BROWSER_UA },
        auth(t),
      );
    }
    const res = await reports().listEvents({ siteId: t.siteId, limit: 2 }, admin);
    expect(res.events.map((e) => e.name)).toEqual(["three", "two"]);
  });

  it("allows a limit of at most 1000 and needs the admin token", async () => {
    expect(
      (await reports().listEvents({ siteId: ctx.siteId, limit: 1000 }, admin)).events,
    ).toBeDefined();
    expect(
      await rpcError(reports().listEvents({ siteId: ctx.siteId, limit: 1001 }, admin)),
    ).toMatchObject({
      code: "invalid_argument",
      message: "limit must be from 1 to 1000",
    });
    expect(await rpcError(reports().listEvents({ siteId: ctx.siteId, limit: 1 }))).toMatchObject({
      code: "unauthenticated",
    });
  });
});
