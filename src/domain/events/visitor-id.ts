/**
 * Visitor ids without cookies and without keeping IP addresses.
 *
 * A visitor id is HMAC-SHA256, keyed by the salt of a UTC day, over the site
 * id, the visitor's IP address and user agent. The salt is 32 random bytes
 * made by whichever process needs it first and shared through the store
 * (`ensureSalt`: first writer wins), so every process computes the same id
 * for the same visitor on the same day, and the same ip and ua give the same
 * id whether a server forwards them or the browser sends them itself. A new
 * salt each day means ids cannot be linked across days, and once a day's salt
 * is gone nobody can recompute its ids from an IP address. The raw IP is never
 * stored: only this id and the country derived from it.
 */
import { createHmac, randomBytes } from "node:crypto";
import { isIP } from "node:net";
import { type BoundedMap, createBoundedMap } from "../../lib/bounded-map.js";
import type { Store } from "../store/store.js";

/** The UTC day of a time, `YYYY-MM-DD`: the period of a salt. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * An IP address in one canonical text form, so that the same address written
 * differently (`::ffff:1.2.3.4` from a dual-stack socket, `1.2.3.4` from a
 * header; upper- or lower-case, compressed or not IPv6) hashes the same.
 * Returns undefined when `ip` is not an IPv4 or IPv6 address.
 */
export function canonicalIp(ip: string): string | undefined {
  const kind = isIP(ip);
  if (kind === 4) return ip;
  if (kind !== 6) return undefined;
  // The WHATWG URL parser serialises IPv6 hosts canonically (RFC 5952).
  const host = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (mapped) {
    const hi = Number.parseInt(mapped[1] as string, 16);
    const lo = Number.parseInt(mapped[2] as string, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return host;
}

/** The visitor id of (site, ip, ua) under a day's salt: 32 hex characters (128 bits). */
export function computeVisitorId(salt: string, siteId: string, ip: string, ua: string): string {
  // NUL separators: none of the three can contain one, so the input is unambiguous.
  return hmacId(salt, `${siteId}\u0000${ip}\u0000${ua}`);
}

function hmacId(salt: string, input: string): string {
  return createHmac("sha256", salt).update(input).digest("hex").slice(0, 32);
}

/** Visitor ids for events, with the day's salt fetched once per process and day. */
export interface VisitorIds {
  /** The visitor id of an event that happened at `atMs`, hashed with that UTC day's salt. */
  visitorId(siteId: string, ip: string, ua: string, atMs: number): Promise<string>;
}

/** Days of salts kept in memory: enough for today, yesterday and a minute of tomorrow. */
const CACHED_DAYS = 3;

/**
 * Visitor ids remembered per day: a visitor sends several events, and the
 * HMAC was a tenth of a batched event's CPU. They go with their day's salt
 * (never longer), and a day keeps at most this many, the recently used.
 * Inputs longer than MEMO_MAX_INPUT characters (odd user agents) are not
 * kept, so a day's memory stays under about 20 MB (about 8 MB with real
 * user agents).
 */
const MEMO_PER_DAY = 32_768;
const MEMO_MAX_INPUT = 256;

const DAY_MS = 86_400_000;

export function createVisitorIds(
  store: Pick<Store, "ensureSalt" | "pruneSalts">,
  newSalt: () => string = () => randomBytes(32).toString("base64url"),
): VisitorIds {
  // A salt never changes once stored, so caching it per day is safe; the
  // promise is cached so concurrent first requests ask the store once.
  const salts = new Map<string, Promise<string>>();
  // Settled salts and each day's remembered ids, read without waiting for a promise.
  const ready = new Map<string, string>();
  const memo = new Map<string, BoundedMap<string, string>>();
  const saltOf = (day: string): Promise<string> => {
    let salt = salts.get(day);
    if (!salt) {
      salt = store.ensureSalt(day, newSalt());
      salts.set(day, salt);
      salt.then(
        (v) => {
          if (salts.has(day)) ready.set(day, v);
        },
        () => salts.delete(day),
      );
      // Only the previous day's salt is kept (for late events); older ones are
      // deleted so their visitor ids can never be recomputed from an IP.
      const previous = utcDay(Date.parse(`${day}T00:00:00Z`) - 86_400_000);
      salt.then(() => store.pruneSalts(previous)).catch(() => {});
      if (salts.size > CACHED_DAYS) {
        const oldest = [...salts.keys()].sort()[0] as string;
        salts.delete(oldest);
        ready.delete(oldest);
        // A forgotten day's ids go with its salt: they must not outlive it.
        memo.delete(oldest);
      }
    }
    return salt;
  };
  // The UTC day of the last time asked: events of a request share one, so
  // the date is formatted once per day rather than once per event.
  let dayStart = 0;
  let dayEnd = 0;
  let dayName = "";
  const dayOf = (ms: number): string => {
    if (ms >= dayStart && ms < dayEnd) return dayName;
    dayStart = ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
    dayEnd = dayStart + DAY_MS;
    dayName = utcDay(dayStart);
    return dayName;
  };
  return {
    async visitorId(siteId, ip, ua, atMs) {
      const day = dayOf(atMs);
      const salt = ready.get(day) ?? (await saltOf(day));
      let ids = memo.get(day);
      if (!ids) {
        // A day whose salt was dropped while this call waited keeps no ids.
        if (!salts.has(day)) return hmacId(salt, `${siteId}\u0000${ip}\u0000${ua}`);
        ids = createBoundedMap(MEMO_PER_DAY);
        memo.set(day, ids);
      }
      const input = `${siteId}\u0000${ip}\u0000${ua}`;
      if (input.length > MEMO_MAX_INPUT) return hmacId(salt, input);
      let id = ids.get(input);
      if (id === undefined) {
        id = hmacId(salt, input);
        ids.set(input, id);
      }
      return id;
    },
  };
}
