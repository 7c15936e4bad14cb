import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { truncateUtf8, utf8Length } from "../../../../src/domain/events/utf8.js";

describe("truncateUtf8", () => {
  it("keeps strings that fit, whatever their characters", () => {
    expect(truncateUtf8("", 5)).toBe("");
    expect(truncateUtf8("héllo", 6)).toBe("héllo");
    expect(truncateUtf8("a".repeat(512), 512)).toBe("a".repeat(512));
  });

  it("never splits a two-, three- or four-byte character", () => {
    // "é" is 2 bytes: 3 bytes of "éé" hold one and a half; only one is kept.
    expect(truncateUtf8("éé", 3)).toBe("é");
    // "€" is 3 bytes.
    expect(truncateUtf8("a€", 3)).toBe("a");
    expect(truncateUtf8("a€", 4)).toBe("a€");
    // "😀" is 4 bytes (a surrogate pair in UTF-16).
    expect(truncateUtf8("😀😀", 7)).toBe("😀");
    expect(truncateUtf8("😀😀", 8)).toBe("😀😀");
  });

  it("gives the longest valid prefix that fits (property)", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme-composite", maxLength: 200 }),
        fc.nat(300),
        (s, max) => {
          const out = truncateUtf8(s, max);
          expect(utf8Length(out)).toBeLessThanOrEqual(Math.max(max, 0));
          expect(s.startsWith(out)).toBe(true);
          // Valid UTF-16 (no lone surrogate left by a cut).
          expect(Buffer.from(out, "utf8").toString("utf8")).toBe(out);
          if (out !== s) {
            // The next code point would not have fitted.
            const next = String.fromCodePoint(s.codePointAt(out.length) as number);
            expect(utf8Length(out) + utf8Length(next)).toBeGreaterThan(max);
          }
        },
      ),
    );
  });
});
