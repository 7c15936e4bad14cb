/**
 * The collect endpoint's Origin check on its own: the Origin's host must be
 * one of the site's hostnames, exactly (case and a trailing dot aside),
 * never a suffix or prefix match.
 */
import { describe, expect, it } from "vitest";
import { DomainError } from "../../../../src/domain/errors.js";
import { checkOrigin } from "../../../../src/domain/events/origin.js";

const SITE = ["example.com", "shop.example.org."];

function verdict(origin: string, hostnames: readonly string[] = SITE): string {
  try {
    checkOrigin(origin, hostnames);
    return "accepted";
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    return `${err.kind}: ${err.message}`;
  }
}

describe("checkOrigin", () => {
  it("accepts an http or https origin on one of the site's hostnames, any port or case", () => {
    for (const origin of [
      "https://example.com",
      "http://example.com",
      "https://EXAMPLE.com",
      "https://example.com:8443",
      "https://shop.example.org",
    ]) {
      expect(verdict(origin), origin).toBe("accepted");
    }
  });

  it("refuses a host that only ends or starts like a site hostname", () => {
    for (const [origin, host] of [
      ["https://evil-example.com", "evil-example.com"],
      ["https://notexample.com", "notexample.com"],
      ["https://example.com.evil.test", "example.com.evil.test"],
      ["https://example.co", "example.co"],
      ["https://evil.test", "evil.test"],
      ["https://example.org", "example.org"],
    ] as const) {
      expect(verdict(origin), origin).toBe(
        `invalid_input: Origin host ${host} is not one of the site's hostnames`,
      );
    }
  });

  it("refuses what is not an http(s) origin", () => {
    for (const origin of ["null", "garbage", "ftp://example.com", "file:///etc/passwd", ""]) {
      expect(verdict(origin), origin).toBe(
        "invalid_input: Origin must be the http or https origin of a page on one of the site's hostnames",
      );
    }
  });
});
