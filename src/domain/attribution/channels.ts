/**
 * Marketing channel of one visit (a landing pageview): GA4's default channel
 * group as Plausible refines it, plus "AI Assistants". Pure: no I/O beyond
 * the host lists in `./channel-data/*.json`, loaded and checked once at
 * import. The rule order and every choice are in docs/channels.md.
 */

import { parseUrl } from "../events/url-parts.js";
import aiAssistantsData from "./channel-data/ai-assistants.json" with { type: "json" };
import clickIdData from "./channel-data/click-ids.json" with { type: "json" };
import emailData from "./channel-data/email.json" with { type: "json" };
import referralData from "./channel-data/referral.json" with { type: "json" };
import searchData from "./channel-data/search.json" with { type: "json" };
import shoppingData from "./channel-data/shopping.json" with { type: "json" };
import socialData from "./channel-data/social.json" with { type: "json" };
import videoData from "./channel-data/video.json" with { type: "json" };

export const CHANNELS = [
  "Direct",
  "Organic Search",
  "Paid Search",
  "Organic Social",
  "Paid Social",
  "Email",
  "Referral",
  "Affiliates",
  "Display",
  "Organic Video",
  "Paid Video",
  "Organic Shopping",
  "Paid Shopping",
  "AI Assistants",
  "Paid Other",
  "Cross-network",
  "Audio",
  "SMS",
  "Mobile Push Notifications",
  "Unassigned",
] as const;

export type Channel = (typeof CHANNELS)[number];

export interface Touch {
  /** Landing page URL (absolute). */
  url: string;
  /** Host of the referrer, lower case, or undefined. */
  referrerHost?: string;
  utmSource?: string;
  utmMedium?: string;
  utmCampaign?: string;
  /** Click ids found on the landing URL: gclid, gbraid, wbraid, dclid, msclkid, fbclid, ttclid, twclid, li_fat_id, epik, ScCid, … */
  clickIds?: Record<string, string>;
  /** The site's own hostnames: a referrer on one of them is not a new touch. */
  siteHostnames: string[];
}

export interface Classification {
  channel: Channel;
  /** utm_source, else a normalised referrer source (e.g. "Google", "Facebook") or the referrer host; undefined for Direct. */
  source?: string;
  medium?: string;
  campaign?: string;
}

// ---------------------------------------------------------------------------
// Source lists (data) → lookup tables

/** What a known source is, for the channel rules. "referral" only names a site. */
type Category = "search" | "social" | "video" | "shopping" | "ai" | "email" | "referral";
const CATEGORIES: ReadonlySet<string> = new Set<Category>([
  "search",
  "social",
  "video",
  "shopping",
  "ai",
  "email",
  "referral",
]);

interface KnownSource {
  readonly name: string;
  readonly category: Category;
}

interface AliasHit {
  readonly source: KnownSource;
  /** The alias itself says the traffic is paid (`adwords`, `facebook_ads`). */
  readonly paid: boolean;
}

interface ClickIdRule {
  readonly param: string;
  readonly source: string;
  readonly medium?: string;
  readonly overridesUtm: boolean;
}

/** Second-level labels under a country code that a `name.*` host pattern accepts: `google.co.uk`, `amazon.com.br`. */
const SECOND_LEVEL = new Set([
  "co",
  "com",
  "net",
  "org",
  "ac",
  "or",
  "ne",
  "go",
  "gob",
  "edu",
  "gov",
]);

const hostTable = new Map<string, KnownSource>();
/** `google.*` patterns, keyed by their label (`google`). */
const wildcardTable = new Map<string, KnownSource>();
/** utm_source values (aliases, paid aliases, lower-cased names). */
const aliasTable = new Map<string, AliasHit>();

function fail(file: string, why: string): never {
  throw new Error(`channel-data/${file}: ${why}`);
}

function stringList(value: unknown, file: string, what: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string" && v.trim() !== "")) {
    fail(file, `${what} must be a list of non-empty strings`);
  }
  return value.map((v: string) => v.trim().toLowerCase());
}

function addAlias(alias: string, hit: AliasHit, file: string): void {
  const seen = aliasTable.get(alias);
  if (seen && (seen.source !== hit.source || seen.paid !== hit.paid)) {
    fail(file, `alias "${alias}" is already ${seen.source.name}`);
  }
  aliasTable.set(alias, hit);
}

function loadSourceList(data: unknown, file: string): void {
  const d = data as { category?: unknown; sources?: unknown };
  if (typeof d.category !== "string" || !CATEGORIES.has(d.category)) {
    fail(file, `unknown category ${String(d.category)}`);
  }
  const category = d.category as Category;
  if (!Array.isArray(d.sources)) fail(file, "sources must be a list");
  for (const raw of d.sources as unknown[]) {
    const e = raw as { name?: unknown; hosts?: unknown; aliases?: unknown; paidAliases?: unknown };
    if (typeof e.name !== "string" || e.name.trim() === "") fail(file, "every source needs a name");
    const source: KnownSource = { name: e.name, category };
    for (const host of stringList(e.hosts, file, `${e.name}.hosts`)) {
      if (host.endsWith(".*")) {
        const label = host.slice(0, -2);
        if (label.includes(".") || label.includes("*")) fail(file, `bad pattern "${host}"`);
        if (wildcardTable.has(label)) fail(file, `pattern "${host}" is listed twice`);
        wildcardTable.set(label, source);
      } else {
        if (host.includes("*") || host.includes("/")) fail(file, `bad host "${host}"`);
        if (hostTable.has(host)) fail(file, `host "${host}" is listed twice`);
        hostTable.set(host, source);
      }
    }
    addAlias(e.name.trim().toLowerCase(), { source, paid: false }, file);
    for (const a of stringList(e.aliases, file, `${e.name}.aliases`)) {
      addAlias(a, { source, paid: false }, file);
    }
    for (const a of stringList(e.paidAliases, file, `${e.name}.paidAliases`)) {
      addAlias(a, { source, paid: true }, file);
    }
  }
}

function loadClickIds(data: unknown, file: string): ClickIdRule[] {
  const list = (data as { clickIds?: unknown }).clickIds;
  if (!Array.isArray(list)) fail(file, "clickIds must be a list");
  return list.map((raw: unknown) => {
    const r = raw as Partial<Record<keyof ClickIdRule, unknown>>;
    if (typeof r.param !== "string" || typeof r.source !== "string") {
      fail(file, "every click id needs a param and a source");
    }
    if (typeof r.overridesUtm !== "boolean")
      fail(file, `${r.param}: overridesUtm must be a boolean`);
    if (r.overridesUtm && typeof r.medium !== "string") fail(file, `${r.param}: needs a medium`);
    return {
      param: r.param.toLowerCase(),
      source: r.source,
      medium: typeof r.medium === "string" ? r.medium : undefined,
      overridesUtm: r.overridesUtm,
    };
  });
}

for (const [data, file] of [
  [searchData, "search.json"],
  [socialData, "social.json"],
  [videoData, "video.json"],
  [shoppingData, "shopping.json"],
  [aiAssistantsData, "ai-assistants.json"],
  [emailData, "email.json"],
  [referralData, "referral.json"],
] as const) {
  loadSourceList(data, file);
}
const CLICK_IDS: readonly ClickIdRule[] = loadClickIds(clickIdData, "click-ids.json");

/**
 * The known source a host belongs to: the most specific listed host that is
 * the host itself or a parent domain of it (`l.facebook.com` → facebook.com,
 * `gemini.google.com` before `google.*`), where `name.*` stands for `name`
 * under any top-level domain (`google.de`, `google.co.uk`, `google.com.br`).
 */
function lookupHost(host: string): KnownSource | undefined {
  const labels = host.split(".");
  for (let i = 0; i < labels.length; i++) {
    const exact = hostTable.get(labels.slice(i).join("."));
    if (exact) return exact;
    const wild = wildcardTable.get(labels[i] as string);
    const rest = labels.slice(i + 1);
    if (wild && isPublicSuffix(rest)) return wild;
  }
  return undefined;
}

/** `de`, `com`, `co.uk`, `com.br`: a top-level domain, or a common second level under a country code. */
function isPublicSuffix(labels: string[]): boolean {
  if (labels.length === 1) return (labels[0] as string).length >= 2;
  return (
    labels.length === 2 &&
    SECOND_LEVEL.has(labels[0] as string) &&
    (labels[1] as string).length === 2
  );
}

/** A utm_source value against the same lists: alias or name first, then as a host (`l.facebook.com`). */
function lookupTag(value: string): AliasHit | undefined {
  const v = value.toLowerCase();
  const alias = aliasTable.get(v);
  if (alias) return alias;
  const host = normaliseHost(v);
  const source = host?.includes(".") ? lookupHost(host) : undefined;
  return source ? { source, paid: false } : undefined;
}

// ---------------------------------------------------------------------------
// GA4's regexes and word lists (case-insensitive: values are lower-cased first)

const PAID_MEDIUM = /^(.*cp.*|ppc|retargeting|paid.*)$/;
const SHOPPING_CAMPAIGN = /^(.*(([^a-df-z]|^)shop|shopping).*)$/;
const DISPLAY_MEDIA = new Set(["display", "banner", "expandable", "interstitial", "cpm"]);
const SOCIAL_MEDIA = new Set([
  "social",
  "social-network",
  "social-media",
  "sm",
  "social network",
  "social media",
]);
/** GA4's four spellings, matched as substrings of source or medium (Plausible), plus "newsletter". */
const EMAIL_WORDS = ["email", "e-mail", "e_mail", "e mail", "newsletter"];
const REFERRAL_MEDIA = new Set(["referral", "app", "link"]);
const DIRECT_MEDIA = new Set(["(none)", "(not set)"]);

// ---------------------------------------------------------------------------

function clean(value: string | undefined): string | undefined {
  const v = value?.trim();
  return v ? v : undefined;
}

/** Lower case, no port, no trailing dot; undefined when empty. */
function normaliseHost(host: string | undefined): string | undefined {
  const h = host?.trim().toLowerCase().replace(/:\d+$/, "").replace(/\.$/, "");
  return h ? h : undefined;
}

function landingHost(url: string): string | undefined {
  return normaliseHost(parseUrl(url)?.hostname);
}

/** The first click id of the list (its order is the precedence) present with a value. */
function findClickId(
  clickIds: Record<string, string> | undefined,
  overridesUtm: boolean,
): ClickIdRule | undefined {
  if (!clickIds) return undefined;
  const present = new Set(
    Object.entries(clickIds)
      .filter(([, v]) => typeof v === "string" && v.trim() !== "")
      .map(([k]) => k.toLowerCase()),
  );
  return CLICK_IDS.find((c) => c.overridesUtm === overridesUtm && present.has(c.param));
}

interface Signals {
  /** Known source the traffic came from, if any. */
  known?: KnownSource;
  /** Lower-cased utm_source when it is the source (GA4's "Source" conditions on literal words). */
  tag: string;
  medium: string;
  campaign: string;
  paidAlias: boolean;
}

/** GA4's manual-traffic rules in GA4's order, with Plausible's refinements. See docs/channels.md. */
function channelOf(s: Signals): Channel {
  const category = s.known?.category;
  const m = s.medium;
  const paid = PAID_MEDIUM.test(m) || s.paidAlias;
  const shopping = category === "shopping" || SHOPPING_CAMPAIGN.test(s.campaign);

  if (s.campaign.includes("cross-network")) return "Cross-network";
  if (shopping && paid) return "Paid Shopping";
  if (category === "search" && paid) return "Paid Search";
  if (category === "social" && paid) return "Paid Social";
  if (category === "video" && paid) return "Paid Video";
  if (DISPLAY_MEDIA.has(m)) return "Display";
  if (paid) return "Paid Other";
  if (shopping) return "Organic Shopping";
  if (category === "social" || SOCIAL_MEDIA.has(m)) return "Organic Social";
  if (category === "video" || m.includes("video")) return "Organic Video";
  if (category === "ai") return "AI Assistants";
  if (category === "search" || m === "organic") return "Organic Search";
  if (category === "email" || EMAIL_WORDS.some((w) => s.tag.includes(w) || m.includes(w))) {
    return "Email";
  }
  if (m === "affiliate" || m === "affiliates") return "Affiliates";
  if (REFERRAL_MEDIA.has(m)) return "Referral";
  if (m === "audio") return "Audio";
  if (s.tag === "sms" || m === "sms") return "SMS";
  if (
    m.endsWith("push") ||
    m.includes("mobile") ||
    m.includes("notification") ||
    s.tag === "firebase"
  ) {
    return "Mobile Push Notifications";
  }
  return "Unassigned";
}

function result(
  channel: Channel,
  source: string | undefined,
  medium: string | undefined,
  campaign: string | undefined,
): Classification {
  const out: Classification = { channel };
  if (source !== undefined) out.source = source;
  if (medium !== undefined) out.medium = medium;
  if (campaign !== undefined) out.campaign = campaign;
  return out;
}

/** Classifies one visit. Returns undefined when the referrer is one of the site's own hosts and no UTM/click id is present (internal navigation: not a new touch). */
export function classifyTouch(t: Touch): Classification | undefined {
  const utmSource = clean(t.utmSource);
  const utmMedium = clean(t.utmMedium);
  const campaign = clean(t.utmCampaign);
  const adClick = findClickId(t.clickIds, true);
  const hintClick = findClickId(t.clickIds, false);

  const referrer = normaliseHost(t.referrerHost);
  const ownHosts = new Set(t.siteHostnames.map(normaliseHost));
  ownHosts.add(landingHost(t.url));
  const ownReferrer = referrer !== undefined && ownHosts.has(referrer);
  const tagged = Boolean(utmSource || utmMedium || campaign || adClick || hintClick);
  if (ownReferrer && !tagged) return undefined;
  const external = ownReferrer ? undefined : referrer;

  // 1. An ad platform's auto-tag names source and medium (GA4: auto-tagging beats UTM).
  //    A paid or display utm_medium is kept: it tells which network the ad ran on.
  if (adClick) {
    const lm = utmMedium?.toLowerCase() ?? "";
    const medium =
      utmMedium && (PAID_MEDIUM.test(lm) || DISPLAY_MEDIA.has(lm)) ? utmMedium : adClick.medium;
    const known = aliasTable.get(adClick.source.toLowerCase())?.source;
    const channel = channelOf({
      known,
      tag: "",
      medium: medium?.toLowerCase() ?? "",
      campaign: campaign?.toLowerCase() ?? "",
      paidAlias: false,
    });
    return result(channel, adClick.source, medium, campaign);
  }

  // 2. Source: utm_source, else the external referrer, else what a click id says (fbclid).
  let source: string | undefined;
  let known: KnownSource | undefined;
  let paidAlias = false;
  let medium = utmMedium;
  if (utmSource) {
    source = utmSource;
    const hit = lookupTag(utmSource);
    known = hit?.source;
    paidAlias = hit?.paid ?? false;
  } else if (external) {
    known = lookupHost(external);
    source = known?.name ?? external;
    // GA4 gives untagged traffic the medium "organic" (search engines) or "referral".
    medium ??= known?.category === "search" ? "organic" : "referral";
  } else if (hintClick) {
    source = hintClick.source;
    known = aliasTable.get(hintClick.source.toLowerCase())?.source;
  }

  // 3. Direct: no source (or "(direct)") and no medium (or "(none)"/"(not set)").
  const lowerMedium = medium?.toLowerCase() ?? "";
  const noSource = source === undefined || source.toLowerCase() === "(direct)";
  if (noSource && (medium === undefined || DIRECT_MEDIA.has(lowerMedium))) {
    return result("Direct", undefined, undefined, campaign);
  }

  const channel = channelOf({
    known,
    tag: utmSource?.toLowerCase() ?? "",
    medium: lowerMedium,
    campaign: campaign?.toLowerCase() ?? "",
    paidAlias,
  });
  return result(channel, source, medium, campaign);
}
