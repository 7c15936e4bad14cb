/** Browser, OS and device type from a user agent, with ua-parser-js 1.x (MIT; 2.x is AGPL). */
import UAParser from "ua-parser-js";
import { memoize } from "../../lib/memo.js";

export interface UserAgentParts {
  /** e.g. `Chrome`, `Mobile Safari`, `Firefox`, `Edge`. */
  browser?: string;
  /** e.g. `Windows`, `Mac OS`, `iOS`, `Android`, `Linux`. */
  os?: string;
  /** `desktop`, `mobile`, `tablet`, `smarttv`, `console`, `wearable`, `embedded` or `xr`. */
  device?: string;
}

/**
 * Describes a user agent. ua-parser-js names a device type only for
 * non-desktop devices, so a user agent whose browser or OS is recognised but
 * whose device type is not is a desktop; one that is not recognised at all
 * has no device type.
 */
export function describeUserAgent(ua: string): UserAgentParts {
  // Parsing runs dozens of regular expressions (~60 µs); the same few hundred
  // user agents make up most traffic, so results are kept (frozen: shared).
  return describeCached(ua);
}

/** Real user agents are under 300 characters; longer ones are parsed every time. */
const UA_CACHE = { maxEntries: 4096, maxKeyLength: 512 };

const describeCached = memoize((ua: string): UserAgentParts => {
  const r = new UAParser(ua).getResult();
  const browser = r.browser.name || undefined;
  const os = r.os.name || undefined;
  const device = r.device.type || (browser || os ? "desktop" : undefined);
  return Object.freeze({ browser, os, device });
}, UA_CACHE);
