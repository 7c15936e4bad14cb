/**
 * POST /api/v1/events over real HTTP: every rule of the Event table, the
 * endpoint, the errors and the limits, checked on what the client sees and
 * on what is stored.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { computeVisitorId, utcDay } from "../../src/domain/events/visitor-id.js";
import { utcMonth } from "../../src/domain/plans.js";
import type { Store } from "../../src/store/port.js";
import {
  BROWSER_UA,
  batchOf,
  envelope,
  IPHONE_UA,
  listEvents,
  pageview,
  sendEvents,
} from "../helpers/events.js";
import { createTenant, createTestClock, postJson, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const SCALE_CEILING = 20_000_000;

let commits = 0;
const clock = createTestClock();

const ctx = useTestServer({
  clock,
  wrapStore: (store: Store): Store => ({
    ...store,
    commitEvents(groups) {
      commits++;
      return store.commitEvents(groups);
    },
  }),
});

/** A fresh tenant, for tests that count what is stored. */
const fresh = (options: Parameters<typeof createTenant>[1] = {}) =>
  createTenant(ctx.server, options);

describe("recording", () => {
  it("records a pageview with the forwarded ip and ua, enriched", async () => {
    const t = await fresh();
    const before = ctx.clock.now();
    const res = await sendEvents(
      ctx.url,
      t,
      {
        s: t.siteId,
        e: "pageview",
        u: "https://www.example.com/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=launch&utm_term=crm&utm_content=hero&gclid=abc123&fbclid=fb1",
        r: "https://news.ycombinator.com/item?id=1",
        t: "Pricing",
        w: 1280,
        l: "en-GB",
        p: { plan: "pro", n: 2 },
        ip: "81.2.69.142",
        ua: IPHONE_UA,
      },
      // The server's own client is a library: the forwarded ua is what counts.
      { "user-agent": "node-fetch/1.0" },
    );
    const after = ctx.clock.now();
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect(res.headers.get("x-quota-remaining")).toBe(String(SCALE_CEILING - 1));
    expect(res.headers.get("x-ingest-dropped")).toBeNull();

    const [ev, ...rest] = await listEvents(ctx.url, t.siteId);
    expect(rest).toHaveLength(0);
    expect(ev).toMatchObject({
      siteId: t.siteId,
      name: "pageview",
      url: "https://www.example.com/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=launch&utm_term=crm&utm_content=hero&gclid=abc123&fbclid=fb1",
      referrer: "https://news.ycombinator.com/item?id=1",
      title: "Pricing",
      width: 1280,
      language: "en-GB",
      props: { plan: "pro", n: 2 },
      country: "GB",
      browser: "Mobile Safari",
      os: "iOS",
      device: "mobile",
      referrerHost: "news.ycombinator.com",
      utmSource: "newsletter",
      utmMedium: "email",
      utmCampaign: "launch",
      utmTerm: "crm",
      utmContent: "hero",
      clickIds: { gclid: "abc123", fbclid: "fb1" },
    });
    expect(ev?.userId).toBeUndefined();
    expect(Number(ev?.ts)).toBeGreaterThanOrEqual(before);
    expect(Number(ev?.ts)).toBeLessThanOrEqual(after);
    expect(ev?.receivedAt).toBe(ev?.ts);
    expect(ev?.visitorId).toMatch(/^[0-9a-f]{32}$/);
  });

  it("stores a batch of 50, in order, counting 50", async () => {
    const t = await fresh();
    const res = await sendEvents(ctx.url, t, batchOf(t.siteId, 50));
    expect(res.status).toBe(204);
    expect(res.headers.get("x-quota-remaining")).toBe(String(SCALE_CEILING - 50));
    const stored = await listEvents(ctx.url, t.siteId);
    expect(stored.map((e) => e.props?.i)).toEqual(Array.from({ length: 50 }, (_, i) => 49 - i));
    expect(await ctx.store.getUsage(t.accountId, utcMonth(ctx.clock.now()))).toBe(50);
  });

  it("accepts a batch of one and batch elements that repeat the site", async () => {
    const t = await fresh();
    const res = await sendEvents(ctx.url, t, {
      s: t.siteId,
      b: [{ s: t.siteId, e: "signup", u: "https://example.com/" }],
    });
    expect(res.status).toBe(204);
    expect((await listEvents(ctx.url, t.siteId)).map((e) => e.name)).toEqual(["signup"]);
  });

  it("$identify links the visitor to the uid and is not counted", async () => {
    const t = await fresh();
    const visitor = { ip: "203.0.113.7", ua: BROWSER_UA };
    expect((await sendEvents(ctx.url, t, pageview(t.siteId, visitor))).status).toBe(204);
    const res = await sendEvents(
      ctx.url,
      t,
      pageview(t.siteId, { ...visitor, e: "$identify", uid: "user-42" }),
    );
    expect(res.status).toBe(204);
    // Still one counted event.
    expect(res.headers.get("x-quota-remaining")).toBe(String(SCALE_CEILING - 1));
    const [identify, view] = await listEvents(ctx.url, t.siteId);
    expect(identify).toMatchObject({ name: "$identify", userId: "user-42" });
    expect(identify?.visitorId).toBe(view?.visitorId);
    const links = await ctx.store.findVisitorsByUser(t.siteId, "user-42");
    expect(links).toEqual([
      { siteId: t.siteId, userId: "user-42", visitorId: view?.visitorId, ts: Number(identify?.ts) },
    ]);
  });
});

describe("refusals", () => {
  it("refuses 51 events and stores none", async () => {
    const t = await fresh();
    const res = await sendEvents(ctx.url, t, batchOf(t.siteId, 51));
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      envelope("invalid_input", "invalid event input: b: must hold 1 to 50 events"),
    );
    expect(await listEvents(ctx.url, t.siteId)).toEqual([]);
  });

  it("refuses an empty batch", async () => {
    const res = await sendEvents(ctx.url, ctx.tenant, { s: ctx.siteId, b: [] });
    expect(res.body).toEqual(
      envelope("invalid_input", "invalid event input: b: must hold 1 to 50 events"),
    );
  });

  it("refuses a host that is not the site's, alone or in a batch, storing nothing", async () => {
    const t = await fresh();
    const res = await sendEvents(ctx.url, t, pageview(t.siteId, { u: "https://evil.com/x" }));
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      envelope(
        "invalid_input",
        "invalid event input: u: host evil.com is not one of the site's hostnames",
      ),
    );
    const batch = batchOf(t.siteId, 5);
    (batch.b[3] as Record<string, unknown>).u = "https://shop.example.com/";
    const res2 = await sendEvents(ctx.url, t, batch);
    expect(res2.body).toEqual(
      envelope(
        "invalid_input",
        "invalid event input: b[3].u: host shop.example.com is not one of the site's hostnames",
      ),
    );
    expect(await listEvents(ctx.url, t.siteId)).toEqual([]);
  });

  it("refuses an element naming another site", async () => {
    const batch = batchOf(ctx.siteId, 3);
    (batch.b[1] as Record<string, unknown>).s = "site_other";
    const res = await sendEvents(ctx.url, ctx.tenant, batch);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      envelope("invalid_input", "invalid event input: b[1].s: must be the batch's site"),
    );
  });

  it("refuses unknown fields at any depth with invalid JSON", async () => {
    const res = await sendEvents(ctx.url, ctx.tenant, pageview(ctx.siteId, { x: 1 }));
    expect(res.status).toBe(400);
    expect(res.body).toEqual(envelope("invalid_input", 'invalid JSON: unknown field "x"'));
    const batch = batchOf(ctx.siteId, 2);
    (batch.b[1] as Record<string, unknown>).referer = "typo";
    const res2 = await sendEvents(ctx.url, ctx.tenant, batch);
    expect(res2.body).toEqual(
      envelope("invalid_input", 'invalid JSON: unknown field "b[1].referer"'),
    );
  });

  it("refuses a wrong JSON type with invalid JSON", async () => {
    const res = await sendEvents(ctx.url, ctx.tenant, pageview(ctx.siteId, { w: "1280" }));
    expect(res.body).toEqual(
      envelope("invalid_input", "invalid JSON: w must be an integer, got string"),
    );
  });

  it("reports every invalid field at once, sorted", async () => {
    const res = await sendEvents(ctx.url, ctx.tenant, {
      s: ctx.siteId,
      e: "sign.up",
      u: "ftp://example.com/",
      w: 32_768,
      p: { big: "x".repeat(2100) },
      uid: "u".repeat(129),
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      envelope(
        "invalid_input",
        "invalid event input: e: must be pageview, $identify, or 1-64 letters, digits, spaces, underscores or hyphens; " +
          "p: must be a JSON object of at most 2048 bytes; " +
          "u: must be an absolute http or https URL of at most 2048 bytes; " +
          "uid: must be at most 128 bytes; " +
          "w: must be an integer from 0 to 32767",
      ),
    );
  });

  it("requires s, and event fields are not allowed beside b", async () => {
    const res = await sendEvents(ctx.url, ctx.tenant, { e: "pageview", u: "https://example.com/" });
    expect(res.body).toEqual(envelope("invalid_input", "invalid event input: s: required"));
    const res2 = await sendEvents(ctx.url, ctx.tenant, {
      ...batchOf(ctx.siteId, 1),
      ua: BROWSER_UA,
    });
    expect(res2.body).toEqual(
      envelope(
        "invalid_input",
        "invalid event input: ua: not allowed with b; set it on each event in b",
      ),
    );
  });
});

describe("order of checks: key → scope → size → JSON → site unknown → site not the key's → fields", () => {
  const url = () => `${ctx.url}/api/v1/events`;
  const big = () => `{"s":"${"x".repeat(9000)}"`; // too large and not JSON

  it("401 before everything", async () => {
    const res = await postJson(url(), big(), { headers: { "user-agent": BROWSER_UA } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(envelope("unauthorized", "missing or malformed API key"));
  });

  it("403 scope before size", async () => {
    const t = await fresh({ scopes: ["payments"] });
    const res = await sendEvents(ctx.url, t, big());
    expect(res.status).toBe(403);
    expect(res.body).toEqual(envelope("forbidden", "API key lacks the events scope"));
  });

  it("413 before JSON", async () => {
    const res = await sendEvents(ctx.url, ctx.tenant, big());
    expect(res.status).toBe(413);
    expect(res.body).toEqual(envelope("invalid_input", "request body larger than 8 KB"));
  });

  it("400 JSON before the site", async () => {
    const res = await sendEvents(ctx.url, ctx.tenant, '{"s":"site_unknown",');
    expect(res.status).toBe(400);
    expect((res.body as { error: { message: string } }).error.message).toMatch(/^invalid JSON: /);
    const res2 = await sendEvents(ctx.url, ctx.tenant, { s: "site_unknown", bogus: true });
    expect(res2.body).toEqual(envelope("invalid_input", 'invalid JSON: unknown field "bogus"'));
  });

  it("404 unknown site before fields", async () => {
    const res = await sendEvents(ctx.url, ctx.tenant, { s: "site_unknown", e: "bad!", w: -1 });
    expect(res.status).toBe(404);
    expect(res.body).toEqual(envelope("not_found", "unknown site"));
  });

  it("403 another site before fields", async () => {
    const other = await fresh();
    const res = await sendEvents(ctx.url, ctx.tenant, { s: other.siteId, e: "bad!", w: -1 });
    expect(res.status).toBe(403);
    expect(res.body).toEqual(envelope("forbidden", "api key does not belong to this site"));
  });
});

describe("limits at their boundaries", () => {
  /** A single event whose JSON body is exactly `size` bytes, padded in the title. */
  function bodyOfSize(siteId: string, size: number): string {
    const shell = JSON.stringify(pageview(siteId, { t: "" }));
    const body = shell.replace('"t":""', `"t":"${"a".repeat(size - shell.length)}"`);
    expect(Buffer.byteLength(body)).toBe(size);
    return body;
  }

  it("a body of exactly 8 KB is accepted; one byte more is 413", async () => {
    const t = await fresh();
    const ok = await sendEvents(ctx.url, t, bodyOfSize(t.siteId, 8192));
    expect(ok.status).toBe(204);
    const tooBig = await sendEvents(ctx.url, t, bodyOfSize(t.siteId, 8193));
    expect(tooBig.status).toBe(413);
    expect(tooBig.body).toEqual(envelope("invalid_input", "request body larger than 8 KB"));
    const stored = await listEvents(ctx.url, t.siteId);
    expect(stored).toHaveLength(1);
    expect(stored[0]?.title).toBe("a".repeat(512));
  });

  it("a title of 512 bytes is kept; 513 bytes are cut before the split character", async () => {
    const t = await fresh();
    const t512 = `${"ü".repeat(255)}ab`; // 255 × 2 + 2 = 512 bytes
    const t513 = `${"a".repeat(511)}ü`; // 513 bytes: the ü does not fit
    const t600 = "€".repeat(200); // 600 bytes: 170 whole euros fit
    for (const title of [t512, t513, t600]) {
      expect((await sendEvents(ctx.url, t, pageview(t.siteId, { t: title }))).status).toBe(204);
    }
    const titles = (await listEvents(ctx.url, t.siteId)).map((e) => e.title).reverse();
    expect(titles).toEqual([t512, "a".repeat(511), "€".repeat(170)]);
    expect(titles.map((x) => Buffer.byteLength(x ?? ""))).toEqual([512, 511, 510]);
  });

  it("a language tag is cut at 35 bytes", async () => {
    const t = await fresh();
    await sendEvents(ctx.url, t, pageview(t.siteId, { l: `${"x".repeat(34)}é` }));
    expect((await listEvents(ctx.url, t.siteId))[0]?.language).toBe("x".repeat(34));
  });

  it("ts 59 minutes old is kept, 61 minutes old is replaced by the receipt time", async () => {
    const t = await fresh();
    const now = ctx.clock.now();
    const ts59 = now - 59 * 60_000;
    const ts61 = now - 61 * 60_000;
    const inFuture = now + 5 * 60_000;
    const sent = [
      await sendEvents(ctx.url, t, pageview(t.siteId, { ts: ts59, p: { k: 59 } })),
      await sendEvents(ctx.url, t, pageview(t.siteId, { ts: ts61, p: { k: 61 } })),
      await sendEvents(ctx.url, t, pageview(t.siteId, { ts: inFuture, p: { k: 5 } })),
    ];
    // The answer says when ts was replaced.
    expect(sent.map((r) => r.headers.get("x-ingest-ts-replaced"))).toEqual([null, "1", "1"]);
    const [future, old61, old59] = await listEvents(ctx.url, t.siteId);
    expect(Number(old59?.ts)).toBe(ts59);
    expect(Number(old61?.ts)).toBe(Number(old61?.receivedAt));
    expect(Number(old61?.ts)).toBeGreaterThanOrEqual(now);
    expect(Number(future?.ts)).toBe(Number(future?.receivedAt));
  });

  it("counts the events of a batch whose ts was replaced in X-Ingest-Ts-Replaced (ts in seconds)", async () => {
    const t = await fresh();
    const seconds = Math.floor(ctx.clock.now() / 1000);
    const res = await sendEvents(ctx.url, t, {
      s: t.siteId,
      b: [
        { e: "pageview", u: "https://example.com/a", ua: BROWSER_UA, ts: seconds },
        { e: "pageview", u: "https://example.com/b", ua: BROWSER_UA },
        { e: "pageview", u: "https://example.com/c", ua: BROWSER_UA, ts: seconds + 1 },
        { e: "pageview", u: "https://example.com/d", ua: "curl/8.0", ts: seconds },
      ],
    });
    expect(res.status).toBe(204);
    // Two stored events had their ts replaced; the absent ts and the dropped bot do not count.
    expect(res.headers.get("x-ingest-ts-replaced")).toBe("2");
    expect(res.headers.get("x-ingest-dropped")).toBe("1 bot");
    const stored = await listEvents(ctx.url, t.siteId);
    expect(stored.map((e) => Number(e.ts))).toEqual(new Array(3).fill(ctx.clock.now()));
  });

  it("w 32767 is accepted, 32768 is refused", async () => {
    const t = await fresh();
    expect((await sendEvents(ctx.url, t, pageview(t.siteId, { w: 32_767 }))).status).toBe(204);
    const res = await sendEvents(ctx.url, t, pageview(t.siteId, { w: 32_768 }));
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      envelope("invalid_input", "invalid event input: w: must be an integer from 0 to 32767"),
    );
    expect((await listEvents(ctx.url, t.siteId)).map((e) => e.width)).toEqual([32_767]);
  });

  it("p of 2048 bytes is accepted, 2049 refused; u of 2048 bytes accepted, 2049 refused", async () => {
    const t = await fresh();
    const props = (n: number) => ({ k: "x".repeat(n - '{"k":""}'.length) });
    const url = (n: number) => {
      const prefix = "https://example.com/";
      return prefix + "a".repeat(n - prefix.length);
    };
    expect((await sendEvents(ctx.url, t, pageview(t.siteId, { p: props(2048) }))).status).toBe(204);
    expect((await sendEvents(ctx.url, t, pageview(t.siteId, { u: url(2048) }))).status).toBe(204);
    const res = await sendEvents(ctx.url, t, pageview(t.siteId, { p: props(2049), u: url(2049) }));
    expect(res.body).toEqual(
      envelope(
        "invalid_input",
        "invalid event input: p: must be a JSON object of at most 2048 bytes; u: must be an absolute http or https URL of at most 2048 bytes",
      ),
    );
  });
});

describe("bot filter", () => {
  it("drops a library client: 204, the header says why, nothing stored, nothing counted, no write", async () => {
    const t = await fresh();
    const before = commits;
    for (const ua of ["curl/8.4.0", "python-requests/2.31.0", "Go-http-client/1.1", ""]) {
      const res = await sendEvents(ctx.url, t, pageview(t.siteId), { "user-agent": ua });
      expect(res.status).toBe(204);
      expect(res.headers.get("x-ingest-dropped")).toBe("1 bot");
      expect(res.headers.get("x-quota-remaining")).toBe(String(SCALE_CEILING));
    }
    // A forwarded ua is checked too, whatever the caller's own header.
    const crawler = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    const res = await sendEvents(ctx.url, t, pageview(t.siteId, { ua: crawler }));
    expect(res.headers.get("x-ingest-dropped")).toBe("1 bot");
    expect(commits).toBe(before);
    expect(await listEvents(ctx.url, t.siteId)).toEqual([]);
    expect(await ctx.store.getUsage(t.accountId, utcMonth(ctx.clock.now()))).toBe(0);
  });

  it("a request without a User-Agent header and without ua is dropped", async () => {
    const t = await fresh();
    const res = await fetch(`${ctx.url}/api/v1/events`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" },
      body: JSON.stringify(pageview(t.siteId)),
    });
    // Node's fetch sends "node" as its User-Agent: a library client.
    expect(res.status).toBe(204);
    expect(res.headers.get("x-ingest-dropped")).toBe("1 bot");
  });

  it("drops only the bots of a mixed batch", async () => {
    const t = await fresh();
    const batch = batchOf(t.siteId, 4);
    (batch.b[1] as Record<string, unknown>).ua = "Wget/1.21";
    (batch.b[3] as Record<string, unknown>).ua = "okhttp/4.12.0";
    const res = await sendEvents(ctx.url, t, batch);
    expect(res.status).toBe(204);
    expect(res.headers.get("x-ingest-dropped")).toBe("2 bot");
    expect(res.headers.get("x-quota-remaining")).toBe(String(SCALE_CEILING - 2));
    expect((await listEvents(ctx.url, t.siteId)).map((e) => e.props?.i)).toEqual([2, 0]);
  });

  it("bots are checked after the fields: an invalid bot request is still 400", async () => {
    const res = await sendEvents(ctx.url, ctx.tenant, pageview(ctx.siteId, { w: -1 }), {
      "user-agent": "curl/8.4.0",
    });
    expect(res.status).toBe(400);
  });
});

describe("visitor id and privacy", () => {
  it("is the same for the same ip and ua on the same day, whoever sends them", async () => {
    const t = await fresh();
    const ip = "81.2.69.142";
    await sendEvents(ctx.url, t, pageview(t.siteId, { ip, ua: IPHONE_UA, p: { n: 1 } }));
    await sendEvents(ctx.url, t, pageview(t.siteId, { ip, ua: IPHONE_UA, p: { n: 2 } }));
    await sendEvents(ctx.url, t, pageview(t.siteId, { ip: "81.2.69.143", ua: IPHONE_UA }));
    await sendEvents(ctx.url, t, pageview(t.siteId, { ip, ua: BROWSER_UA }));
    const [otherUa, otherIp, second, first] = await listEvents(ctx.url, t.siteId);
    expect(second?.visitorId).toBe(first?.visitorId);
    expect(otherIp?.visitorId).not.toBe(first?.visitorId);
    expect(otherUa?.visitorId).not.toBe(first?.visitorId);
    // The day's salt is in the store, shared by every process.
    const salt = await ctx.store.ensureSalt(utcDay(ctx.clock.now()), "not-used");
    expect(first?.visitorId).toBe(computeVisitorId(salt, t.siteId, ip, IPHONE_UA));
  });

  it("in one batch, each event gets the id, country and browser of its own client and day", async () => {
    const t = await fresh();
    // Ten minutes after midnight: an event of 23:50 belongs to the previous day's salt.
    const midnight = Date.UTC(2026, 2, 12);
    const late = midnight - 10 * 60_000;
    clock.set(midnight + 10 * 60_000);
    try {
      const gb = { ip: "81.2.69.142", ua: IPHONE_UA };
      const nowhere = { ip: "203.0.113.7", ua: BROWSER_UA };
      const page = (i: number, extra: Record<string, unknown>) => ({
        e: "pageview",
        u: `https://example.com/${i}`,
        ...extra,
      });
      const res = await sendEvents(ctx.url, t, {
        s: t.siteId,
        b: [
          page(0, gb),
          page(1, { ...gb, ts: late }),
          page(2, nowhere),
          page(3, gb),
          page(4, { ip: gb.ip, ua: BROWSER_UA }),
          page(5, { ...gb, ts: late }),
          page(6, { ip: nowhere.ip, ua: IPHONE_UA, ts: late }),
        ],
      });
      expect(res.status).toBe(204);
      const stored = (await listEvents(ctx.url, t.siteId)).reverse();
      const today = await ctx.store.ensureSalt(utcDay(midnight), "not-used");
      const yesterday = await ctx.store.ensureSalt(utcDay(late), "not-used");
      const id = (salt: string, c: { ip: string; ua: string }) =>
        computeVisitorId(salt, t.siteId, c.ip, c.ua);
      const iphone = { country: "GB", browser: "Mobile Safari", os: "iOS", device: "mobile" };
      const chrome = { browser: "Chrome", os: "Windows", device: "desktop" };
      expect(stored.map((e) => ({ ...e, ts: undefined, receivedAt: undefined }))).toMatchObject([
        { url: "https://example.com/0", visitorId: id(today, gb), ...iphone },
        { url: "https://example.com/1", visitorId: id(yesterday, gb), ...iphone },
        { url: "https://example.com/2", visitorId: id(today, nowhere), ...chrome },
        { url: "https://example.com/3", visitorId: id(today, gb), ...iphone },
        {
          url: "https://example.com/4",
          visitorId: id(today, { ip: gb.ip, ua: BROWSER_UA }),
          country: "GB",
          ...chrome,
        },
        { url: "https://example.com/5", visitorId: id(yesterday, gb), ...iphone },
        {
          url: "https://example.com/6",
          visitorId: id(yesterday, { ip: nowhere.ip, ua: IPHONE_UA }),
          browser: iphone.browser,
          os: iphone.os,
        },
      ]);
      // Unknown is absent, not carried over from the event before.
      expect(stored[2]?.country).toBeUndefined();
      expect(stored[6]?.country).toBeUndefined();
      expect(stored.map((e) => Number(e.ts))).toEqual([
        midnight + 600_000,
        late,
        midnight + 600_000,
        midnight + 600_000,
        midnight + 600_000,
        late,
        late,
      ]);
    } finally {
      clock.set(TEST_NOW);
    }
  });

  it("never stores the raw IP", async () => {
    const t = await fresh();
    const ip = "81.2.69.160";
    await sendEvents(ctx.url, t, pageview(t.siteId, { ip, ua: IPHONE_UA }));
    const [ev] = await listEvents(ctx.url, t.siteId);
    expect(ev?.country).toBe("GB");
    expect(JSON.stringify(ev, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(
      ip,
    );
    // Nor anywhere in the database files (main file and WAL).
    for (const f of readdirSync(ctx.server.dir)) {
      expect(readFileSync(join(ctx.server.dir, f)).includes(Buffer.from(ip))).toBe(false);
    }
  });

  it("without TRUST_PROXY, X-Forwarded-For is ignored: the socket address is used", async () => {
    const t = await fresh();
    await sendEvents(ctx.url, t, pageview(t.siteId), { "x-forwarded-for": "81.2.69.142" });
    const [ev] = await listEvents(ctx.url, t.siteId);
    const salt = await ctx.store.ensureSalt(utcDay(ctx.clock.now()), "not-used");
    expect(ev?.visitorId).toBe(computeVisitorId(salt, t.siteId, "127.0.0.1", BROWSER_UA));
    expect(ev?.country).toBeUndefined();
  });
});

describe("with TRUST_PROXY", () => {
  const proxied = useTestServer({ env: { TRUST_PROXY: "127.0.0.1" } });

  it("uses X-Forwarded-For and the User-Agent header: the same visitor as a server forwarding ip and ua", async () => {
    const t = proxied.tenant;
    const ip = "2a00:1450:4001::1";
    // As the browser would arrive through the proxy.
    const viaProxy = await sendEvents(proxied.url, t, pageview(t.siteId, { p: { via: "proxy" } }), {
      "x-forwarded-for": ip,
      "user-agent": IPHONE_UA,
    });
    expect(viaProxy.status).toBe(204);
    // As a customer's server would forward it.
    const forwarded = await sendEvents(
      proxied.url,
      t,
      pageview(t.siteId, { ip: "2A00:1450:4001:0:0:0:0:1", ua: IPHONE_UA, p: { via: "server" } }),
      { "user-agent": "axios/1.6.2" },
    );
    expect(forwarded.status).toBe(204);
    const [server2, proxy] = await listEvents(proxied.url, t.siteId);
    expect(proxy?.props?.via).toBe("proxy");
    expect(server2?.visitorId).toBe(proxy?.visitorId);
    expect(proxy?.country).toBe("DE");
    expect(proxy?.device).toBe("mobile");
  });
});
