/**
 * The field rules of the spec's Event table, for one event or a batch
 * `{s, b:[…]}`. Every broken rule is collected and reported at once, sorted
 * by field path, in one `invalid_input` error:
 * `invalid event input: b[3].u: …; e: …`.
 *
 * The body has already been checked for unknown fields and JSON types by the
 * door (REST: strict decoding; Connect: the proto), so these are the value
 * rules; the type checks here only guard direct callers.
 */
import { type DomainError, errors } from "../errors.js";
import { BODY_EVENT_FIELDS, type BodyEventFields } from "../store/event-fields.js";
import { VID_MESSAGE, VID_PATTERN } from "./persistent-visitor.js";
import { parseUrl } from "./url-parts.js";
import { truncateUtf8, utf8Length } from "./utf8.js";
import { canonicalIp } from "./visitor-id.js";

/** The spec's Limits table, in bytes, milliseconds and counts. */
export const LIMITS = {
  batchMax: 50,
  urlBytes: 2048,
  referrerBytes: 2048,
  titleBytes: 512,
  languageBytes: 35,
  uidBytes: 128,
  propsBytes: 2048,
  /** Nesting of `p`: well under protobuf's recursion limit of 100, so stored props stay readable over RPC. */
  propsDepth: 32,
  widthMax: 32_767,
  eventNameMax: 64,
  /** `ts` older than this (ms before receipt) is replaced by the receipt time. */
  tsPastMs: 60 * 60 * 1000,
  /** `ts` further ahead than this (ms after receipt) is replaced by the receipt time. */
  tsFutureMs: 60 * 1000,
} as const;

/** Every message a field can get: the one table that docs/events.md repeats. */
export const FIELD_MESSAGES = {
  required: "required",
  notString: "must be a string",
  name: `must be pageview, $identify, or 1-${LIMITS.eventNameMax} letters, digits, spaces, underscores or hyphens`,
  url: `must be an absolute http or https URL of at most ${LIMITS.urlBytes} bytes`,
  foreignHost: (host: string) => `host ${host} is not one of the site's hostnames`,
  referrer: `must be at most ${LIMITS.referrerBytes} bytes`,
  width: `must be an integer from 0 to ${LIMITS.widthMax}`,
  uidRequired: "required for $identify",
  uid: `must be at most ${LIMITS.uidBytes} bytes`,
  props: `must be a JSON object of at most ${LIMITS.propsBytes} bytes`,
  propsDepth: `must not nest objects or arrays more than ${LIMITS.propsDepth} levels deep`,
  ts: "must be an integer (Unix milliseconds)",
  ip: "must be an IPv4 or IPv6 address",
  batchSize: `must hold 1 to ${LIMITS.batchMax} events`,
  batchElement: "must be an event object",
  batchSite: "must be the batch's site",
  notWithBatch: "not allowed with b; set it on each event in b",
  fromConnection: "not accepted by the collect endpoint, which takes it from the connection",
  vid: VID_MESSAGE,
} as const;

/** The prefix of the 400 message. */
export const INVALID_EVENT_PREFIX = "invalid event input: ";

/**
 * The per-event fields (everything but `s` and `b`): the stored ones (event-fields.ts), then
 * `ip`, `ua` and `vid`, which decide the visitor id and are not stored themselves.
 */
export const EVENT_FIELDS = [...BODY_EVENT_FIELDS, "ip", "ua", "vid"] as const;

/**
 * One event that passed every rule, with truncations and `ts` applied: the
 * body's fields as the record names them (`title` at most 512 bytes,
 * `language` at most 35; `ts` the caller's when within tolerance, else the
 * receipt time), and what only the request carries.
 */
export type ValidEvent = BodyEventFields & {
  /** True when the caller sent a `ts` outside the tolerance and it was replaced. */
  tsReplaced?: true;
  /** The `ip` field in canonical form; absent when the caller did not send one. */
  ip?: string;
  /** The `ua` field as sent (may be empty); absent when the caller did not send one. */
  ua?: string;
  /** The persistent visitor id (persistent-visitor.ts); absent for cookieless events. */
  vid?: string;
};

/** A valid request: its site and its events, in order. */
export interface ValidEvents {
  siteId: string;
  /** False for the single-event form. */
  batch: boolean;
  events: ValidEvent[];
}

const CUSTOM_NAME = new RegExp(`^[\\p{L}\\p{Nd} _-]{1,${LIMITS.eventNameMax}}$`, "u");

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The site id a body names (`s`), or undefined when it is absent or empty. */
export function siteIdOf(body: Record<string, unknown>): string | undefined {
  return typeof body.s === "string" && body.s !== "" ? body.s : undefined;
}

/** `ts` when within [now − 1 h, now + 1 min] (bounds included), else `now`. */
export function effectiveTs(ts: number | undefined, now: number): number {
  if (ts === undefined) return now;
  return ts < now - LIMITS.tsPastMs || ts > now + LIMITS.tsFutureMs ? now : ts;
}

type Problems = [path: string, message: string][];

/**
 * Checks one event's fields; pushes its problems (paths prefixed by
 * `prefix`) and returns the event when it has none.
 */
function checkEvent(
  ev: Record<string, unknown>,
  prefix: string,
  hosts: ReadonlySet<string> | undefined,
  now: number,
  problems: Problems,
): ValidEvent | undefined {
  const before = problems.length;
  const bad = (field: string, message: string) => problems.push([prefix + field, message]);
  // An empty string counts as absent for the text fields: proto3 cannot tell them apart.
  const text = (field: string): string | undefined => {
    const v = ev[field];
    if (v === undefined || v === "") return undefined;
    if (typeof v !== "string") {
      bad(field, FIELD_MESSAGES.notString);
      return undefined;
    }
    return v;
  };

  const name = text("e");
  if (name === undefined) {
    if (ev.e === undefined || ev.e === "") bad("e", FIELD_MESSAGES.required);
  } else if (name !== "pageview" && name !== "$identify" && !CUSTOM_NAME.test(name)) {
    bad("e", FIELD_MESSAGES.name);
  }

  const url = text("u");
  if (url === undefined) {
    if (ev.u === undefined || ev.u === "") bad("u", FIELD_MESSAGES.required);
  } else {
    const problem = checkPageUrl(url, hosts);
    if (problem) bad("u", problem);
  }

  const referrer = text("r");
  if (referrer !== undefined && utf8Length(referrer) > LIMITS.referrerBytes) {
    bad("r", FIELD_MESSAGES.referrer);
  }

  const title = text("t");
  const language = text("l");

  const w = ev.w;
  if (
    w !== undefined &&
    (typeof w !== "number" || !Number.isInteger(w) || w < 0 || w > LIMITS.widthMax)
  ) {
    bad("w", FIELD_MESSAGES.width);
  }

  const userId = text("uid");
  if (userId === undefined) {
    if (name === "$identify" && (ev.uid === undefined || ev.uid === "")) {
      bad("uid", FIELD_MESSAGES.uidRequired);
    }
  } else if (utf8Length(userId) > LIMITS.uidBytes) {
    bad("uid", FIELD_MESSAGES.uid);
  }

  const p = ev.p;
  if (p !== undefined && (!isObject(p) || utf8Length(JSON.stringify(p)) > LIMITS.propsBytes)) {
    bad("p", FIELD_MESSAGES.props);
  } else if (p !== undefined && depthOf(p) > LIMITS.propsDepth) {
    bad("p", FIELD_MESSAGES.propsDepth);
  }

  const ts = ev.ts;
  if (ts !== undefined && (typeof ts !== "number" || !Number.isInteger(ts))) {
    bad("ts", FIELD_MESSAGES.ts);
  }

  // ip and ua: present means used, even when empty (an empty ua is a bot, an empty ip an error).
  let ip: string | undefined;
  if (ev.ip !== undefined) {
    ip = typeof ev.ip === "string" ? canonicalIp(ev.ip) : undefined;
    if (ip === undefined) bad("ip", FIELD_MESSAGES.ip);
  }
  const ua = ev.ua;
  if (ua !== undefined && typeof ua !== "string") bad("ua", FIELD_MESSAGES.notString);
  const vid = text("vid");
  if (vid !== undefined && !VID_PATTERN.test(vid)) bad("vid", FIELD_MESSAGES.vid);

  if (problems.length > before) return undefined;
  const out: ValidEvent = {
    name: name as string,
    url: url as string,
    ts: effectiveTs(ts as number | undefined, now),
  };
  if (ts !== undefined && out.ts !== ts) out.tsReplaced = true;
  if (referrer !== undefined) out.referrer = referrer;
  if (title !== undefined) out.title = truncateUtf8(title, LIMITS.titleBytes);
  if (w !== undefined) out.width = w as number;
  if (language !== undefined) out.language = truncateUtf8(language, LIMITS.languageBytes);
  if (userId !== undefined) out.userId = userId;
  if (p !== undefined) out.props = p as Record<string, unknown>;
  if (ip !== undefined) out.ip = ip;
  if (ua !== undefined) out.ua = ua as string;
  if (vid !== undefined) out.vid = vid;
  return out;
}

/**
 * The problem with a page URL, or undefined. The host must equal one of the
 * site's hostnames, case-insensitively; the port is not part of the host, so
 * `example.com:8443` is `example.com`. Hosts are compared in their ASCII
 * (punycode) form, as the site's hostnames are stored. Without `hosts` (the
 * site is not known) only the URL's form is checked.
 */
function checkPageUrl(url: string, hosts: ReadonlySet<string> | undefined): string | undefined {
  if (utf8Length(url) > LIMITS.urlBytes) return FIELD_MESSAGES.url;
  const parsed = parseUrl(url);
  if (!parsed) return FIELD_MESSAGES.url;
  if ((parsed.protocol !== "http:" && parsed.protocol !== "https:") || parsed.hostname === "") {
    return FIELD_MESSAGES.url;
  }
  const host = parsed.host;
  if (hosts && !hosts.has(host)) return FIELD_MESSAGES.foreignHost(host);
  return undefined;
}

/**
 * Checks a body against the Event table and returns its events, or throws
 * one 400 `invalid_input` naming every problem. `hostnames` are the site's;
 * pass undefined when the body names no site (then `s: required` is among
 * the problems and URLs are checked for form only). `now` is the receipt time.
 *
 * Batch form (`b` present): top-level event fields must be absent; an
 * element may repeat `s` only with the batch's value; a batch of more than
 * 50 (or none) is reported without checking its elements, so the message
 * stays short whatever was sent.
 */
export function validateEvents(
  body: Record<string, unknown>,
  hostnames: readonly string[] | undefined,
  now: number,
  options: ValidateOptions = {},
): ValidEvents {
  const problems: Problems = [];
  // Reported once each, not also as a malformed address.
  if (options.connectionOnly) body = forbidClientFields(body, problems);
  const siteId = siteIdOf(body);
  if (siteId === undefined) problems.push(["s", FIELD_MESSAGES.required]);
  const hosts = hostnames && new Set(hostnames.map((h) => h.toLowerCase().replace(/\.$/, "")));

  const events: ValidEvent[] = [];
  const batch = body.b !== undefined;
  if (!batch) {
    const ev = checkEvent(body, "", hosts, now, problems);
    if (ev) events.push(ev);
  } else {
    for (const field of EVENT_FIELDS) {
      if (body[field] !== undefined) problems.push([field, FIELD_MESSAGES.notWithBatch]);
    }
    const b = body.b;
    if (!Array.isArray(b) || b.length < 1 || b.length > LIMITS.batchMax) {
      problems.push(["b", FIELD_MESSAGES.batchSize]);
    } else {
      for (const [i, el] of b.entries()) {
        const prefix = `b[${i}].`;
        if (!isObject(el)) {
          problems.push([`b[${i}]`, FIELD_MESSAGES.batchElement]);
          continue;
        }
        if (el.s !== undefined && el.s !== siteId) {
          problems.push([`${prefix}s`, FIELD_MESSAGES.batchSite]);
        }
        const ev = checkEvent(el, prefix, hosts, now, problems);
        if (ev) events.push(ev);
      }
    }
  }

  if (problems.length > 0) throw invalidEvents(problems);
  return { siteId: siteId as string, batch, events };
}

/** How a door's bodies differ from the spec's Event table. */
export interface ValidateOptions {
  /**
   * The visitor's `ip` and `ua` come only from the connection (the public
   * collect endpoint): a body that sets them is refused, so a page cannot
   * pose as another visitor or dodge the bot filter.
   */
  connectionOnly?: boolean;
}

/**
 * Reports `ip`/`ua` wherever the body sets them, at the top or in a batch
 * element, and returns the body without them.
 */
function forbidClientFields(
  body: Record<string, unknown>,
  problems: Problems,
): Record<string, unknown> {
  const strip = (ev: Record<string, unknown>, prefix: string) => {
    const { ip, ua, ...rest } = ev;
    if (ip !== undefined) problems.push([`${prefix}ip`, FIELD_MESSAGES.fromConnection]);
    if (ua !== undefined) problems.push([`${prefix}ua`, FIELD_MESSAGES.fromConnection]);
    return rest;
  };
  const out = strip(body, "");
  if (Array.isArray(body.b)) {
    out.b = body.b.map((el, i) => (isObject(el) ? strip(el, `b[${i}].`) : el));
  }
  return out;
}

/** The one 400 for a set of problems: sorted by path (code units), joined by `; `. */
function invalidEvents(problems: Problems): DomainError {
  const sorted = [...problems].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return errors.invalid(
    INVALID_EVENT_PREFIX + sorted.map(([path, message]) => `${path}: ${message}`).join("; "),
  );
}

/** Levels of objects and arrays in a JSON value (a flat object is 1). Bounded by the 2 KB size check. */
function depthOf(value: unknown): number {
  if (typeof value !== "object" || value === null) return 0;
  let deepest = 0;
  for (const v of Object.values(value)) deepest = Math.max(deepest, depthOf(v));
  return deepest + 1;
}
