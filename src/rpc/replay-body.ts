/**
 * Hands a request body already read back to connect-es. connect-node reads
 * a request's body by iterating the Node request (`for await (const chunk of
 * request)`, in `universalRequestFromNodeRequest`), so the guard, which has
 * consumed the stream, replaces the request's async iterator with one that
 * yields the bytes it read. This relies on connect-node's internals:
 * package.json pins @connectrpc/* exactly, and
 * test/foundation/rpc-body-replay.test.ts fails if connect-node stops reading
 * the body through this path.
 */
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";

/** Makes `raw` yield `body` (and nothing else) to whoever iterates it next. */
export function replayBody(raw: IncomingMessage | Http2ServerRequest, body: Uint8Array): void {
  Object.defineProperty(raw, Symbol.asyncIterator, {
    value: async function* () {
      yield body;
    },
    configurable: true,
  });
}
