import { describe, expect, it } from "vitest";
import { isAutomatedUserAgent } from "../../../../src/domain/events/bot-filter.js";
import { USER_AGENTS as UA } from "../../../helpers/fixtures.js";

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
