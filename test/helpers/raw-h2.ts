/** A raw HTTP/2 (h2c prior knowledge) request, for gRPC answers a generated client hides. */
import http2 from "node:http2";

export interface H2Answer {
  status: number;
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
}

/** Sends one request on a new h2c session and resolves with everything the server answered. */
export function h2Request(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  body?: Uint8Array,
  timeoutMs = 5_000,
): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    const timer = setTimeout(() => {
      session.destroy();
      reject(new Error(`HANG: no answer to ${path} within ${timeoutMs} ms`));
    }, timeoutMs);
    session.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    const req = session.request({ ":method": "POST", ":path": path, ...headers });
    let answer: H2Answer = { status: 0, headers: {}, trailers: {}, body: Buffer.alloc(0) };
    const chunks: Buffer[] = [];
    req.on("response", (h) => {
      answer = { ...answer, status: Number(h[":status"]), headers: h };
    });
    req.on("trailers", (t) => {
      answer.trailers = t;
    });
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", (err) => {
      clearTimeout(timer);
      session.destroy();
      reject(err);
    });
    req.on("end", () => {
      clearTimeout(timer);
      session.close();
      resolve({ ...answer, body: Buffer.concat(chunks) });
    });
    req.end(body);
  });
}
