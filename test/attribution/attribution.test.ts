import { beforeEach, describe, expect, it } from "vitest";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { ADMIN_TOKEN, createTestClock, postJson, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const clock = createTestClock();
const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
const reports = () => ctx.client(ReportsService);

const ctx = useTestServer({ clock });

let visitorSeq = 0;
/** A distinct visitor: its own IP, a browser UA. */
function visitor() {
  visitorSeq += 1;
  return { ip: `198.51.100.${visitorSeq}`, ua: BROWSER_UA };
}

async function event(body: Record<string, unknown>) {
  const res = await postJson(
    `${ctx.url}/api/v1/events`,
    { s: ctx.siteId, ...body },
    { key: ctx.key },
  );
  expect(res.status).toBe(204);
}

async function pay(body: Record<string, unknown>) {
  const res = await postJson(
    `${ctx.url}/api/v1/payments`,
    {
      amount: 10,
      currency: "USD",
      kind: "charge",
      paid_at: "2026-01-15T10:30:00Z",
      ...body,
    },
    { key: ctx.key },
  );
  expect(res.status).toBe(200);
}

const minutesAgo = (m: number) => clock.now() - m * 60_000;

async function visitorIdOf(v: { ip: string; ua: string }) {
  await event({ e: "probe", u: "https://example.com/probe", ...v });
  const { events } = await reports().listEvents({ siteId: ctx.siteId, limit: 1 }, { headers });
  return events[0]?.visitorId as string;
}

/** The payment as ReportsService stores it (with its attribution), or undefined. */
const paymentOf = async (paymentId: string) =>
  (await reports().getPayment({ siteId: ctx.siteId, paymentId }, { headers })).payment;

describe("first-touch attribution", () => {
  beforeEach(() => clock.set(TEST_NOW));

  it("credits a visitor's first touch: Google search before a later newsletter link", async () => {
    const v = visitor();
    await event({
      e: "pageview",
      u: "https://example.com/",
      r: "https://www.google.com/",
      ts: minutesAgo(40),
      ...v,
    });
    await event({
      e: "pageview",
      u: "https://example.com/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=nov",
      ts: minutesAgo(20),
      ...v,
    });
    await event({ e: "$identify", u: "https://example.com/app", uid: "user-google", ...v });
    await pay({ payment_id: "pay_google", customer: { id: "cus_google", user_id: "user-google" } });

    const payment = await paymentOf("pay_google");
    expect(payment?.channel).toBe("Organic Search");
    expect(payment?.attribution).toMatchObject({
      channel: "Organic Search",
      source: "Google",
      landingPage: "https://example.com/",
      link: "user_id",
    });
  });

  it("re-attributes a payment that arrived before the $identify that links its user", async () => {
    await pay({ payment_id: "pay_early", customer: { id: "cus_early", user_id: "user-early" } });
    const before = await paymentOf("pay_early");
    expect(before?.channel).toBe("unattributed");
    expect(before?.attribution).toBeUndefined();

    const v = visitor();
    await event({
      e: "pageview",
      u: "https://example.com/?utm_source=facebook&utm_medium=paid_social",
      ts: minutesAgo(30),
      ...v,
    });
    await event({ e: "$identify", u: "https://example.com/", uid: "user-early", ...v });

    const after = await paymentOf("pay_early");
    expect(after?.channel).toBe("Paid Social");
    expect(after?.attribution).toMatchObject({ source: "facebook", link: "user_id" });
  });

  it("attributes through customer.visitor_id and keeps that link for later payments", async () => {
    const v = visitor();
    const visitorId = await visitorIdOf(v);
    await event({
      e: "pageview",
      u: "https://example.com/?gclid=abc123",
      ts: minutesAgo(50),
      ...v,
    });
    await pay({ payment_id: "pay_vid_1", customer: { id: "cus_vid", visitor_id: visitorId } });
    // A later payment names another (unknown) visitor: the first link still counts.
    await pay({ payment_id: "pay_vid_2", customer: { id: "cus_vid", visitor_id: "v-unknown" } });

    const customer = await reports().getCustomer(
      { siteId: ctx.siteId, customerId: "cus_vid" },
      { headers },
    );
    expect(customer.firstTouch).toMatchObject({ channel: "Paid Search", visitorId });
    expect(customer.visitors.map((l) => [l.visitorId, l.link])).toEqual([
      [visitorId, "visitor_id"],
      ["v-unknown", "visitor_id"],
    ]);
    for (const id of ["pay_vid_1", "pay_vid_2"]) {
      const payment = await paymentOf(id);
      expect(payment?.channel).toBe("Paid Search");
    }
  });

  it("credits the earliest touch among all linked visitors", async () => {
    const phone = visitor();
    const laptop = visitor();
    await event({
      e: "pageview",
      u: "https://example.com/",
      r: "https://t.co/x",
      ts: minutesAgo(55),
      ...phone,
    });
    await event({
      e: "pageview",
      u: "https://example.com/",
      r: "https://www.bing.com/",
      ts: minutesAgo(45),
      ...laptop,
    });
    await event({ e: "$identify", u: "https://example.com/", uid: "user-two-devices", ...phone });
    await event({ e: "$identify", u: "https://example.com/", uid: "user-two-devices", ...laptop });
    await pay({ payment_id: "pay_two", customer: { id: "cus_two", user_id: "user-two-devices" } });
    const payment = await paymentOf("pay_two");
    expect(payment?.attribution).toMatchObject({
      channel: "Organic Social",
      source: "X (Twitter)",
    });
  });

  it("does not take an internal pageview as a new touch", async () => {
    const v = visitor();
    await event({
      e: "pageview",
      u: "https://example.com/a",
      r: "https://news.ycombinator.com/",
      ts: minutesAgo(30),
      ...v,
    });
    await event({
      e: "pageview",
      u: "https://example.com/b",
      r: "https://example.com/a",
      ts: minutesAgo(29),
      ...v,
    });
    await event({ e: "$identify", u: "https://example.com/b", uid: "user-internal", ...v });
    await pay({
      payment_id: "pay_internal",
      customer: { id: "cus_internal", user_id: "user-internal" },
    });
    const payment = await paymentOf("pay_internal");
    expect(payment?.attribution).toMatchObject({ landingPage: "https://example.com/a" });
  });

  it("is idempotent: re-sending a payment keeps its attribution", async () => {
    await pay({
      payment_id: "pay_google",
      customer: { id: "cus_google", user_id: "user-google" },
      amount: 12,
    });
    const payment = await paymentOf("pay_google");
    expect(payment?.channel).toBe("Organic Search");
    expect(payment?.amount?.decimal).toBe("12.00");
  });
});

describe("a visit that crosses UTC midnight", () => {
  // The night after TEST_NOW; the visitor-id salt changes at this instant.
  const MIDNIGHT = Date.UTC(2026, 2, 12);
  const at = (minutesFromMidnight: number) => MIDNIGHT + minutesFromMidnight * 60_000;
  const lastEvent = async () =>
    (await reports().listEvents({ siteId: ctx.siteId, limit: 1 }, { headers })).events[0];

  it("an event of 23:50 received at 00:10 keeps the previous day's visitor id", async () => {
    const v = visitor();
    clock.set(at(-5));
    const before = await visitorIdOf(v);

    clock.set(at(10));
    await event({ e: "pageview", u: "https://example.com/late", ts: at(-10), ...v });
    const late = await lastEvent();
    expect(late?.ts).toBe(BigInt(at(-10)));
    expect(late?.visitorId).toBe(before);

    // Without ts the event happened now, on the new day: a new id, unlinkable to the old one.
    await event({ e: "pageview", u: "https://example.com/now", ...v });
    const now = await lastEvent();
    expect(now?.ts).toBe(BigInt(at(10)));
    expect(now?.visitorId).not.toBe(before);
  });

  it("credits the 23:50 landing when the visitor identified before midnight and pays at 00:10", async () => {
    const v = visitor();
    clock.set(at(-10));
    await event({ e: "pageview", u: "https://example.com/", r: "https://www.google.com/", ...v });
    clock.set(at(-2));
    await event({ e: "$identify", u: "https://example.com/signup", uid: "user-night", ...v });
    clock.set(at(10));
    await pay({ payment_id: "pay_night", customer: { id: "cus_night", user_id: "user-night" } });

    expect(await paymentOf("pay_night")).toMatchObject({
      channel: "Organic Search",
      attribution: {
        channel: "Organic Search",
        source: "Google",
        landingPage: "https://example.com/",
        link: "user_id",
        touchedAt: "2026-03-11T23:50:00.000Z",
      },
    });
  });

  it("credits the 23:50 landing when the visit's events reach the service after midnight with their ts", async () => {
    const v = visitor();
    clock.set(at(10));
    // A server that batches its events sends them at 00:10 with the time they happened.
    await event({
      e: "pageview",
      u: "https://example.com/?utm_source=newsletter&utm_medium=email",
      ts: at(-10),
      ...v,
    });
    await event({
      e: "$identify",
      u: "https://example.com/",
      uid: "user-batched",
      ts: at(-5),
      ...v,
    });
    await pay({
      payment_id: "pay_batched",
      customer: { id: "cus_batched", user_id: "user-batched" },
    });

    expect((await paymentOf("pay_batched"))?.attribution).toMatchObject({
      channel: "Email",
      source: "newsletter",
      link: "user_id",
    });
  });

  it("credits Direct when the visitor identifies after midnight: ids are not linked across days", async () => {
    const v = visitor();
    clock.set(at(-10));
    await event({ e: "pageview", u: "https://example.com/", r: "https://www.google.com/", ...v });
    const yesterday = (await lastEvent())?.visitorId;
    clock.set(at(5));
    // The next page of the same visit: the new day's id, with the site itself as referrer.
    await event({
      e: "pageview",
      u: "https://example.com/signup",
      r: "https://example.com/",
      ...v,
    });
    const today = (await lastEvent())?.visitorId;
    clock.set(at(6));
    await event({ e: "$identify", u: "https://example.com/signup", uid: "user-split", ...v });
    clock.set(at(10));
    await pay({ payment_id: "pay_split", customer: { id: "cus_split", user_id: "user-split" } });

    expect(today).not.toBe(yesterday);
    // The landing was not recorded under today's id, so the internal page is all there is.
    expect(await paymentOf("pay_split")).toMatchObject({
      channel: "Direct",
      attribution: { landingPage: "https://example.com/signup", visitorId: today, link: "user_id" },
    });
    const customer = await reports().getCustomer(
      { siteId: ctx.siteId, customerId: "cus_split" },
      { headers },
    );
    expect(customer.visitors.map((l) => l.visitorId)).toEqual([today]);
  });
});
