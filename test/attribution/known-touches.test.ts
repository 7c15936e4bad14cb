/**
 * A pageview that cannot improve its visitor's stored first touch skips the
 * store's first-touch upsert (src/domain/attribution/known-touches.ts), and
 * one that can improve it is still written: the stored touch stays the best.
 */
import { describe, expect, it } from "vitest";
import { createKnownTouches } from "../../src/domain/attribution/known-touches.js";
import type { EventGroup, Store, VisitorTouch } from "../../src/store/port.js";
import { BROWSER_UA } from "../helpers/fixtures.js";
import { createTestClock, postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

// Noon UTC: every `ts` below falls on the clock's day, so one visitor keeps one id.
const clock = createTestClock(Date.UTC(2026, 2, 10, 12));
/** Candidate touches per committed group, in commit order. */
const written: number[] = [];

const ctx = useTestServer({
  clock,
  wrapStore: (inner: Store) =>
    Object.assign(Object.create(inner) as Store, {
      commitEvents(groups: EventGroup[]) {
        for (const g of groups) written.push(g.touches?.length ?? 0);
        return inner.commitEvents(groups);
      },
    }),
});

const minutesAgo = (m: number) => clock.now() - m * 60_000;
let seq = 0;

/** Sends one pageview; returns how many touches its group carried to the store. */
async function pageview(ip: string, body: Record<string, unknown>): Promise<number> {
  const res = await postJson(
    `${ctx.url}/api/v1/events`,
    { s: ctx.siteId, e: "pageview", ip, ua: BROWSER_UA, ...body },
    { key: ctx.key },
  );
  expect(res.status).toBe(204);
  return written.at(-1) as number;
}

async function storedTouch(ip: string) {
  // The visitor id of `ip`: read back from the event just stored.
  seq += 1;
  await postJson(
    `${ctx.url}/api/v1/events`,
    { s: ctx.siteId, e: `probe ${seq}`, u: "https://example.com/", ip, ua: BROWSER_UA },
    { key: ctx.key },
  );
  const [last] = await ctx.store.listEvents(ctx.siteId, 1);
  const [touch] = await ctx.store.getFirstTouches(ctx.siteId, [last?.visitorId as string]);
  return touch;
}

describe("first-touch writes only when they can change something", () => {
  it("skips touches that cannot beat the stored one and writes those that can", async () => {
    const ip = "198.51.100.201";
    const google = { u: "https://example.com/", r: "https://www.google.com/" };
    expect(await pageview(ip, { ...google, ts: minutesAgo(30) })).toBe(1);
    // Later, and not better: nothing to write.
    expect(
      await pageview(ip, { u: "https://example.com/p?utm_source=news", ts: minutesAgo(20) }),
    ).toBe(0);
    expect(await pageview(ip, { ...google, ts: minutesAgo(25) })).toBe(0);
    // Internal never beats a real touch, even when earlier.
    expect(
      await pageview(ip, {
        u: "https://example.com/b",
        r: "https://example.com/a",
        ts: minutesAgo(40),
      }),
    ).toBe(0);
    expect(await storedTouch(ip)).toMatchObject({
      channel: "Organic Search",
      ts: expect.any(Number),
      internal: false,
    });
    // A late event that happened earlier is better: written, and it wins.
    const early = minutesAgo(50);
    expect(
      await pageview(ip, { u: "https://example.com/x", r: "https://www.bing.com/", ts: early }),
    ).toBe(1);
    expect(await storedTouch(ip)).toMatchObject({
      ts: early,
      landingPage: "https://example.com/x",
    });
    expect(await pageview(ip, { ...google, ts: minutesAgo(45) })).toBe(0);
  });

  it("an internal first touch is replaced by the visitor's first real one", async () => {
    const ip = "198.51.100.202";
    const internal = { u: "https://example.com/b", r: "https://example.com/a" };
    expect(await pageview(ip, { ...internal, ts: minutesAgo(10) })).toBe(1);
    expect(await pageview(ip, { ...internal, ts: minutesAgo(9) })).toBe(0);
    expect(await storedTouch(ip)).toMatchObject({ internal: true });
    expect(
      await pageview(ip, {
        u: "https://example.com/",
        r: "https://duckduckgo.com/",
        ts: minutesAgo(5),
      }),
    ).toBe(1);
    expect(await storedTouch(ip)).toMatchObject({ internal: false, channel: "Organic Search" });
  });

  it("a batch's touches are written once per visitor, then not again", async () => {
    const ips = ["198.51.100.211", "198.51.100.212", "198.51.100.213"];
    const batch = () =>
      postJson(
        `${ctx.url}/api/v1/events`,
        {
          s: ctx.siteId,
          b: ips.map((ip) => ({ e: "pageview", u: "https://example.com/", ip, ua: BROWSER_UA })),
        },
        { key: ctx.key },
      );
    expect((await batch()).status).toBe(204);
    expect(written.at(-1)).toBe(3);
    expect((await batch()).status).toBe(204);
    expect(written.at(-1)).toBe(0);
  });
});

describe("known touches in memory", () => {
  const touch = (visitorId: string, ts: number): VisitorTouch => ({
    siteId: "s",
    visitorId,
    ts,
    internal: false,
    channel: "Direct",
    landingPage: "https://example.com/",
  });

  it("holds at most maxVisitors, then starts again (candidates are written again)", () => {
    const known = createKnownTouches({ maxVisitors: 2 });
    known.remember([touch("a", 10), touch("b", 10)]);
    expect(known.filter([touch("a", 11), touch("b", 11)])).toEqual([]);
    known.remember([touch("c", 10)]);
    expect(known.filter([touch("a", 11), touch("c", 11)]).map((t) => t.visitorId)).toEqual(["a"]);
  });
});
