import { describe, expect, it } from "vitest";
import {
  CHANNELS,
  type Channel,
  type Classification,
  classifyTouch,
  type Touch,
} from "../../../../src/domain/attribution/channels.js";

const SITE = {
  url: "https://shop.example.com/pricing",
  siteHostnames: ["example.com", "shop.example.com"],
};

function touch(t: Partial<Touch>): Touch {
  return { ...SITE, ...t };
}

type Row = [what: string, input: Partial<Touch>, expected: Classification | undefined];

/** One row per rule or edge; docs/channels.md has the rule order. */
const ROWS: Row[] = [
  // --- Direct and own hosts
  ["no referrer, no UTM: Direct", {}, { channel: "Direct" }],
  [
    "(direct) / (none): Direct",
    { utmSource: "(direct)", utmMedium: "(none)" },
    { channel: "Direct" },
  ],
  [
    "(direct) / (not set): Direct",
    { utmSource: "(direct)", utmMedium: "(not set)" },
    { channel: "Direct" },
  ],
  [
    "campaign alone: Direct, campaign kept",
    { utmCampaign: "spring" },
    { channel: "Direct", campaign: "spring" },
  ],
  ["empty UTM values are absent", { utmSource: " ", utmMedium: "" }, { channel: "Direct" }],
  ["own-host referrer: not a touch", { referrerHost: "example.com" }, undefined],
  ["own-host referrer, any case: not a touch", { referrerHost: "Shop.Example.COM" }, undefined],
  [
    "landing URL's host counts as own",
    { url: "https://blog.example.com/post", referrerHost: "blog.example.com" },
    undefined,
  ],
  [
    "own-host referrer with UTM: classified by the UTM",
    { referrerHost: "example.com", utmSource: "newsletter", utmMedium: "email" },
    { channel: "Email", source: "newsletter", medium: "email" },
  ],
  [
    "own-host referrer with gclid: a touch",
    { referrerHost: "example.com", clickIds: { gclid: "abc" } },
    { channel: "Paid Search", source: "Google", medium: "cpc" },
  ],
  [
    "own hosts match exactly: www. is another host",
    { referrerHost: "www.example.com" },
    { channel: "Referral", source: "www.example.com", medium: "referral" },
  ],

  // --- Organic Search
  [
    "came from a Google search",
    { referrerHost: "www.google.com" },
    { channel: "Organic Search", source: "Google", medium: "organic" },
  ],
  [
    "Google ccTLD co.uk",
    { referrerHost: "www.google.co.uk" },
    { channel: "Organic Search", source: "Google", medium: "organic" },
  ],
  [
    "Google ccTLD com.br",
    { referrerHost: "google.com.br" },
    { channel: "Organic Search", source: "Google", medium: "organic" },
  ],
  [
    "Google ccTLD de",
    { referrerHost: "www.google.de" },
    { channel: "Organic Search", source: "Google", medium: "organic" },
  ],
  [
    "Google app (android-app referrer)",
    { referrerHost: "com.google.android.googlequicksearchbox" },
    { channel: "Organic Search", source: "Google", medium: "organic" },
  ],
  [
    "referrer host with trailing dot and port",
    { referrerHost: "WWW.GOOGLE.COM.:443" },
    { channel: "Organic Search", source: "Google", medium: "organic" },
  ],
  [
    "Bing",
    { referrerHost: "www.bing.com" },
    { channel: "Organic Search", source: "Bing", medium: "organic" },
  ],
  [
    "DuckDuckGo",
    { referrerHost: "duckduckgo.com" },
    { channel: "Organic Search", source: "DuckDuckGo", medium: "organic" },
  ],
  [
    "Yandex ccTLD",
    { referrerHost: "yandex.com.tr" },
    { channel: "Organic Search", source: "Yandex", medium: "organic" },
  ],
  [
    "Yahoo subdomain",
    { referrerHost: "uk.search.yahoo.com" },
    { channel: "Organic Search", source: "Yahoo!", medium: "organic" },
  ],
  [
    "Brave Search",
    { referrerHost: "search.brave.com" },
    { channel: "Organic Search", source: "Brave", medium: "organic" },
  ],
  [
    "Ecosia",
    { referrerHost: "www.ecosia.org" },
    { channel: "Organic Search", source: "Ecosia", medium: "organic" },
  ],
  [
    "utm_source=google&utm_medium=organic",
    { utmSource: "google", utmMedium: "organic" },
    { channel: "Organic Search", source: "google", medium: "organic" },
  ],
  [
    "medium organic alone is Organic Search",
    { utmSource: "some-portal", utmMedium: "organic" },
    { channel: "Organic Search", source: "some-portal", medium: "organic" },
  ],
  [
    "google as a mere label is not Google",
    { referrerHost: "google.evil.com" },
    { channel: "Referral", source: "google.evil.com", medium: "referral" },
  ],

  // --- Paid Search
  [
    "google / cpc",
    { utmSource: "google", utmMedium: "cpc", utmCampaign: "brand" },
    { channel: "Paid Search", source: "google", medium: "cpc", campaign: "brand" },
  ],
  [
    "case-insensitive: GOOGLE / CPC",
    { utmSource: "GOOGLE", utmMedium: "CPC" },
    { channel: "Paid Search", source: "GOOGLE", medium: "CPC" },
  ],
  [
    "bing / ppc",
    { utmSource: "bing", utmMedium: "ppc" },
    { channel: "Paid Search", source: "bing", medium: "ppc" },
  ],
  [
    "google / retargeting",
    { utmSource: "google", utmMedium: "retargeting" },
    { channel: "Paid Search", source: "google", medium: "retargeting" },
  ],
  [
    "google / paidsearch",
    { utmSource: "google", utmMedium: "paidsearch" },
    { channel: "Paid Search", source: "google", medium: "paidsearch" },
  ],
  [
    "google / cpm is Paid Search (before Display)",
    { utmSource: "google", utmMedium: "cpm" },
    { channel: "Paid Search", source: "google", medium: "cpm" },
  ],
  [
    "paid alias adwords, no medium",
    { utmSource: "adwords" },
    { channel: "Paid Search", source: "adwords" },
  ],
  [
    "gclid",
    { clickIds: { gclid: "abc" } },
    { channel: "Paid Search", source: "Google", medium: "cpc" },
  ],
  [
    "gbraid",
    { clickIds: { gbraid: "abc" } },
    { channel: "Paid Search", source: "Google", medium: "cpc" },
  ],
  [
    "wbraid",
    { clickIds: { wbraid: "abc" } },
    { channel: "Paid Search", source: "Google", medium: "cpc" },
  ],
  [
    "msclkid",
    { clickIds: { msclkid: "abc" } },
    { channel: "Paid Search", source: "Bing", medium: "cpc" },
  ],
  [
    "yclid",
    { clickIds: { yclid: "abc" } },
    { channel: "Paid Search", source: "Yandex", medium: "cpc" },
  ],
  [
    "gclid beats utm_medium=email (auto-tagging wins)",
    { clickIds: { gclid: "abc" }, utmSource: "newsletter", utmMedium: "email", utmCampaign: "may" },
    { channel: "Paid Search", source: "Google", medium: "cpc", campaign: "may" },
  ],
  [
    "gclid beats a Google organic referrer",
    { referrerHost: "www.google.com", clickIds: { gclid: "abc" } },
    { channel: "Paid Search", source: "Google", medium: "cpc" },
  ],
  ["gclid with an empty value is ignored", { clickIds: { gclid: "" } }, { channel: "Direct" }],

  // --- Google click ids that GA4 sends elsewhere
  [
    "gclid + cross-network campaign",
    { clickIds: { gclid: "abc" }, utmCampaign: "pmax-cross-network" },
    { channel: "Cross-network", source: "Google", medium: "cpc", campaign: "pmax-cross-network" },
  ],
  [
    "gclid + shopping campaign",
    { clickIds: { gclid: "abc" }, utmCampaign: "Shopping - all products" },
    {
      channel: "Paid Shopping",
      source: "Google",
      medium: "cpc",
      campaign: "Shopping - all products",
    },
  ],
  [
    "gclid + utm_medium=display keeps the display medium",
    { clickIds: { gclid: "abc" }, utmMedium: "display" },
    { channel: "Display", source: "Google", medium: "display" },
  ],
  [
    "dclid is Display",
    { clickIds: { dclid: "abc" } },
    { channel: "Display", source: "Google Marketing Platform", medium: "cpm" },
  ],

  // --- Paid Social
  [
    "facebook / paid_social",
    { utmSource: "facebook", utmMedium: "paid_social" },
    { channel: "Paid Social", source: "facebook", medium: "paid_social" },
  ],
  [
    "alias fb / cpc",
    { utmSource: "fb", utmMedium: "cpc" },
    { channel: "Paid Social", source: "fb", medium: "cpc" },
  ],
  [
    "paid alias facebook_ads / social",
    { utmSource: "facebook_ads", utmMedium: "social" },
    { channel: "Paid Social", source: "facebook_ads", medium: "social" },
  ],
  [
    "ttclid",
    { clickIds: { ttclid: "abc" } },
    { channel: "Paid Social", source: "TikTok", medium: "cpc" },
  ],
  [
    "twclid",
    { clickIds: { twclid: "abc" } },
    { channel: "Paid Social", source: "X (Twitter)", medium: "cpc" },
  ],
  [
    "li_fat_id",
    { clickIds: { li_fat_id: "abc" } },
    { channel: "Paid Social", source: "LinkedIn", medium: "cpc" },
  ],
  [
    "ScCid (key case-insensitive)",
    { clickIds: { ScCid: "abc" } },
    { channel: "Paid Social", source: "Snapchat", medium: "cpc" },
  ],
  [
    "epik",
    { clickIds: { epik: "abc" } },
    { channel: "Paid Social", source: "Pinterest", medium: "cpc" },
  ],
  [
    "rdt_cid",
    { clickIds: { rdt_cid: "abc" } },
    { channel: "Paid Social", source: "Reddit", medium: "cpc" },
  ],
  [
    "no utm_source: the referrer is the source, utm_medium the medium",
    { referrerHost: "l.facebook.com", utmMedium: "paid" },
    { channel: "Paid Social", source: "Facebook", medium: "paid" },
  ],

  // --- fbclid is not paid
  [
    "fbclid alone: Organic Social, source Facebook",
    { clickIds: { fbclid: "abc" } },
    { channel: "Organic Social", source: "Facebook" },
  ],
  [
    "fbclid + Instagram referrer: the referrer names the source",
    { referrerHost: "l.instagram.com", clickIds: { fbclid: "abc" } },
    { channel: "Organic Social", source: "Instagram", medium: "referral" },
  ],
  [
    "fbclid + paid UTM: Paid Social",
    { clickIds: { fbclid: "abc" }, utmSource: "facebook", utmMedium: "cpc" },
    { channel: "Paid Social", source: "facebook", medium: "cpc" },
  ],
  [
    "fbclid + gclid: the ad click id wins",
    { clickIds: { fbclid: "abc", gclid: "def" } },
    { channel: "Paid Search", source: "Google", medium: "cpc" },
  ],

  // --- Organic Social
  [
    "l.facebook.com",
    { referrerHost: "l.facebook.com" },
    { channel: "Organic Social", source: "Facebook", medium: "referral" },
  ],
  [
    "m.facebook.com",
    { referrerHost: "m.facebook.com" },
    { channel: "Organic Social", source: "Facebook", medium: "referral" },
  ],
  [
    "lm.facebook.com",
    { referrerHost: "lm.facebook.com" },
    { channel: "Organic Social", source: "Facebook", medium: "referral" },
  ],
  [
    "t.co is X",
    { referrerHost: "t.co" },
    { channel: "Organic Social", source: "X (Twitter)", medium: "referral" },
  ],
  [
    "x.com",
    { referrerHost: "x.com" },
    { channel: "Organic Social", source: "X (Twitter)", medium: "referral" },
  ],
  [
    "Hacker News",
    { referrerHost: "news.ycombinator.com" },
    { channel: "Organic Social", source: "Hacker News", medium: "referral" },
  ],
  [
    "lnkd.in",
    { referrerHost: "lnkd.in" },
    { channel: "Organic Social", source: "LinkedIn", medium: "referral" },
  ],
  [
    "Bluesky",
    { referrerHost: "bsky.app" },
    { channel: "Organic Social", source: "Bluesky", medium: "referral" },
  ],
  [
    "old.reddit.com",
    { referrerHost: "old.reddit.com" },
    { channel: "Organic Social", source: "Reddit", medium: "referral" },
  ],
  [
    "Pinterest ccTLD",
    { referrerHost: "www.pinterest.co.uk" },
    { channel: "Organic Social", source: "Pinterest", medium: "referral" },
  ],
  [
    "Mastodon instance",
    { referrerHost: "mastodon.social" },
    { channel: "Organic Social", source: "Mastodon", medium: "referral" },
  ],
  ["utm_source alias ig", { utmSource: "ig" }, { channel: "Organic Social", source: "ig" }],
  [
    "utm_source=Facebook, any case",
    { utmSource: "FaceBook" },
    { channel: "Organic Social", source: "FaceBook" },
  ],
  [
    "utm_source as a host",
    { utmSource: "l.facebook.com" },
    { channel: "Organic Social", source: "l.facebook.com" },
  ],
  [
    "medium social, unknown source",
    { utmSource: "partner", utmMedium: "social" },
    { channel: "Organic Social", source: "partner", medium: "social" },
  ],

  // --- Video
  [
    "youtube.com",
    { referrerHost: "www.youtube.com" },
    { channel: "Organic Video", source: "YouTube", medium: "referral" },
  ],
  [
    "youtu.be",
    { referrerHost: "youtu.be" },
    { channel: "Organic Video", source: "YouTube", medium: "referral" },
  ],
  [
    "vimeo.com",
    { referrerHost: "vimeo.com" },
    { channel: "Organic Video", source: "Vimeo", medium: "referral" },
  ],
  [
    "medium contains video",
    { utmSource: "partner", utmMedium: "video_embed" },
    { channel: "Organic Video", source: "partner", medium: "video_embed" },
  ],
  [
    "youtube / cpv: Paid Video",
    { utmSource: "youtube", utmMedium: "cpv" },
    { channel: "Paid Video", source: "youtube", medium: "cpv" },
  ],

  // --- Shopping
  [
    "amazon.de",
    { referrerHost: "www.amazon.de" },
    { channel: "Organic Shopping", source: "Amazon", medium: "referral" },
  ],
  [
    "amazon.co.uk",
    { referrerHost: "www.amazon.co.uk" },
    { channel: "Organic Shopping", source: "Amazon", medium: "referral" },
  ],
  [
    "shop.app is Shopify",
    { referrerHost: "shop.app" },
    { channel: "Organic Shopping", source: "Shopify", medium: "referral" },
  ],
  [
    "ebay / cpc: Paid Shopping",
    { utmSource: "ebay", utmMedium: "cpc" },
    { channel: "Paid Shopping", source: "ebay", medium: "cpc" },
  ],
  [
    "shop campaign + paid medium: Paid Shopping",
    { utmSource: "partner", utmMedium: "cpc", utmCampaign: "summer_shop" },
    { channel: "Paid Shopping", source: "partner", medium: "cpc", campaign: "summer_shop" },
  ],
  [
    "shopping campaign, unpaid: Organic Shopping",
    { utmSource: "partner", utmCampaign: "holiday shopping" },
    { channel: "Organic Shopping", source: "partner", campaign: "holiday shopping" },
  ],
  [
    "'workshop' is not a shop campaign: Paid Other",
    { utmSource: "partner", utmMedium: "cpc", utmCampaign: "workshop" },
    { channel: "Paid Other", source: "partner", medium: "cpc", campaign: "workshop" },
  ],

  // --- AI Assistants
  [
    "chatgpt.com",
    { referrerHost: "chatgpt.com" },
    { channel: "AI Assistants", source: "ChatGPT", medium: "referral" },
  ],
  [
    "chat.openai.com",
    { referrerHost: "chat.openai.com" },
    { channel: "AI Assistants", source: "ChatGPT", medium: "referral" },
  ],
  [
    "perplexity.ai",
    { referrerHost: "www.perplexity.ai" },
    { channel: "AI Assistants", source: "Perplexity", medium: "referral" },
  ],
  [
    "gemini.google.com is not Google search",
    { referrerHost: "gemini.google.com" },
    { channel: "AI Assistants", source: "Gemini", medium: "referral" },
  ],
  [
    "claude.ai",
    { referrerHost: "claude.ai" },
    { channel: "AI Assistants", source: "Claude", medium: "referral" },
  ],
  [
    "copilot.microsoft.com",
    { referrerHost: "copilot.microsoft.com" },
    { channel: "AI Assistants", source: "Microsoft Copilot", medium: "referral" },
  ],
  [
    "utm_source=chatgpt.com (ChatGPT's own tag)",
    { utmSource: "chatgpt.com" },
    { channel: "AI Assistants", source: "chatgpt.com" },
  ],

  // --- Email
  [
    "newsletter link",
    { utmSource: "newsletter", utmMedium: "email", utmCampaign: "2024-05" },
    { channel: "Email", source: "newsletter", medium: "email", campaign: "2024-05" },
  ],
  [
    "medium e-mail",
    { utmSource: "crm", utmMedium: "e-mail" },
    { channel: "Email", source: "crm", medium: "e-mail" },
  ],
  [
    "medium 'E Mail', any case",
    { utmSource: "crm", utmMedium: "E Mail" },
    { channel: "Email", source: "crm", medium: "E Mail" },
  ],
  ["source e_mail alone", { utmSource: "e_mail" }, { channel: "Email", source: "e_mail" }],
  [
    "source contains newsletter",
    { utmSource: "weekly-newsletter" },
    { channel: "Email", source: "weekly-newsletter" },
  ],
  [
    "utm_source=mailchimp (provider list)",
    { utmSource: "mailchimp" },
    { channel: "Email", source: "mailchimp" },
  ],
  [
    "Gmail web referrer",
    { referrerHost: "mail.google.com" },
    { channel: "Email", source: "Gmail", medium: "referral" },
  ],
  [
    "Outlook web referrer",
    { referrerHost: "outlook.live.com" },
    { channel: "Email", source: "Outlook", medium: "referral" },
  ],
  [
    "Outlook Safe Links redirect",
    { referrerHost: "eur01.safelinks.protection.outlook.com" },
    { channel: "Email", source: "Outlook", medium: "referral" },
  ],

  // --- Affiliates, Display, Paid Other, Cross-network
  [
    "medium affiliate",
    { utmSource: "partner", utmMedium: "affiliate" },
    { channel: "Affiliates", source: "partner", medium: "affiliate" },
  ],
  [
    "irclickid (impact.com)",
    { clickIds: { irclickid: "abc" } },
    { channel: "Affiliates", source: "impact.com", medium: "affiliate" },
  ],
  [
    "medium display",
    { utmSource: "dsp", utmMedium: "display" },
    { channel: "Display", source: "dsp", medium: "display" },
  ],
  [
    "medium banner",
    { utmSource: "dsp", utmMedium: "Banner" },
    { channel: "Display", source: "dsp", medium: "Banner" },
  ],
  [
    "medium cpm, unknown source",
    { utmSource: "dsp", utmMedium: "cpm" },
    { channel: "Display", source: "dsp", medium: "cpm" },
  ],
  [
    "medium cpc, unknown source",
    { utmSource: "partner", utmMedium: "cpc" },
    { channel: "Paid Other", source: "partner", medium: "cpc" },
  ],
  ["medium paid, no source", { utmMedium: "paid" }, { channel: "Paid Other", medium: "paid" }],
  [
    "campaign contains cross-network (before Paid Search)",
    { utmSource: "google", utmMedium: "cpc", utmCampaign: "PMax Cross-Network" },
    { channel: "Cross-network", source: "google", medium: "cpc", campaign: "PMax Cross-Network" },
  ],

  // --- Referral
  [
    "medium referral",
    { utmSource: "partner", utmMedium: "referral" },
    { channel: "Referral", source: "partner", medium: "referral" },
  ],
  [
    "medium app",
    { utmSource: "partner", utmMedium: "app" },
    { channel: "Referral", source: "partner", medium: "app" },
  ],
  [
    "medium link",
    { utmSource: "partner", utmMedium: "link" },
    { channel: "Referral", source: "partner", medium: "link" },
  ],
  [
    "unknown external referrer: source is the host",
    { referrerHost: "blog.example.org" },
    { channel: "Referral", source: "blog.example.org", medium: "referral" },
  ],
  [
    "Wikipedia (named referral)",
    { referrerHost: "en.m.wikipedia.org" },
    { channel: "Referral", source: "Wikipedia", medium: "referral" },
  ],
  [
    "docs.google.com is not Google search",
    { referrerHost: "docs.google.com" },
    { channel: "Referral", source: "Google Docs", medium: "referral" },
  ],
  [
    "UTM beats the referrer",
    { referrerHost: "www.google.com", utmSource: "newsletter", utmMedium: "email" },
    { channel: "Email", source: "newsletter", medium: "email" },
  ],

  // --- Audio, SMS, Mobile Push, Unassigned
  [
    "medium audio",
    { utmSource: "spotify", utmMedium: "audio" },
    { channel: "Audio", source: "spotify", medium: "audio" },
  ],
  ["source sms", { utmSource: "sms" }, { channel: "SMS", source: "sms" }],
  [
    "medium SMS, any case",
    { utmSource: "twilio", utmMedium: "SMS" },
    { channel: "SMS", source: "twilio", medium: "SMS" },
  ],
  [
    "medium ends with push",
    { utmSource: "app", utmMedium: "web-push" },
    { channel: "Mobile Push Notifications", source: "app", medium: "web-push" },
  ],
  [
    "medium contains mobile",
    { utmSource: "app", utmMedium: "mobile_inbox" },
    { channel: "Mobile Push Notifications", source: "app", medium: "mobile_inbox" },
  ],
  [
    "medium contains notification",
    { utmSource: "app", utmMedium: "notification" },
    { channel: "Mobile Push Notifications", source: "app", medium: "notification" },
  ],
  [
    "source firebase",
    { utmSource: "firebase" },
    { channel: "Mobile Push Notifications", source: "firebase" },
  ],
  [
    "tagged but no rule matches: Unassigned",
    { utmSource: "partner", utmMedium: "foo" },
    { channel: "Unassigned", source: "partner", medium: "foo" },
  ],
  [
    "unknown utm_source alone: Unassigned",
    { utmSource: "partner" },
    { channel: "Unassigned", source: "partner" },
  ],
];

describe("classifyTouch", () => {
  it.each(ROWS)("%s", (_what, input, expected) => {
    expect(classifyTouch(touch(input))).toEqual(expected);
  });

  it("reaches every channel through the table", () => {
    const reached = new Set<Channel>();
    for (const [, input] of ROWS) {
      const c = classifyTouch(touch(input));
      if (c) reached.add(c.channel);
    }
    expect([...CHANNELS].filter((c) => !reached.has(c))).toEqual([]);
  });

  it("tolerates a landing URL that does not parse", () => {
    expect(
      classifyTouch({ url: "not a url", siteHostnames: [], referrerHost: "bing.com" }),
    ).toEqual({
      channel: "Organic Search",
      source: "Bing",
      medium: "organic",
    });
  });
});
