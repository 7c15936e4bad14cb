/**
 * POST /api/v1/collect over real HTTP: CORS, text/plain and JSON bodies, the
 * visitor id answer, every error of the events endpoint (same application
 * function) plus the door's own: Origin, ip/ua from the body, the per-client
 * rate limit.
 */
import { afterAll, describe, expect, it } from "vitest";
import { secondsUntilNextMonth, utcMonth } from "../../src/domain/plans.js";
import type { EventGroup, Store } from "../../src/store/port.js";
import { BROWSER_UA, collect } from "../helpers/collect.js";
import { envelope, listEvents, pageview, presetUsage, sendEvents } from "../helpers/events.js";
import { createTenant, createTestClock } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const CORS = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers": "Retry-After, X-Ingest-Dropped, X-Request-Id",
  "cache-control": "no-store",
};

function corsOf(headers: Headers) {
  return Object.fromEntries(Object.keys(CORS).map((k) => [k, headers.get(k)]));
}

describe("collect endpoint", () => {
  const clock = createTestClock(Date.UTC(2026, 2, 14, 12, 0, 0));
  // The limit is out of the way here; it has its own tests below.
  const ctx = useTestServer({ clock, env: { COLLECT_RATE_LIMIT: "100000" } });

  it("answers the CORS preflight for any origin", async () => {
    const res = await fetch(`${ctx.url}/api/v1/collect`, {
      method: "OPTIONS",
      headers: {
        origin: "https://anything.test",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
      },
    });
    expect(res.status).toBe(204);
    expect(corsOf(res.headers)).toEqual(CORS);
    expect(res.headers.get("access-control-allow-methods")).toBe("POST");
    expect(res.headers.get("access-control-allow-headers")).toBe("Content-Type");
    expect(res.headers.get("access-control-max-age")).toBe("86400");
    expect(res.headers.get("access-control-allow-credentials")).toBeNull();
    expect(await res.text()).toBe("");
  });

  it("stores a text/plain pageview with the connection's ip and user agent, answering the visitor id", async () => {
    const site = await createTenant(ctx.server);
    const res = await collect(ctx.url, {
      s: site.siteId,
      e: "pageview",
      u: "https://example.com/pricing?utm_source=newsletter&utm_medium=email",
      r: "https://news.example.org/today",
      t: "Pricing",
      w: 1280,
      l: "en-GB",
    });
    expect(res.status).toBe(200);
    expect(corsOf(res.headers)).toEqual(CORS);
    expect(res.headers.get("x-quota-remaining")).toBeNull();
    const visitorId = (res.body as { data: { visitor_id: string } }).data.visitor_id;
    expect(res.body).toEqual({
      ok: true,
      data: { visitor_id: expect.stringMatching(/^[0-9a-f]{32}$/) },
    });

    const [stored] = await listEvents(ctx.url, site.siteId);
    expect(stored).toMatchObject({
      name: "pageview",
      url: "https://example.com/pricing?utm_source=newsletter&utm_medium=email",
      referrer: "https://news.example.org/today",
      referrerHost: "news.example.org",
      title: "Pricing",
      width: 1280,
      language: "en-GB",
      visitorId,
      browser: "Chrome",
      os: "Windows",
      device: "desktop",
      utmSource: "newsletter",
      utmMedium: "email",
    });
    // The same browser (address and user agent) gets the same id; another user agent another.
    const again = await collect(ctx.url, pageview(site.siteId));
    expect(again.body).toEqual({ ok: true, data: { visitor_id: visitorId } });
    const other = await collect(ctx.url, pageview(site.siteId), {
      "user-agent": BROWSER_UA.replace("Chrome/120", "Chrome/121"),
    });
    expect((other.body as { data: { visitor_id: string } }).data.visitor_id).not.toBe(visitorId);
  });

  it("ignores X-Forwarded-For without TRUST_PROXY: the visitor is the connection's", async () => {
    const site = await createTenant(ctx.server);
    const ids = [];
    for (const ip of ["198.51.100.1", "203.0.113.50"]) {
      const res = await collect(ctx.url, pageview(site.siteId), { "x-forwarded-for": ip });
      ids.push((res.body as { data: { visitor_id: string } }).data.visitor_id);
    }
    expect(ids[0]).toBe(ids[1]);
  });

  it("takes application/json and batches too", async () => {
    const site = await createTenant(ctx.server);
    const res = await collect(
      ctx.url,
      {
        s: site.siteId,
        b: [
          { e: "pageview", u: "https://example.com/a" },
          { e: "Signup", u: "https://example.com/a", p: { plan: "pro" } },
        ],
      },
      { "content-type": "application/json" },
    );
    expect(res.status).toBe(200);
    const events = await listEvents(ctx.url, site.siteId);
    expect(events.map((e) => [e.name, e.props])).toEqual([
      ["Signup", { plan: "pro" }],
      ["pageview", undefined],
    ]);
  });

  it("drops bots with 204 and X-Ingest-Dropped, storing nothing", async () => {
    const site = await createTenant(ctx.server);
    const res = await collect(ctx.url, pageview(site.siteId), {
      "user-agent": "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("x-ingest-dropped")).toBe("1 bot");
    expect(corsOf(res.headers)).toEqual(CORS);
    expect(await listEvents(ctx.url, site.siteId)).toEqual([]);
  });

  const errorCases: [
    string,
    () => Promise<Awaited<ReturnType<typeof collect>>>,
    number,
    string,
    string,
  ][] = [
    [
      "malformed JSON",
      () => collect(ctx.url, '{"s":'),
      400,
      "invalid_input",
      "invalid JSON: unexpected end of input at position 5",
    ],
    [
      "an unknown field",
      () => collect(ctx.url, { ...pageview(ctx.siteId), x: 1 }),
      400,
      "invalid_input",
      'invalid JSON: unknown field "x"',
    ],
    [
      "invalid fields, sorted",
      () => collect(ctx.url, { s: ctx.siteId, e: "bad!", u: "ftp://example.com/", w: -1 }),
      400,
      "invalid_input",
      "invalid event input: e: must be pageview, $identify, or 1-64 letters, digits, spaces, underscores or hyphens; u: must be an absolute http or https URL of at most 2048 bytes; w: must be an integer from 0 to 32767",
    ],
    [
      "ip and ua in the body",
      () =>
        collect(ctx.url, {
          s: ctx.siteId,
          b: [{ e: "pageview", u: "https://example.com/", ip: "not an ip", ua: "x" }],
        }),
      400,
      "invalid_input",
      "invalid event input: b[0].ip: not accepted by the collect endpoint, which takes it from the connection; b[0].ua: not accepted by the collect endpoint, which takes it from the connection",
    ],
    [
      "a single event with ip",
      () => collect(ctx.url, pageview(ctx.siteId, { ip: "203.0.113.9" })),
      400,
      "invalid_input",
      "invalid event input: ip: not accepted by the collect endpoint, which takes it from the connection",
    ],
    [
      "a page on another host",
      () => collect(ctx.url, pageview(ctx.siteId, { u: "https://evil.test/" })),
      400,
      "invalid_input",
      "invalid event input: u: host evil.test is not one of the site's hostnames",
    ],
    [
      "an Origin on another host",
      () => collect(ctx.url, pageview(ctx.siteId), { origin: "https://evil.test" }),
      400,
      "invalid_input",
      "Origin host evil.test is not one of the site's hostnames",
    ],
    [
      "an Origin whose host only ends like the site's (never a suffix match)",
      () => collect(ctx.url, pageview(ctx.siteId), { origin: "https://evil-example.com" }),
      400,
      "invalid_input",
      "Origin host evil-example.com is not one of the site's hostnames",
    ],
    [
      "an opaque Origin",
      () => collect(ctx.url, pageview(ctx.siteId), { origin: "null" }),
      400,
      "invalid_input",
      "Origin must be the http or https origin of a page on one of the site's hostnames",
    ],
    [
      "an unknown site",
      () => collect(ctx.url, pageview("site_unknown")),
      404,
      "not_found",
      "unknown site",
    ],
    [
      "a body over 8 KB",
      () => collect(ctx.url, pageview(ctx.siteId, { t: "x".repeat(8 * 1024) })),
      413,
      "invalid_input",
      "request body larger than 8 KB",
    ],
    [
      "more than 50 events",
      () =>
        collect(ctx.url, {
          s: ctx.siteId,
          b: Array.from({ length: 51 }, () => ({ e: "pageview", u: "https://example.com/" })),
        }),
      400,
      "invalid_input",
      "invalid event input: b: must hold 1 to 50 events",
    ],
  ];
  for (const [name, send, status, code, message] of errorCases) {
    it(`answers ${status} ${code} to ${name}, readable cross-origin`, async () => {
      const res = await send();
      expect({ status: res.status, body: res.body }).toEqual({
        status,
        body: envelope(code, message),
      });
      expect(corsOf(res.headers)).toEqual(CORS);
    });
  }

  it("answers 405 to other methods, with Allow", async () => {
    const res = await fetch(`${ctx.url}/api/v1/collect`);
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST, OPTIONS");
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(await res.json()).toEqual(
      envelope("method_not_allowed", "GET is not allowed on /api/v1/collect; use POST"),
    );
  });

  it("answers 415 to bodies that are neither JSON nor text", async () => {
    const res = await collect(ctx.url, "s=1", {
      "content-type": "application/x-www-form-urlencoded",
    });
    expect(res.status).toBe(415);
    expect(res.body).toEqual(envelope("invalid_input", "Content-Type must be application/json"));
    expect(corsOf(res.headers)).toEqual(CORS);
  });

  it("answers 429 quota_exceeded with Retry-After to the next UTC month", async () => {
    const site = await createTenant(ctx.server, { plan: "free" });
    await presetUsage(ctx.store, site.accountId, utcMonth(clock.now()), 11_000);
    const res = await collect(ctx.url, pageview(site.siteId));
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe(String(secondsUntilNextMonth(clock.now())));
    expect(res.body).toEqual(envelope("quota_exceeded", "monthly event quota exceeded"));
    expect(corsOf(res.headers)).toEqual(CORS);
  });
});

describe("collect back pressure", () => {
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  let entered: () => void = () => {};
  const writing = new Promise<void>((r) => {
    entered = r;
  });
  const bp = useTestServer({
    env: { INGEST_QUEUE_CAPACITY: "1" },
    wrapStore: (store: Store): Store => ({
      ...store,
      async commitEvents(groups: EventGroup[]) {
        entered();
        await gate;
        return store.commitEvents(groups);
      },
    }),
  });
  afterAll(() => release());

  it("answers 503 rate_limited with Retry-After: 2 when the ingest queue is full", async () => {
    const first = collect(bp.url, pageview(bp.siteId));
    await writing;
    const full = await collect(bp.url, pageview(bp.siteId));
    expect(full.status).toBe(503);
    expect(full.headers.get("retry-after")).toBe("2");
    expect(full.body).toEqual(envelope("rate_limited", "ingest queue is full, retry later"));
    expect(corsOf(full.headers)).toEqual(CORS);
    release();
    expect((await first).status).toBe(200);
  });
});

describe("collect rate limit (COLLECT_RATE_LIMIT per client address per minute)", () => {
  const clock = createTestClock(Date.UTC(2026, 2, 14, 12, 0, 0));
  const ctx = useTestServer({ clock, env: { COLLECT_RATE_LIMIT: "3", TRUST_PROXY: "loopback" } });

  const from = (ip: string) => ({ "x-forwarded-for": ip });

  it("answers 429 rate_limited with Retry-After past the limit, before reading the body, and refills", async () => {
    const ip = "198.51.100.7";
    for (let i = 0; i < 3; i++) {
      expect((await collect(ctx.url, pageview(ctx.siteId), from(ip))).status).toBe(200);
    }
    // Even a body that would be refused is not read once the client is over its limit.
    for (const body of [pageview(ctx.siteId), "{broken", "x".repeat(20_000)]) {
      const res = await collect(ctx.url, body, from(ip));
      expect(res.status).toBe(429);
      // 3 per minute: one request comes back every 20 seconds.
      expect(res.headers.get("retry-after")).toBe("20");
      expect(res.body).toEqual(
        envelope("rate_limited", "too many requests from this address, retry later"),
      );
      expect(corsOf(res.headers)).toEqual(CORS);
    }
    expect(await listEvents(ctx.url, ctx.siteId)).toHaveLength(3);

    // Another address has its own allowance; an IPv6 client is counted by its /64.
    expect((await collect(ctx.url, pageview(ctx.siteId), from("198.51.100.8"))).status).toBe(200);
    for (const suffix of ["1", "2", "3"]) {
      const res = await collect(ctx.url, pageview(ctx.siteId), from(`2001:db8:1:2::${suffix}`));
      expect(res.status).toBe(200);
    }
    expect(
      (await collect(ctx.url, pageview(ctx.siteId), from("2001:db8:1:2:ffff::9"))).status,
    ).toBe(429);

    clock.advance(19_000);
    expect(
      (await collect(ctx.url, pageview(ctx.siteId), from(ip))).headers.get("retry-after"),
    ).toBe("1");
    clock.advance(1_000);
    expect((await collect(ctx.url, pageview(ctx.siteId), from(ip))).status).toBe(200);
    expect((await collect(ctx.url, pageview(ctx.siteId), from(ip))).status).toBe(429);
  });

  it("never limits /api/v1/events, even for a client over its collect limit", async () => {
    const ip = "198.51.100.20";
    for (let i = 0; i < 4; i++) await collect(ctx.url, pageview(ctx.siteId), from(ip));
    expect((await collect(ctx.url, pageview(ctx.siteId), from(ip))).status).toBe(429);
    for (let i = 0; i < 5; i++) {
      const res = await sendEvents(ctx.url, ctx.tenant, pageview(ctx.siteId), from(ip));
      expect(res.status).toBe(204);
    }
  });

  it("takes the visitor's address from X-Forwarded-For of a trusted proxy", async () => {
    const ids = [];
    for (const ip of ["198.51.100.41", "198.51.100.42", "198.51.100.41"]) {
      const res = await collect(ctx.url, pageview(ctx.siteId), from(ip));
      ids.push((res.body as { data: { visitor_id: string } }).data.visitor_id);
    }
    expect(ids[0]).not.toBe(ids[1]);
    expect(ids[0]).toBe(ids[2]);
  });

  it("does not count preflights", async () => {
    const ip = "198.51.100.30";
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${ctx.url}/api/v1/collect`, {
        method: "OPTIONS",
        headers: from(ip),
      });
      expect(res.status).toBe(204);
    }
    expect((await collect(ctx.url, pageview(ctx.siteId), from(ip))).status).toBe(200);
  });
});
