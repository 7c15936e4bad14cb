/**
 * REST bodies at the byte level: gzip, deflate and br are decoded with every
 * size limit applied after decompression and an expansion-ratio cap; other
 * encodings get 415. Bytes that are not UTF-8 are refused on every door with
 * the same `invalid JSON: …` message. A request with both Content-Length and
 * Transfer-Encoding is refused.
 */
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { validEvent, validPayment } from "../helpers/fixtures.js";
import { h2Request } from "../helpers/raw-h2.js";
import { frame, parseHttpResponse, rawExchange, rawPost } from "../helpers/robustness.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();

async function post(path: string, body: Uint8Array, headers: Record<string, string> = {}) {
  const res = await fetch(ctx.url + path, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${ctx.key}`,
      ...headers,
    },
    body,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const envelope = (message: string, code = "invalid_input") => ({
  ok: false,
  error: { code, message },
});

const COMPRESSORS: [string, (b: Buffer) => Buffer][] = [
  ["gzip", gzipSync],
  ["x-gzip", gzipSync],
  ["deflate", deflateSync],
  ["deflate", deflateRawSync],
  ["br", brotliCompressSync],
];

describe("compressed REST bodies", () => {
  it.each(COMPRESSORS)("a payment sent with Content-Encoding: %s is recorded", async (enc, zip) => {
    const id = `pay_${enc}_${zip.name}`;
    const res = await post("/api/v1/payments", zip(Buffer.from(JSON.stringify(validPayment(id)))), {
      "content-encoding": enc,
    });
    expect(res).toEqual({ status: 200, body: { ok: true, data: { payment_id: id } } });
    expect((await ctx.store.getPayment(ctx.siteId, id))?.amountMinor).toBe(2999);
  });

  it("an event batch sent gzipped is recorded (204)", async () => {
    const batch = { s: ctx.siteId, b: [validEvent(ctx.siteId), validEvent(ctx.siteId)] };
    const res = await post("/api/v1/events", gzipSync(Buffer.from(JSON.stringify(batch))), {
      "content-encoding": "gzip",
    });
    expect(res.status).toBe(204);
  });

  it("the 8 KB events limit applies after decompression", async () => {
    // 9 KB of JSON that gzips to a few hundred bytes.
    const event = { ...validEvent(ctx.siteId), u: `https://example.com/${"a".repeat(9_000)}` };
    const zipped = gzipSync(Buffer.from(JSON.stringify(event)));
    expect(zipped.length).toBeLessThan(1024);
    const res = await post("/api/v1/events", zipped, { "content-encoding": "gzip" });
    expect(res).toEqual({ status: 413, body: envelope("request body larger than 8 KB") });
  });

  it("a body of exactly the limit decompressed is not refused for its size", async () => {
    const base = JSON.stringify({ ...validEvent(ctx.siteId), u: "https://example.com/" });
    const pad = 8 * 1024 - Buffer.byteLength(base);
    const exact = base.replace(
      '"u":"https://example.com/"',
      `"u":"https://example.com/${"b".repeat(pad)}"`,
    );
    expect(Buffer.byteLength(exact)).toBe(8 * 1024);
    const res = await post("/api/v1/events", gzipSync(Buffer.from(exact)), {
      "content-encoding": "gzip",
    });
    expect(res.status).not.toBe(413);
  });

  it("a decompression bomb is cut at the limit: 413 for payments, nothing stored", async () => {
    const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x20));
    const res = await post("/api/v1/payments", bomb, { "content-encoding": "gzip" });
    expect(res).toEqual({ status: 413, body: envelope("request body larger than 64 KB") });
  });

  it("a body that expands more than 100 times is refused even under the limit", async () => {
    // 60 KB of spaces inside a valid payment gzips to about 150 bytes.
    const text = `{${" ".repeat(60_000)}${JSON.stringify(validPayment("pay_ratio")).slice(1)}`;
    const zipped = gzipSync(Buffer.from(text));
    expect(text.length / zipped.length).toBeGreaterThan(100);
    const res = await post("/api/v1/payments", zipped, { "content-encoding": "gzip" });
    expect(res).toEqual({
      status: 400,
      body: envelope("the body expands more than 100 times when decompressed"),
    });
  });

  it("a body that is not the encoding it names is 400", async () => {
    const res = await post("/api/v1/payments", Buffer.from(JSON.stringify(validPayment())), {
      "content-encoding": "gzip",
    });
    expect(res).toEqual({ status: 400, body: envelope("the body does not decompress as gzip") });
  });

  it.each(["compress", "zstd", "gzip, br", "gzip;q=1"])(
    "Content-Encoding: %s gets 415 with the envelope",
    async (enc) => {
      const res = await post("/api/v1/payments", Buffer.from("{}"), { "content-encoding": enc });
      expect(res).toEqual({
        status: 415,
        body: envelope("Content-Encoding must be gzip, deflate, br or identity"),
      });
    },
  );

  it("Content-Encoding: identity is a plain body", async () => {
    const res = await post(
      "/api/v1/payments",
      Buffer.from(JSON.stringify(validPayment("pay_id"))),
      {
        "content-encoding": "identity",
      },
    );
    expect(res.status).toBe(200);
  });

  it("authentication still comes first: a bad key with a gzip body is 401", async () => {
    const res = await post("/api/v1/payments", gzipSync(Buffer.from("{}")), {
      "content-encoding": "gzip",
      authorization: "Bearer nope",
    });
    expect(res).toEqual({
      status: 401,
      body: envelope("missing or malformed API key", "unauthorized"),
    });
  });
});

/** A payment body with one of its string bytes replaced by a byte that breaks UTF-8. */
function damagedPayment(bad: number[]): { bytes: Buffer; at: number } {
  const text = JSON.stringify({ ...validPayment("pay_utf8"), customer: { id: "cus_@@" } });
  const at = Buffer.from(text).indexOf("@@");
  const bytes = Buffer.concat([
    Buffer.from(text).subarray(0, at),
    Buffer.from(bad),
    Buffer.from(text).subarray(at + 2),
  ]);
  return { bytes, at };
}

const DAMAGE: [string, number[]][] = [
  ["a lone continuation byte", [0x80]],
  ["a truncated two-byte sequence", [0xc3]],
  ["an overlong encoding", [0xc0, 0xaf]],
  ["a UTF-16 surrogate", [0xed, 0xa0, 0x80]],
  ["a code point past U+10FFFF", [0xf4, 0x90, 0x80, 0x80]],
  ["byte 0xFF", [0xff]],
];

describe("invalid UTF-8", () => {
  it.each(DAMAGE)("%s in a REST payment is 400 invalid JSON naming the byte", async (_n, bad) => {
    const { bytes, at } = damagedPayment(bad);
    const res = await post("/api/v1/payments", bytes);
    expect(res).toEqual({
      status: 400,
      body: envelope(`invalid JSON: the body is not valid UTF-8 (at byte ${at})`),
    });
    expect(await ctx.store.getPayment(ctx.siteId, "pay_utf8")).toBeUndefined();
  });

  it("in a REST event (text/plain too) is 400 as well", async () => {
    const text = Buffer.from(JSON.stringify(validEvent(ctx.siteId)));
    const bytes = Buffer.concat([text.subarray(0, 10), Buffer.from([0xfe]), text.subarray(10)]);
    for (const type of ["application/json", "text/plain"]) {
      const res = await post("/api/v1/events", bytes, { "content-type": type });
      expect(res).toEqual({
        status: 400,
        body: envelope("invalid JSON: the body is not valid UTF-8 (at byte 10)"),
      });
    }
  });

  it("inside a gzipped body is found after decompression", async () => {
    const { bytes, at } = damagedPayment([0xc3]);
    const res = await post("/api/v1/payments", gzipSync(bytes), { "content-encoding": "gzip" });
    expect(res.body).toEqual(envelope(`invalid JSON: the body is not valid UTF-8 (at byte ${at})`));
  });

  it("valid multi-byte UTF-8 (and a BOM-free body) is accepted", async () => {
    const body = { ...validPayment("pay_utf8_ok"), customer: { id: "cus_1", name: "Zoë € 😀" } };
    const res = await post("/api/v1/payments", Buffer.from(JSON.stringify(body)));
    expect(res.status).toBe(200);
  });

  it("Connect JSON gets the same message as invalid_argument", async () => {
    const { bytes, at } = damagedPayment([0x80]);
    const res = await post("/ingest.v1.PaymentsService/RecordPayment", bytes);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: "invalid_argument",
      message: `invalid JSON: the body is not valid UTF-8 (at byte ${at})`,
    });
  });

  it("gRPC-Web JSON frames get the same message", async () => {
    const { bytes, at } = damagedPayment([0x80]);
    const ans = await rawPost(
      `${ctx.url}/ingest.v1.PaymentsService/RecordPayment`,
      { "content-type": "application/grpc-web+json", authorization: `Bearer ${ctx.key}` },
      frame(bytes),
    );
    expect(ans.headers["grpc-status"]).toBe("3");
    expect(decodeURIComponent(String(ans.headers["grpc-message"]))).toBe(
      `invalid JSON: the body is not valid UTF-8 (at byte ${at})`,
    );
  });

  it("gRPC JSON frames get the same message", async () => {
    const { bytes, at } = damagedPayment([0xff]);
    const ans = await h2Request(
      ctx.url,
      "/ingest.v1.PaymentsService/RecordPayment",
      {
        "content-type": "application/grpc+json",
        te: "trailers",
        authorization: `Bearer ${ctx.key}`,
      },
      frame(bytes),
    );
    // gRPC carries the status in trailers.
    expect(ans.trailers["grpc-status"]).toBe("3");
    expect(decodeURIComponent(String(ans.trailers["grpc-message"]))).toBe(
      `invalid JSON: the body is not valid UTF-8 (at byte ${at})`,
    );
  });
});

describe("request framing", () => {
  it("Content-Length together with Transfer-Encoding is 400 with the envelope", async () => {
    const body = JSON.stringify(validPayment("pay_smuggle"));
    const raw = await rawExchange(
      ctx.server.port,
      Buffer.from(
        "POST /api/v1/payments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
          `Authorization: Bearer ${ctx.key}\r\nContent-Length: ${body.length}\r\n` +
          `Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
      ),
    );
    const res = parseHttpResponse(raw);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toEqual(envelope("the request could not be read"));
    expect(await ctx.store.getPayment(ctx.siteId, "pay_smuggle")).toBeUndefined();
  });

  it("headers larger than 16 KB are 431 with the envelope", async () => {
    const raw = await rawExchange(
      ctx.server.port,
      Buffer.from(
        `POST /api/v1/events HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(17 * 1024)}\r\nConnection: close\r\n\r\n`,
      ),
    );
    const res = parseHttpResponse(raw);
    expect(res.status).toBe(431);
    expect(JSON.parse(res.body)).toEqual(envelope("request headers too large"));
  });
});
