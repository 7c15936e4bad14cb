/**
 * The bot filter: which user agents are not people in a browser.
 *
 * isbot recognises crawlers, monitors, headless browsers and most HTTP
 * libraries. The spec also drops command-line and library HTTP clients, and
 * a caller that forgets to forward `ua` sends its own library's user agent,
 * so the first product token is checked against a list of such clients too.
 */
import { isbot } from "isbot";
import { memoize } from "../../lib/memo.js";

/**
 * First product tokens (lower case, the part before `/`, a space, `;` or `(`)
 * of HTTP clients that are not browsers. Some are also known to isbot; they
 * are listed so the rule holds whatever isbot's list becomes.
 */
const LIBRARY_CLIENTS: ReadonlySet<string> = new Set([
  "aiohttp",
  "apache-httpclient",
  "axios",
  "bun",
  "curl",
  "dart",
  "deno",
  "faraday",
  "go-http-client",
  "got",
  "guzzle",
  "guzzlehttp",
  "http.rb",
  "httpclient",
  "httpie",
  "httpx",
  "hyper",
  "insomnia",
  "java",
  "java-http-client",
  "ky",
  "libcurl",
  "libwww-perl",
  "lwp",
  "mechanize",
  "needle",
  "node",
  "node-fetch",
  "node-superagent",
  "okhttp",
  "php",
  "postmanruntime",
  "powershell",
  "python",
  "python-httpx",
  "python-requests",
  "python-urllib",
  "reqwest",
  "rest-client",
  "ruby",
  "scrapy",
  "superagent",
  "undici",
  "wget",
  "winhttp",
  "windowspowershell",
]);

/** The first product token of a user agent, lower case. */
function firstToken(ua: string): string {
  return (ua.trim().split(/[/\s;(]/, 1)[0] ?? "").toLowerCase();
}

/**
 * True when events with this user agent must be dropped: no user agent (or
 * only spaces), an automated agent (isbot), or a command-line or library HTTP
 * client.
 */
export function isAutomatedUserAgent(ua: string | undefined): boolean {
  if (ua === undefined) return true;
  return isAutomatedCached(ua);
}

/** Real user agents are under 300 characters; longer ones are parsed every time. */
const UA_CACHE = { maxEntries: 4096, maxKeyLength: 512 };

// isbot's pattern is one large regular expression; the answer for a user agent never changes.
const isAutomatedCached = memoize((ua: string): boolean => {
  if (ua.trim() === "") return true;
  if (LIBRARY_CLIENTS.has(firstToken(ua))) return true;
  return isbot(ua);
}, UA_CACHE);

/** An event kept by the bot filter, with the client it is attributed to. */
export interface HumanEvent<E> {
  ev: E;
  /** The effective address (the event's `ip`, else the connection's; "" when unknown). */
  ip: string;
  /** The effective user agent (the event's `ua`, else the connection's). */
  ua: string;
}

/**
 * Step 3 of the events application: the events whose effective user agent
 * is a person's, event by event (a batch may mix visitors). `clientIp` is
 * the connection's address, canonical.
 */
export function withoutBots<E extends { ua?: string; ip?: string }>(
  events: readonly E[],
  clientIp: string | undefined,
  clientUserAgent: string | undefined,
): HumanEvent<E>[] {
  const kept: HumanEvent<E>[] = [];
  for (const ev of events) {
    const ua = ev.ua ?? clientUserAgent ?? "";
    if (isAutomatedUserAgent(ua)) continue;
    kept.push({ ev, ip: ev.ip ?? clientIp ?? "", ua });
  }
  return kept;
}
