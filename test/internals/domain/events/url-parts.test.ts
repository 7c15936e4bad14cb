import { describe, expect, it } from "vitest";
import { parseUrl, urlParts } from "../../../../src/domain/events/url-parts.js";

describe("url parts", () => {
  it("takes the referrer host, UTM parameters and click ids", () => {
    expect(
      urlParts(
        "https://example.com/p?utm_source=news&utm_medium=email&utm_campaign=spring+sale&utm_term=shoes&utm_content=b%C3%A4nner&gclid=G1&fbclid=F1&ScCid=S1&msclkid=M1&ttclid=T1&other=1",
        "https://WWW.Google.com:443/search?q=x",
      ),
    ).toEqual({
      referrerHost: "www.google.com",
      utmSource: "news",
      utmMedium: "email",
      utmCampaign: "spring sale",
      utmTerm: "shoes",
      utmContent: "bänner",
      clickIds: { gclid: "G1", fbclid: "F1", sccid: "S1", msclkid: "M1", ttclid: "T1" },
    });
  });

  it("leaves out what is absent or empty", () => {
    expect(urlParts("https://example.com/?utm_source=&gclid=", undefined)).toEqual({});
    expect(urlParts("https://example.com/", "not a url")).toEqual({});
    expect(urlParts("https://example.com/?gclid=a&gclid=b", "")).toEqual({
      clickIds: { gclid: "a" },
    });
  });

  it("a URL is parsed once and shared: what one event is given cannot change another's", () => {
    const url = "https://Example.com./landing?gclid=G&utm_source=x#top";
    const parsed = parseUrl(url);
    expect(parsed).toEqual({
      protocol: "https:",
      hostname: "example.com.",
      host: "example.com",
      landingPage: "https://example.com./landing",
      query: { utmSource: "x", clickIds: { gclid: "G" } },
    });
    expect(parseUrl(url)).toBe(parsed);
    expect(Object.isFrozen(parsed)).toBe(true);
    expect(Object.isFrozen(parsed?.query.clickIds)).toBe(true);
    const first = urlParts(url, undefined);
    (first.clickIds as Record<string, string>).gclid = "changed";
    first.utmSource = "changed";
    expect(urlParts(url, undefined)).toEqual({ utmSource: "x", clickIds: { gclid: "G" } });
    expect(parseUrl("not a url")).toBeUndefined();
  });
});
