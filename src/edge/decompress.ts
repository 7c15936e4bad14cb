/**
 * Request body decompression shared by both doors, with the body limit
 * applied to the decompressed size and a cap on the expansion ratio, so a
 * small "zip bomb" costs no more than a plain body of the limit's size.
 */
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from "node:zlib";
import { doorErrors } from "./door-errors.js";

/** At most this many decompressed bytes per compressed byte (JSON batches expand 5-20 times). */
export const MAX_EXPANSION_RATIO = 100;

/** The encodings each door decodes; `identity` means none. */
export type Encoding = "gzip" | "deflate" | "br";

/** Reads a request body up to `limit` bytes; throws the 413-kind error past it. */
export async function readLimited(payload: AsyncIterable<Buffer>, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of payload) {
    size += chunk.length;
    if (size > limit) throw doorErrors.bodyTooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * The encoding a REST `Content-Encoding` header names, undefined for none or
 * `identity`. Anything else (an unknown or a stacked encoding) is refused
 * with 415 before the body is read.
 */
export function restEncodingOf(header: string | string[] | undefined): Encoding | undefined {
  const value = (Array.isArray(header) ? header.join(",") : (header ?? "")).trim().toLowerCase();
  if (value === "" || value === "identity") return undefined;
  if (value === "gzip" || value === "x-gzip") return "gzip";
  if (value === "deflate" || value === "br") return value;
  throw doorErrors.unsupportedMediaType("Content-Encoding must be gzip, deflate, br or identity");
}

/**
 * The body decompressed from `encoding`. Throws the 413-kind error when it
 * grows past `limit` bytes, `invalid_input` when it expands more than
 * {@link MAX_EXPANSION_RATIO} times or does not decompress.
 */
export function decompressBody(bytes: Buffer, encoding: Encoding, limit: number): Buffer {
  // One byte more than allowed tells "exactly the limit" from "past it".
  const ratioCap = Math.max(bytes.length, 1) * MAX_EXPANSION_RATIO;
  const options = { maxOutputLength: Math.min(limit, ratioCap) + 1 };
  let size: number;
  try {
    const plain = inflate(bytes, encoding, options);
    if (plain.length < options.maxOutputLength) return plain;
    size = plain.length;
  } catch (err) {
    if ((err as { code?: string }).code !== "ERR_BUFFER_TOO_LARGE") {
      throw doorErrors.unreadable(`the body does not decompress as ${encoding}`, err);
    }
    size = options.maxOutputLength;
  }
  // Output stopped one byte past the smaller of the two caps: say which one.
  if (size > limit) throw doorErrors.bodyTooLarge(limit);
  throw doorErrors.unreadable(
    `the body expands more than ${MAX_EXPANSION_RATIO} times when decompressed`,
  );
}

function inflate(bytes: Buffer, encoding: Encoding, options: { maxOutputLength: number }) {
  if (encoding === "gzip") return gunzipSync(bytes, options);
  if (encoding === "br") return brotliDecompressSync(bytes, options);
  // HTTP's "deflate" is the zlib format, but some clients send raw deflate: take both.
  return bytes.length > 0 && ((bytes[0] as number) & 0x0f) === 8 && isZlibHeader(bytes)
    ? inflateSync(bytes, options)
    : inflateRawSync(bytes, options);
}

/** A zlib header: compression method 8 and a check value that makes the first two bytes a multiple of 31. */
function isZlibHeader(bytes: Buffer): boolean {
  return bytes.length >= 2 && (((bytes[0] as number) << 8) | (bytes[1] as number)) % 31 === 0;
}
