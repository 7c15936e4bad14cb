/**
 * Persistent visitor ids (`vid`, issue 22) end to end: events and payments
 * through the REST, collect and Connect doors of a listening server, with
 * the server's injected clock moved across days; results read back through
 * ReportsService. The browser side is test/tracker/persistent-browser.test.ts.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { EventsService } from "../../gen/ingest/v1/events_pb.js";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { rpcClient, rpcError } from "../helpers/rpc-clients.js";
import {
  ADMIN_TOKEN,
  createTenant,
  createTestClock,
  postJson,
  startTestServer,
  TEST_NOW,
  type Tenant,
  type TestServer,
} from "../helpers/test-server.js";

const DAY = 86_400_000;
const VID_ERROR = "must be 16 to 64 characters of A-Z, a-z, 0-9, _ or -";
const clock = createTestClock();
let server: TestServer;
let tenant: Tenant;
const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
const reports = () =>
  createClient(ReportsService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));

beforeAll(async () => {
  server = await startTestServer({ clock });
});
beforeEach(async () => {
  clock.set(TEST_NOW);
  tenant = await createTenant(server);
});
afterAll(() => server.close());

let seq = 0;
/** A fresh vid (22 characters, like the tracker's) and a fresh network address. */
function browser() {
  seq += 1;
  return {
    vid: `Vid_${seq.toString(36).padStart(6, "0")}-abcdefghijk`,
    ip: `203.0.113.${seq}`,
    ua: BROWSER_UA,
  };
}

async function event(body: Record<string, unknown>) {
  const res = await postJson(
    `${server.url}/api/v1/events`,
    { s: tenant.siteId, ...body },
    { key: tenant.key },
  );
  expect(res.status, res.text).toBe(204);
}

async function pay(paymentId: string, customer: Record<string, unknown>) {
  const res = await postJson(
    `${server.url}/api/v1/payments`,
    {
      payment_id: paymentId,
      amount: 49,
      currency: "EUR",
      kind: "charge",
      paid_at: new Date(clock.now()).toISOString(),
      customer: { id: `cus_${paymentId}`, ...customer },
    },
    { key: tenant.key },
  );
  expect(res.status, res.text).toBe(200);
}

async function attributionOf(paymentId: string) {
  const { payment } = await reports().getPayment({ siteId: tenant.siteId, paymentId }, { headers });
  const a = payment?.attribution;
  return {
    channel: payment?.channel,
    landingPage: a?.landingPage,
    visitorId: a?.visitorId,
    via: a?.link,
    touchedAt: a?.touchedAt,
  };
}

/** The stored visitor id of the site's newest event. */
async function newestVisitorId(): Promise<string> {
  const { events } = await reports().listEvents({ siteId: tenant.siteId, limit: 1 }, { headers });
  return events[0]?.visitorId as string;
}

const NEWSLETTER = "https://example.com/?utm_source=newsletter&utm_medium=email";

describe("the vid field", () => {
  it("is refused with an exact message when it breaks the rule, on every door and per batch element", async () => {
    for (const vid of ["short", "x".repeat(65), "has space in it!!", "ünïcode-ünïcode-ü"]) {
      const res = await postJson(
        `${server.url}/api/v1/events`,
        { s: tenant.siteId, e: "pageview", u: "https://example.com/", vid },
        { key: tenant.key },
      );
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        ok: false,
        error: { code: "invalid_input", message: `invalid event input: vid: ${VID_ERROR}` },
      });
    }
    const batch = await postJson(
      `${server.url}/api/v1/events`,
      {
        s: tenant.siteId,
        b: [
          { e: "pageview", u: "https://example.com/", vid: "A".repeat(16) },
          { e: "pageview", u: "https://example.com/", vid: "A".repeat(15) },
        ],
      },
      { key: tenant.key },
    );
    expect(batch.status).toBe(400);
    expect((batch.body as { error: { message: string } }).error.message).toBe(
      `invalid event input: b[1].vid: ${VID_ERROR}`,
    );
    const collect = await postJson(`${server.url}/api/v1/collect`, {
      s: tenant.siteId,
      e: "pageview",
      u: "https://example.com/",
      vid: "a/b",
    });
    expect(collect.status).toBe(400);
    expect((collect.body as { error: { message: string } }).error.message).toBe(
      `invalid event input: vid: ${VID_ERROR}`,
    );
    const rpc = rpcClient(EventsService, server.url, "connect");
    expect(
      await rpcError(
        rpc.recordEvents(
          { s: tenant.siteId, e: "pageview", u: "https://example.com/", vid: "nope" },
          { headers: { authorization: `Bearer ${tenant.key}` } },
        ),
      ),
    ).toEqual({
      code: "invalid_argument",
      message: `invalid event input: vid: ${VID_ERROR}`,
      reason: "invalid_input",
    });
    expect(
      (await reports().listEvents({ siteId: tenant.siteId, limit: 5 }, { headers })).events,
    ).toEqual([]);
  });

  it("stores the event under p:<vid> (every door, 16 and 64 characters) and the collect answer names the vid", async () => {
    const short = "A".repeat(16);
    const long = `${"b".repeat(62)}_-`;
    await event({
      e: "pageview",
      u: "https://example.com/",
      vid: short,
      ip: "192.0.2.1",
      ua: BROWSER_UA,
    });
    expect(await newestVisitorId()).toBe(`p:${short}`);
    await event({
      b: [{ e: "Signup", u: "https://example.com/", vid: long, ip: "192.0.2.1", ua: BROWSER_UA }],
    });
    expect(await newestVisitorId()).toBe(`p:${long}`);

    const rpc = rpcClient(EventsService, server.url, "grpc");
    await rpc.recordEvents(
      {
        s: tenant.siteId,
        e: "Signup",
        u: "https://example.com/",
        vid: short,
        ip: "192.0.2.1",
        ua: BROWSER_UA,
      },
      { headers: { authorization: `Bearer ${tenant.key}` } },
    );
    expect(await newestVisitorId()).toBe(`p:${short}`);

    const collect = await postJson(
      `${server.url}/api/v1/collect`,
      { s: tenant.siteId, e: "pageview", u: "https://example.com/", vid: short },
      { headers: { "user-agent": BROWSER_UA } },
    );
    expect(collect.status).toBe(200);
    expect(collect.body).toEqual({ ok: true, data: { visitor_id: short } });
    expect(await newestVisitorId()).toBe(`p:${short}`);
  });
});

describe("cross-day first touch", () => {
  it("credits the day-0 newsletter landing after a direct return on day 3 and an identify on day 10 (payment by user id)", async () => {
    const b = browser();
    const day0 = clock.now();
    await event({ e: "pageview", u: NEWSLETTER, ...b });
    clock.advance(3 * DAY);
    await event({ e: "pageview", u: "https://example.com/pricing", ...b, ip: "198.51.100.77" });
    clock.advance(7 * DAY);
    await event({ e: "$identify", u: "https://example.com/app", uid: "user_42", ...b });
    await pay("pay_uid", { user_id: "user_42" });
    expect(await attributionOf("pay_uid")).toEqual({
      channel: "Email",
      landingPage: "https://example.com/",
      visitorId: `p:${b.vid}`,
      via: "user_id",
      touchedAt: new Date(day0).toISOString(),
    });
  });

  it("credits it by customer.visitor_id given as the cookie's vid or as the stored p:<vid>", async () => {
    const b = browser();
    await event({ e: "pageview", u: NEWSLETTER, ...b });
    clock.advance(5 * DAY);
    await event({ e: "pageview", u: "https://example.com/", ...b });
    await pay("pay_vid", { visitor_id: b.vid });
    await pay("pay_stored", { visitor_id: `p:${b.vid}` });
    for (const id of ["pay_vid", "pay_stored"]) {
      expect(await attributionOf(id)).toMatchObject({
        channel: "Email",
        visitorId: `p:${b.vid}`,
        via: "visitor_id",
        touchedAt: new Date(TEST_NOW).toISOString(),
      });
    }
  });

  it("leaves a cookieless visitor's days apart: the same journey without vid is credited to Direct", async () => {
    const b = browser();
    await event({ e: "pageview", u: NEWSLETTER, ip: b.ip, ua: b.ua });
    clock.advance(3 * DAY);
    await event({ e: "pageview", u: "https://example.com/pricing", ip: b.ip, ua: b.ua });
    await event({
      e: "$identify",
      u: "https://example.com/app",
      uid: "user_cookieless",
      ip: b.ip,
      ua: b.ua,
    });
    await pay("pay_cookieless", { user_id: "user_cookieless" });
    expect(await attributionOf("pay_cookieless")).toMatchObject({ channel: "Direct" });
  });
});

describe("stitching a day's hashed id to the persistent id", () => {
  it("credits the landing sent before consent, re-attributing a payment made before the stitch", async () => {
    const b = browser();
    const landing = clock.now() - 30 * 60_000;
    // The landing pageview, cookieless (no consent yet): stored under the daily id.
    await event({
      e: "pageview",
      u: "https://example.com/spring?utm_source=google&utm_medium=cpc&utm_campaign=spring",
      ts: landing,
      ip: b.ip,
      ua: b.ua,
    });
    const daily = await newestVisitorId();
    expect(daily).toMatch(/^[0-9a-f]{32}$/);
    await pay("pay_early", { visitor_id: b.vid });
    expect(await attributionOf("pay_early")).toMatchObject({ channel: "unattributed" });
    // Consent given: the next event carries the vid, from the same ip and user agent.
    await event({
      e: "pageview",
      u: "https://example.com/thanks",
      r: "https://example.com/spring",
      ...b,
    });
    expect(await attributionOf("pay_early")).toEqual({
      channel: "Paid Search",
      landingPage: "https://example.com/spring",
      visitorId: daily,
      via: "visitor_id",
      touchedAt: new Date(landing).toISOString(),
    });
    // Days later, a new payment by the vid alone gets the same landing.
    clock.advance(9 * DAY);
    await pay("pay_late", { visitor_id: b.vid });
    expect(await attributionOf("pay_late")).toMatchObject({
      channel: "Paid Search",
      visitorId: daily,
    });
  });

  it("joins the site server's same-day $identify with forwarded ip/ua and no vid to the persistent visitor", async () => {
    const b = browser();
    await event({ e: "pageview", u: NEWSLETTER, ...b, ip: "192.0.2.200" });
    clock.advance(4 * DAY);
    await event({ e: "pageview", u: "https://example.com/signup", ...b });
    // The server-side sign-up: no vid, the browser's ip and user agent forwarded.
    await event({
      e: "$identify",
      u: "https://example.com/signup",
      uid: "user_srv",
      ip: b.ip,
      ua: b.ua,
    });
    clock.advance(6 * DAY);
    await pay("pay_srv", { user_id: "user_srv" });
    expect(await attributionOf("pay_srv")).toMatchObject({
      channel: "Email",
      visitorId: `p:${b.vid}`,
      via: "user_id",
      touchedAt: new Date(TEST_NOW).toISOString(),
    });
  });

  it("credits a payment naming that day's daily id with the persistent visitor's earlier touch", async () => {
    const b = browser();
    await event({ e: "pageview", u: NEWSLETTER, ...b, ip: "192.0.2.201" });
    clock.advance(3 * DAY);
    await event({ e: "pageview", u: "https://example.com/", ...b });
    // A cookieless probe from the same ip and ua tells the day's hashed id.
    await event({ e: "probe", u: "https://example.com/", ip: b.ip, ua: b.ua });
    const daily = await newestVisitorId();
    await pay("pay_daily", { visitor_id: daily });
    expect(await attributionOf("pay_daily")).toMatchObject({
      channel: "Email",
      visitorId: `p:${b.vid}`,
      via: "visitor_id",
    });
  });

  it("never joins two persistent ids through one daily id", async () => {
    const first = browser();
    const second = { ...browser(), ip: first.ip };
    const landing = clock.now() - 20 * 60_000;
    // Same ip and user agent, same day: one daily id, with a cookieless landing...
    await event({
      e: "pageview",
      u: "https://example.com/?utm_source=google&utm_medium=cpc",
      ts: landing,
      ip: first.ip,
      ua: first.ua,
    });
    const daily = await newestVisitorId();
    // ...claimed by the first vid seen with it; the second vid does not get it.
    await event({ e: "pageview", u: "https://example.com/a", ...first });
    await event({ e: "pageview", u: "https://example.com/b", ...second });
    await pay("pay_second", { visitor_id: second.vid });
    expect(await attributionOf("pay_second")).toMatchObject({
      channel: "Direct",
      landingPage: "https://example.com/b",
      visitorId: `p:${second.vid}`,
    });
    await pay("pay_first", { visitor_id: first.vid });
    expect(await attributionOf("pay_first")).toMatchObject({
      channel: "Paid Search",
      visitorId: daily,
    });
  });
});
