/**
 * The visit rule (no gap over 30 minutes), a visit's pages, duration,
 * pageviews and bounce, and the touch it is.
 */
import { describe, expect, it } from "vitest";
import {
  splitVisits,
  VISIT_GAP_MS,
  type VisitEvent,
  visitOf,
  visitsOf,
} from "../../../../src/domain/analytics/visits.js";

const HOSTS = ["example.com"];
const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const MIN = 60_000;

function ev(
  ts: number,
  name = "pageview",
  url = "https://example.com/",
  extra: Partial<VisitEvent> = {},
): VisitEvent {
  return { ts, name, url, ...extra };
}

describe("visits", () => {
  it("keeps events at most 30 minutes apart in one visit and splits on a longer gap", () => {
    const a = ev(T0);
    const b = ev(T0 + VISIT_GAP_MS);
    const c = ev(T0 + 2 * VISIT_GAP_MS + 1);
    expect(splitVisits([c, a, b])).toEqual([[a, b], [c]]);
  });

  it("leaves $identify out of visits: it neither starts nor extends one", () => {
    const a = ev(T0);
    const id = ev(T0 + 20 * MIN, "$identify");
    const b = ev(T0 + 40 * MIN);
    expect(splitVisits([a, id, b])).toEqual([[a], [b]]);
    expect(splitVisits([id])).toEqual([]);
  });

  it("reads landing and exit pages without query or fragment, duration, pageviews and bounce", () => {
    const v = visitOf(
      [
        ev(T0, "signup", "https://example.com/x"),
        ev(T0 + MIN, "pageview", "https://example.com/pricing?utm_source=x#top"),
        ev(T0 + 3 * MIN, "pageview", "https://example.com/checkout"),
        ev(T0 + 5 * MIN, "purchase", "https://example.com/done"),
      ],
      HOSTS,
    );
    expect(v.landingPage).toBe("https://example.com/pricing");
    expect(v.exitPage).toBe("https://example.com/checkout");
    expect(v.durationMs).toBe(5 * MIN);
    expect(v.pageviews).toBe(2);
    expect(v.bounce).toBe(false);
    expect([v.start, v.end]).toEqual([T0, T0 + 5 * MIN]);
  });

  it("is a bounce with exactly one event, and not with a pageview and a custom event", () => {
    expect(visitOf([ev(T0)], HOSTS).bounce).toBe(true);
    expect(visitOf([ev(T0, "signup")], HOSTS).bounce).toBe(true);
    expect(visitOf([ev(T0), ev(T0 + 1000, "signup")], HOSTS).bounce).toBe(false);
  });

  it("takes the visit's touch from its first event by the channel rules", () => {
    const [v] = visitsOf(
      [
        ev(
          T0,
          "pageview",
          "https://example.com/a?utm_source=news&utm_medium=email&utm_campaign=may&utm_term=t&utm_content=c",
          {
            referrerHost: "mail.example.org",
            utmSource: "news",
            utmMedium: "email",
            utmCampaign: "may",
            utmTerm: "t",
            utmContent: "c",
          },
        ),
        ev(T0 + MIN, "pageview", "https://example.com/b", { referrerHost: "www.google.com" }),
      ],
      HOSTS,
    );
    expect(v?.touch).toEqual({
      ts: T0,
      channel: "Email",
      source: "news",
      medium: "email",
      campaign: "may",
      term: "t",
      content: "c",
      landingPage: "https://example.com/a",
      referrerHost: "mail.example.org",
      direct: false,
    });
  });

  it("is Direct without a referrer, campaign source or click id, and after an internal referrer", () => {
    const [plain] = visitsOf([ev(T0)], HOSTS);
    expect(plain?.touch).toEqual({
      ts: T0,
      channel: "Direct",
      landingPage: "https://example.com/",
      direct: true,
    });
    const [internal] = visitsOf(
      [ev(T0, "pageview", "https://example.com/b", { referrerHost: "example.com" })],
      HOSTS,
    );
    expect(internal?.touch).toEqual({
      ts: T0,
      channel: "Direct",
      landingPage: "https://example.com/b",
      direct: true,
    });
  });

  it("is not Direct with a click id or an external referrer", () => {
    const [paid] = visitsOf(
      [ev(T0, "pageview", "https://example.com/?gclid=1", { clickIds: { gclid: "1" } })],
      HOSTS,
    );
    expect(paid?.touch.channel).toBe("Paid Search");
    expect(paid?.touch.direct).toBe(false);
    const [search] = visitsOf(
      [ev(T0, "pageview", "https://example.com/", { referrerHost: "www.google.com" })],
      HOSTS,
    );
    expect(search?.touch).toMatchObject({
      channel: "Organic Search",
      referrerHost: "www.google.com",
      direct: false,
    });
  });
});
