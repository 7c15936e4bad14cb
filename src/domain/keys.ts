/** API key format, generation and hashing. */
import { createHash, randomBytes } from "node:crypto";
import { errors } from "./errors.js";

export const KEY_PREFIX = "mk_live_";
const KEY_PATTERN = /^mk_live_[0-9a-f]{48}$/;

/** A new secret key: the prefix and 48 lowercase hex characters (192 bits from a CSPRNG). */
export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(24).toString("hex");
}

/**
 * SHA-256 of the whole key. A 192-bit random secret cannot be brute-forced, so
 * a fast unsalted hash looked up through a unique index is enough; only this
 * hash is ever stored.
 */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** The part of a key that may be shown again, to recognise it in a list. */
export function keyDisplayPrefix(key: string): string {
  return key.slice(0, KEY_PREFIX.length + 4);
}

/** The token of an `Authorization: Bearer <token>` header value, if it has that form. */
export function bearerToken(header: string | undefined | null): string | undefined {
  return /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? "")?.[1];
}

/**
 * Extracts the key from an `Authorization: Bearer …` header value.
 * Throws the spec's 401 when the header is absent or the key is malformed.
 */
export function parseBearerKey(header: string | undefined | null): string {
  const key = bearerToken(header);
  if (!key?.startsWith(KEY_PREFIX)) throw errors.missingKey();
  return key;
}

/** Whether a string has the exact key format (prefix and 48 lowercase hex characters). */
export function isWellFormedKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}
