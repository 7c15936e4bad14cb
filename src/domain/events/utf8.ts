/** UTF-8 byte lengths and truncation that never splits a character. */

/** The number of bytes `s` takes in UTF-8 (what the spec's byte limits count). */
export function utf8Length(s: string): number {
  return Buffer.byteLength(s, "utf8");
}

/**
 * `s` cut to at most `maxBytes` bytes of UTF-8, on a character boundary: a
 * multibyte character that does not fit whole is dropped, never split, so the
 * result is always valid UTF-8. Strings that fit are returned unchanged.
 */
export function truncateUtf8(s: string, maxBytes: number): string {
  // Each UTF-16 code unit is at most 3 UTF-8 bytes: short strings cannot be too long.
  if (s.length * 3 <= maxBytes) return s;
  const bytes = Buffer.from(s, "utf8");
  if (bytes.length <= maxBytes) return s;
  let end = maxBytes;
  // Step back over continuation bytes (10xxxxxx) to the start of the cut character.
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}
