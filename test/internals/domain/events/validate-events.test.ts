import { describe, expect, it } from "vitest";
import { DomainError } from "../../../../src/domain/errors.js";
import {
  FIELD_MESSAGES as M,
  validateEvents,
} from "../../../../src/domain/events/validate-events.js";

const NOW = Date.UTC(2025, 5, 15, 12, 0, 0);
const HOSTS = ["example.com", "www.example.com"];
const base = { s: "site_1", e: "pageview", u: "https://example.com/a" };

/** The 400 message for `body`; `hosts` null stands for "the site is not known". */
function problems(body: Record<string, unknown>, hosts: string[] | null = HOSTS): string {
  try {
    validateEvents(body, hosts ?? undefined, NOW);
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).kind).toBe("invalid_input");
    return (err as DomainError).message;
  }
  throw new Error("expected the body to be refused");
}

const one = (patch: Record<string, unknown>) => validateEvents({ ...base, ...patch }, HOSTS, NOW);

describe("single event", () => {
  it("accepts the minimal event and uses the receipt time", () => {
    expect(one({})).toEqual({
      siteId: "site_1",
      batch: false,
      events: [{ name: "pageview", url: "https://example.com/a", ts: NOW }],
    });
  });

  it("requires s, e and u", () => {
    expect(problems({}, null)).toBe("invalid event input: e: required; s: required; u: required");
    expect(problems({ s: "", e: "", u: "" }, null)).toBe(
      "invalid event input: e: required; s: required; u: required",
    );
  });

  it("e: pageview, $identify or a custom name of 1 to 64 letters, digits, spaces, _ or -", () => {
    for (const e of [
      "pageview",
      "$identify",
      "Signup",
      "sign up_2-x",
      "a".repeat(64),
      "Zahlung äöü",
    ]) {
      expect(one({ e, uid: "u1" }).events[0]?.name).toBe(e);
    }
    for (const e of ["a".repeat(65), "sign.up", "$pageview", "$custom", "emoji 😀", "tab\tname"]) {
      expect(problems({ ...base, e })).toBe(`invalid event input: e: ${M.name}`);
    }
  });

  it("p: nests at most 32 levels of objects and arrays", () => {
    const nested = (levels: number): Record<string, unknown> => {
      let v: unknown = 1;
      for (let i = 1; i < levels; i++) v = [v];
      return { x: v };
    };
    expect(one({ p: nested(32) }).events[0]?.props).toEqual(nested(32));
    expect(problems({ ...base, p: nested(33) })).toBe(`invalid event input: p: ${M.propsDepth}`);
    expect(M.propsDepth).toBe("must not nest objects or arrays more than 32 levels deep");
  });

  it("u: absolute http(s) URL of at most 2048 bytes", () => {
    const prefix = "https://example.com/";
    const fits = prefix + "a".repeat(2048 - prefix.length);
    expect(one({ u: fits }).events[0]?.url).toBe(fits);
    // 2049 bytes, and 2048 characters that are more than 2048 bytes.
    for (const u of [
      `${fits}a`,
      prefix + "é".repeat((2048 - prefix.length) / 2 + 1),
      "/relative/path",
      "example.com/x",
      "ftp://example.com/file",
      "javascript:alert(1)",
      "mailto:a@example.com",
    ]) {
      expect(problems({ ...base, u })).toBe(`invalid event input: u: ${M.url}`);
    }
  });

  it("u: host must be one of the site's hostnames, case-insensitively, any port", () => {
    expect(one({ u: "http://WWW.Example.COM:8080/x" }).events).toHaveLength(1);
    expect(one({ u: "https://example.com./x" }).events).toHaveLength(1);
    expect(problems({ ...base, u: "https://evil.com/x" })).toBe(
      "invalid event input: u: host evil.com is not one of the site's hostnames",
    );
    // Subdomains are other hosts.
    expect(problems({ ...base, u: "https://shop.example.com/" })).toBe(
      "invalid event input: u: host shop.example.com is not one of the site's hostnames",
    );
    // A look-alike host is named in its punycode form.
    expect(problems({ ...base, u: "https://exämple.com/" })).toBe(
      "invalid event input: u: host xn--exmple-cua.com is not one of the site's hostnames",
    );
  });

  it("r: at most 2048 bytes, free text", () => {
    expect(one({ r: "x".repeat(2048) }).events[0]?.referrer).toHaveLength(2048);
    expect(one({ r: "not a url" }).events[0]?.referrer).toBe("not a url");
    expect(one({ r: "" }).events[0]?.referrer).toBeUndefined();
    expect(problems({ ...base, r: "x".repeat(2049) })).toBe(
      `invalid event input: r: ${M.referrer}`,
    );
  });

  it("t: truncated to 512 bytes on a character boundary", () => {
    const t512 = `${"a".repeat(510)}é`; // 512 bytes
    expect(one({ t: t512 }).events[0]?.title).toBe(t512);
    const t513 = `${"a".repeat(511)}é`; // 513 bytes: é would be split
    expect(one({ t: t513 }).events[0]?.title).toBe("a".repeat(511));
    const euro = "€".repeat(200); // 600 bytes: 170 whole characters fit
    expect(one({ t: euro }).events[0]?.title).toBe("€".repeat(170));
  });

  it("l: truncated at 35 bytes", () => {
    expect(one({ l: "en-US" }).events[0]?.language).toBe("en-US");
    expect(one({ l: "x".repeat(35) }).events[0]?.language).toBe("x".repeat(35));
    expect(one({ l: `${"x".repeat(34)}ü` }).events[0]?.language).toBe("x".repeat(34));
  });

  it("w: integer 0 to 32767", () => {
    expect(one({ w: 0 }).events[0]?.width).toBe(0);
    expect(one({ w: 32_767 }).events[0]?.width).toBe(32_767);
    for (const w of [32_768, -1, 1.5]) {
      expect(problems({ ...base, w })).toBe(`invalid event input: w: ${M.width}`);
    }
  });

  it("uid: required for $identify, at most 128 bytes", () => {
    expect(problems({ ...base, e: "$identify" })).toBe(
      "invalid event input: uid: required for $identify",
    );
    expect(problems({ ...base, e: "$identify", uid: "" })).toBe(
      "invalid event input: uid: required for $identify",
    );
    expect(one({ e: "$identify", uid: "u".repeat(128) }).events[0]?.userId).toHaveLength(128);
    expect(problems({ ...base, uid: "é".repeat(65) })).toBe(`invalid event input: uid: ${M.uid}`);
    // A uid on another event is kept.
    expect(one({ uid: "u1" }).events[0]?.userId).toBe("u1");
  });

  it("p: a JSON object of at most 2048 bytes serialised", () => {
    const pad = (n: number) => ({ k: "x".repeat(n - '{"k":""}'.length) });
    expect(one({ p: pad(2048) }).events[0]?.props).toEqual(pad(2048));
    expect(problems({ ...base, p: pad(2049) })).toBe(`invalid event input: p: ${M.props}`);
    expect(problems({ ...base, p: [1, 2] })).toBe(`invalid event input: p: ${M.props}`);
  });

  it("ts: kept within [now - 1 h, now + 1 min], else the receipt time", () => {
    const min = 60_000;
    expect(one({ ts: NOW - 59 * min }).events[0]?.ts).toBe(NOW - 59 * min);
    expect(one({ ts: NOW - 60 * min }).events[0]?.ts).toBe(NOW - 60 * min);
    expect(one({ ts: NOW - 60 * min - 1 }).events[0]?.ts).toBe(NOW);
    expect(one({ ts: NOW - 61 * min }).events[0]?.ts).toBe(NOW);
    expect(one({ ts: NOW + min }).events[0]?.ts).toBe(NOW + min);
    expect(one({ ts: NOW + min + 1 }).events[0]?.ts).toBe(NOW);
    expect(one({ ts: 0 }).events[0]?.ts).toBe(NOW);
  });

  it("ip: an IPv4 or IPv6 address, canonicalised; ua: any string", () => {
    expect(one({ ip: "203.0.113.9" }).events[0]?.ip).toBe("203.0.113.9");
    expect(one({ ip: "::FFFF:203.0.113.9" }).events[0]?.ip).toBe("203.0.113.9");
    expect(one({ ip: "2001:DB8:0:0:0:0:0:1" }).events[0]?.ip).toBe("2001:db8::1");
    for (const ip of ["", "999.1.1.1", "localhost", "1.2.3.4:80"]) {
      expect(problems({ ...base, ip })).toBe(`invalid event input: ip: ${M.ip}`);
    }
    expect(one({ ua: "" }).events[0]?.ua).toBe("");
  });

  it("reports every problem at once, sorted by field", () => {
    expect(
      problems({
        s: "site_1",
        w: 40_000,
        u: "https://evil.com/",
        e: "no!",
        p: [],
        uid: "x".repeat(129),
        r: "r".repeat(3000),
        ip: "nope",
      }),
    ).toBe(
      "invalid event input: " +
        [
          `e: ${M.name}`,
          `ip: ${M.ip}`,
          `p: ${M.props}`,
          `r: ${M.referrer}`,
          "u: host evil.com is not one of the site's hostnames",
          `uid: ${M.uid}`,
          `w: ${M.width}`,
        ].join("; "),
    );
  });

  it("without the site's hostnames checks the URL's form only", () => {
    expect(problems({ e: "pageview", u: "https://evil.com/" }, null)).toBe(
      "invalid event input: s: required",
    );
  });
});

describe("batch", () => {
  const ev = (i: number) => ({ e: "pageview", u: `https://example.com/${i}` });
  const batch = (n: number) => ({ s: "site_1", b: Array.from({ length: n }, (_, i) => ev(i)) });

  it("accepts 1 and 50 events", () => {
    expect(validateEvents(batch(1), HOSTS, NOW).events).toHaveLength(1);
    const r = validateEvents(batch(50), HOSTS, NOW);
    expect(r.batch).toBe(true);
    expect(r.events.map((e) => e.url)).toEqual(batch(50).b.map((e) => e.u));
  });

  it("refuses 0 and 51 events without checking the elements", () => {
    expect(problems(batch(0))).toBe(`invalid event input: b: ${M.batchSize}`);
    expect(problems(batch(51))).toBe(`invalid event input: b: ${M.batchSize}`);
    const bad51 = { s: "site_1", b: Array.from({ length: 51 }, () => ({})) };
    expect(problems(bad51)).toBe(`invalid event input: b: ${M.batchSize}`);
  });

  it("an element may repeat the batch's site, not name another", () => {
    const b = [
      { ...ev(0), s: "site_1" },
      { ...ev(1), s: "site_2" },
    ];
    expect(problems({ s: "site_1", b })).toBe(`invalid event input: b[1].s: ${M.batchSite}`);
  });

  it("top-level event fields are not allowed with b", () => {
    expect(problems({ ...batch(1), e: "pageview", ua: "x", ts: NOW })).toBe(
      `invalid event input: e: ${M.notWithBatch}; ts: ${M.notWithBatch}; ua: ${M.notWithBatch}`,
    );
  });

  it("names elements as b[i].field, sorted by code units", () => {
    const b = Array.from({ length: 12 }, (_, i) => ev(i)) as Record<string, unknown>[];
    b[2] = { e: "pageview", u: "https://evil.com/" };
    b[10] = { e: "bad!", u: "https://example.com/", w: -1 };
    b[3] = { u: "https://example.com/" };
    expect(problems({ s: "site_1", b })).toBe(
      "invalid event input: " +
        [
          `b[10].e: ${M.name}`,
          `b[10].w: ${M.width}`,
          "b[2].u: host evil.com is not one of the site's hostnames",
          "b[3].e: required",
        ].join("; "),
    );
  });

  it("applies the field rules to each element", () => {
    const r = validateEvents(
      {
        s: "site_1",
        b: [
          { ...ev(0), t: "é".repeat(300), ts: NOW - 61 * 60_000 },
          { ...ev(1), e: "$identify", uid: "user-1", ts: NOW - 59 * 60_000 },
        ],
      },
      HOSTS,
      NOW,
    );
    expect(r.events[0]?.title).toBe("é".repeat(256));
    expect(r.events[0]?.ts).toBe(NOW);
    expect(r.events[1]).toMatchObject({
      name: "$identify",
      userId: "user-1",
      ts: NOW - 59 * 60_000,
    });
  });
});
