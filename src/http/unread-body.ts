/**
 * An answer sent before its request's body was read to the end (413 past a
 * route's limit, compressed or not; 401, 403, 404, 415 or 429 answered
 * before the body was read) closes its HTTP/1.1 connection: `Connection:
 * close`, and Node ends the connection once the answer is written. Left
 * open, the rest of the refused body would sit in the connection, and the
 * client's next request on it would wait for an answer until the request
 * timeout (408 after 20 s: issue 31). Draining the rest instead would make
 * the server read, for nothing, up to whatever a client chooses to send, so
 * the service closes. Fastify does the same for its own body limit; this
 * covers the doors that read bodies themselves (the REST door's
 * decompression, the RPC body guard). HTTP/2 has no such header and no such
 * problem: a stream is reset on its own, the session goes on.
 */
import type { FastifyInstance } from "fastify";

/** Adds the hook; it sees every answer of every door. */
export function registerCloseAfterUnreadBody(app: FastifyInstance): void {
  app.addHook("onSend", async function closeAfterUnreadBody(request, reply, payload) {
    const raw = request.raw;
    if (raw.httpVersionMajor === 1 && !raw.complete) reply.header("connection", "close");
    return payload;
  });
}
