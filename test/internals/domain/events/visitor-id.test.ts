import { describe, expect, it } from "vitest";
import { isAutomatedUserAgent } from "../../../../src/domain/events/bot-filter.js";
import { bundledGeoDbPath, countryFromRecord, openGeo } from "../../../../src/domain/events/geo.js";
import { parseUrl, urlParts } from "../../../../src/domain/events/url-parts.js";
import { describeUserAgent } from "../../../../src/domain/events/user-agent.js";
import {
  canonicalIp,
  computeVisitorId,
  createVisitorIds,
  utcDay,
} from "../../../../src/domain/events/visitor-id.js";

const UA = {
  chromeWindows:
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
  safariIphone:
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
  safariIpad:
    "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
  firefoxLinux: "Mozilla/5.0 (X11; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/120.0",
  edge: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.0.0",
  chromeAndroid:
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
};

describe("bot filter", () => {
  it.each([
    "",
    "   ",
    "curl/8.4.0",
    "Wget/1.21.4",
    "python-requests/2.31.0",
    "Python-urllib/3.11",
    "python-httpx/0.25.0",
    "aiohttp/3.9.1",
    "Go-http-client/1.1",
    "node-fetch/1.0 (+https://github.com/bitinn/node-fetch)",
    "node",
    "undici",
    "axios/1.6.2",
    "okhttp/4.12.0",
    "Java/17.0.2",
    "Java-http-client/17.0.2",
    "Apache-HttpClient/4.5.14 (Java/17)",
    "libwww-perl/6.72",
    "HTTPie/3.2.2",
    "PostmanRuntime/7.36.0",
    "Dart/3.2 (dart:io)",
    "Ruby",
    "GuzzleHttp/7",
    "Deno/1.39.0",
    "Bun/1.0.20",
    "reqwest/0.11",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)",
  ])("drops %j", (ua) => {
    expect(isAutomatedUserAgent(ua)).toBe(true);
  });

  it("drops a missing user agent", () => {
    expect(isAutomatedUserAgent(undefined)).toBe(true);
  });

  it.each(Object.values(UA))("keeps a browser: %s", (ua) => {
    expect(isAutomatedUserAgent(ua)).toBe(false);
  });
});

describe("user agent", () => {
  it("names browser, OS and device type", () => {
    expect(describeUserAgent(UA.chromeWindows)).toEqual({
      browser: "Chrome",
      os: "Windows",
      device: "desktop",
    });
    expect(describeUserAgent(UA.safariIphone)).toEqual({
      browser: "Mobile Safari",
      os: "iOS",
      device: "mobile",
    });
    expect(describeUserAgent(UA.safariIpad).device).toBe("tablet");
    expect(describeUserAgent(UA.firefoxLinux)).toEqual({
      browser: "Firefox",
      os: "Linux",
      device: "desktop",
    });
    expect(describeUserAgent(UA.edge).browser).toBe("Edge");
    expect(describeUserAgent(UA.chromeAndroid)).toEqual({
      browser: "Chrome",
      os: "Android",
      device: "mobile",
    });
  });

  it("says nothing about an unknown user agent", () => {
    expect(describeUserAgent("SomethingElse")).toEqual({
      browser: undefined,
      os: undefined,
      device: undefined,
    });
  });
});

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

describe("geo", () => {
  it("finds countries in the bundled DB-IP database, IPv4 and IPv6", async () => {
    expect(bundledGeoDbPath()).toMatch(/dbip-country\.mmdb$/);
    const geo = await openGeo();
    expect(geo.country("8.8.8.8")).toBe("US");
    expect(geo.country("81.2.69.142")).toBe("GB");
    expect(geo.country("2a00:1450:4001::1")).toBe("DE");
    expect(geo.country("127.0.0.1")).toBeUndefined();
    expect(geo.country("10.1.2.3")).toBeUndefined();
    expect(geo.country("not-an-ip")).toBeUndefined();
  });

  it("reads both DB-IP and MaxMind record shapes", () => {
    expect(countryFromRecord({ country_code: "de" })).toBe("DE");
    expect(countryFromRecord({ country: { iso_code: "FR", names: { en: "France" } } })).toBe("FR");
    expect(countryFromRecord({ registered_country: { iso_code: "NL" } })).toBe("NL");
    expect(
      countryFromRecord({ country: { iso_code: "BE" }, registered_country: { iso_code: "NL" } }),
    ).toBe("BE");
    expect(countryFromRecord({ continent: { code: "EU" } })).toBeUndefined();
    expect(countryFromRecord(null)).toBeUndefined();
  });

  it("refuses a file that is not an MMDB database", async () => {
    await expect(openGeo(import.meta.filename)).rejects.toThrow();
  });
});

describe("visitor id", () => {
  it("writes an IP one way", () => {
    expect(canonicalIp("203.0.113.9")).toBe("203.0.113.9");
    expect(canonicalIp("::ffff:203.0.113.9")).toBe("203.0.113.9");
    expect(canonicalIp("::FFFF:CB00:7109")).toBe("203.0.113.9");
    expect(canonicalIp("2001:0DB8:0000:0000:0000:0000:0000:0001")).toBe("2001:db8::1");
    expect(canonicalIp("bogus")).toBeUndefined();
  });

  it("is a keyed hash of site, ip and ua", () => {
    const id = computeVisitorId("salt", "site", "1.2.3.4", "ua");
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(computeVisitorId("salt", "site", "1.2.3.4", "ua")).toBe(id);
    expect(computeVisitorId("salt2", "site", "1.2.3.4", "ua")).not.toBe(id);
    expect(computeVisitorId("salt", "site2", "1.2.3.4", "ua")).not.toBe(id);
    expect(computeVisitorId("salt", "site", "1.2.3.5", "ua")).not.toBe(id);
    expect(computeVisitorId("salt", "site", "1.2.3.4", "ua2")).not.toBe(id);
  });

  it("shares each day's salt through the store (first writer wins) and rotates at UTC midnight", async () => {
    const salts = new Map<string, string>();
    let asked = 0;
    const store = {
      async ensureSalt(day: string, candidate: string) {
        asked++;
        if (!salts.has(day)) salts.set(day, candidate);
        return salts.get(day) as string;
      },
      async pruneSalts(day: string) {
        for (const d of salts.keys()) if (d < day) salts.delete(d);
      },
    };
    // Two processes, each making its own random candidates.
    const a = createVisitorIds(store);
    const b = createVisitorIds(store);
    const day1 = Date.UTC(2025, 2, 1, 23, 59, 59, 999);
    const day2 = day1 + 1;
    expect(utcDay(day1)).toBe("2025-03-01");
    expect(utcDay(day2)).toBe("2025-03-02");
    const a1 = await a.visitorId("s", "1.2.3.4", "ua", day1);
    expect(await b.visitorId("s", "1.2.3.4", "ua", day1)).toBe(a1);
    expect(await a.visitorId("s", "1.2.3.4", "ua", day1 - 3_600_000)).toBe(a1);
    const a2 = await a.visitorId("s", "1.2.3.4", "ua", day2);
    expect(a2).not.toBe(a1);
    expect(await b.visitorId("s", "1.2.3.4", "ua", day2)).toBe(a2);
    // The previous day's salt is still there: yesterday's late events keep yesterday's id.
    expect(await a.visitorId("s", "1.2.3.4", "ua", day1)).toBe(a1);
    expect(salts.size).toBe(2);
    expect(a1).toBe(computeVisitorId(salts.get("2025-03-01") as string, "s", "1.2.3.4", "ua"));
    // Cached per process and day: two processes × two days.
    expect(asked).toBe(4);
  });

  it("remembered ids are the computed ones, for every site, ip, ua and day", async () => {
    const salts = new Map<string, string>();
    const store = {
      async ensureSalt(day: string, candidate: string) {
        if (!salts.has(day)) salts.set(day, candidate);
        return salts.get(day) as string;
      },
      async pruneSalts() {},
    };
    const ids = createVisitorIds(store);
    const t0 = Date.UTC(2025, 4, 1, 12);
    const seen = new Set<string>();
    // Twice over: the second pass is answered from memory and must agree.
    for (let pass = 0; pass < 2; pass += 1) {
      for (const at of [t0, t0 + 86_400_000, t0 - 86_400_000, t0 + 3_600_000]) {
        for (const site of ["s1", "s2"]) {
          for (const ip of ["1.2.3.4", "1.2.3.5", "2001:db8::1"]) {
            for (const ua of ["a", "b"]) {
              const id = await ids.visitorId(site, ip, ua, at);
              const salt = salts.get(utcDay(at)) as string;
              expect(id).toBe(computeVisitorId(salt, site, ip, ua));
              if (pass === 0 && at !== t0 + 3_600_000) seen.add(id);
            }
          }
        }
      }
    }
    expect(seen.size).toBe(3 * 2 * 3 * 2);
  });

  it("deletes salts older than the previous day once a new day's salt exists", async () => {
    const salts = new Map<string, string>([
      ["2025-02-27", "old"],
      ["2025-02-28", "older than yesterday"],
      ["2025-03-01", "yesterday"],
    ]);
    const store = {
      async ensureSalt(day: string, candidate: string) {
        if (!salts.has(day)) salts.set(day, candidate);
        return salts.get(day) as string;
      },
      async pruneSalts(day: string) {
        for (const d of salts.keys()) if (d < day) salts.delete(d);
      },
    };
    await createVisitorIds(store).visitorId("s", "1.2.3.4", "ua", Date.UTC(2025, 2, 2, 8));
    await new Promise((r) => setTimeout(r, 10));
    expect([...salts.keys()].sort()).toEqual(["2025-03-01", "2025-03-02"]);
  });
});
