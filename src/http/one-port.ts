/**
 * One port for every protocol. Node's h2c server refuses HTTP/1.1, so each
 * new connection is routed by its first bytes: the HTTP/2 connection preface
 * (`PRI * HTTP/2.0`, sent first by gRPC and `--http2-prior-knowledge`
 * clients) goes to an HTTP/2 server, anything else to an HTTP/1.1 server.
 * Both call the same request handler (Fastify's).
 *
 * Every connection is bounded in number and time (see {@link ConnectionLimits}):
 * a socket that never says which protocol it speaks, HTTP/1.1 headers or
 * bodies that never finish, idle keep-alive connections and HTTP/2 sessions
 * are cut, and an HTTP/2 client may open only so many streams at once.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import http2, {
  type Http2ServerRequest,
  type Http2ServerResponse,
  type Http2Session,
} from "node:http2";
import net, { type AddressInfo, type Socket } from "node:net";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n");

/**
 * HTTP/2 receive windows. The protocol's default, 64 KiB per stream and per
 * connection, lets a client with many calls in flight send only a few bodies
 * before it waits for a WINDOW_UPDATE, and the streams that wait starve:
 * 64 gRPC calls of 50 events on one connection had a p99 5-8 times their
 * median (docs/performance.md). A stream's window takes the largest RPC body
 * (64 KB) in one go; the connection's takes a body for each of many streams.
 * Unread data per connection stays within Node's own `maxSessionMemory`
 * (10 MB), as before.
 */
const STREAM_WINDOW = 128 * 1024;
const SESSION_WINDOW = 1024 * 1024;

type Handler = (
  req: IncomingMessage | Http2ServerRequest,
  res: ServerResponse | Http2ServerResponse,
) => void;

/** Caps on connections; the defaults are documented in docs/security.md. */
export interface ConnectionLimits {
  /** Open TCP connections at once; more are closed as soon as they are accepted. */
  maxConnections: number;
  /** Time for a new connection's first bytes and for an HTTP/1.1 request's headers. */
  headersTimeoutMs: number;
  /** Time for a whole request (headers and body) to arrive, on both HTTP versions. */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection or HTTP/2 session stays open. */
  idleTimeoutMs: number;
  /** Streams an HTTP/2 client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxConcurrentStreams: number;
}

export interface OnePortServer {
  /** The HTTP/1.1 server; Fastify treats it as its server. */
  readonly http1: http.Server;
  readonly http2: http2.Http2Server;
  listen(port: number, host: string): Promise<AddressInfo>;
  /**
   * Stops accepting connections, lets in-flight requests finish (HTTP/2
   * sessions get GOAWAY, idle HTTP/1.1 connections are closed) and resolves
   * when all connections are gone or `timeoutMs` passed (then they are cut).
   */
  close(timeoutMs: number): Promise<void>;
}

export function createOnePortServer(handler: Handler, limits: ConnectionLimits): OnePortServer {
  const h1 = http.createServer(
    {
      keepAliveTimeout: limits.idleTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // Node checks the two timeouts above on this interval (30 s by default): check often
      // enough that a slow client is cut close to its deadline.
      connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
    },
    handler as http.RequestListener,
  );
  const h2 = http2.createServer(
    {
      settings: {
        maxConcurrentStreams: limits.maxConcurrentStreams,
        initialWindowSize: STREAM_WINDOW,
      },
    },
    handler as (req: Http2ServerRequest, res: Http2ServerResponse) => void,
  );
  const sessions = new Set<Http2Session>();
  const sockets = new Set<Socket>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.setLocalWindowSize(SESSION_WINDOW);
    session.once("close", () => sessions.delete(session));
    // An idle session (no frame either way) is closed politely (GOAWAY), then cut.
    session.setTimeout(limits.idleTimeoutMs, () => {
      session.close();
      setTimeout(() => session.destroy(), 1_000).unref();
    });
  });
  h2.on("stream", (stream) => {
    // A request whose body is still arriving after requestTimeoutMs is cancelled, as on HTTP/1.1.
    const timer = setTimeout(() => {
      if (!stream.readableEnded) stream.close(http2.constants.NGHTTP2_CANCEL);
    }, limits.requestTimeoutMs);
    timer.unref();
    stream.once("end", () => clearTimeout(timer));
    stream.once("close", () => clearTimeout(timer));
  });

  const route = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    // A connection that never sends enough bytes to tell its protocol is cut.
    const detectTimer = setTimeout(() => socket.destroy(), limits.headersTimeoutMs);
    detectTimer.unref();
    socket.once("close", () => clearTimeout(detectTimer));
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const n = Math.min(head.length, PREFACE.length);
      const isH2 = head.subarray(0, n).equals(PREFACE.subarray(0, n));
      // Wait for more bytes only while they could still be the preface.
      if (isH2 && head.length < PREFACE.length) return;
      socket.off("data", onData);
      clearTimeout(detectTimer);
      socket.pause();
      socket.unshift(head);
      if (isH2) {
        // The HTTP/2 session reads what is buffered on the next tick; resuming
        // now would emit those bytes to nobody.
        h2.emit("connection", socket);
      } else {
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", onData);
  };

  const server = net.createServer({ pauseOnConnect: false }, route);
  server.maxConnections = limits.maxConnections;

  return {
    http1: h1,
    http2: h2,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          // The HTTP/1.1 server never listens itself; this starts its
          // connection tracking (idle closing, header and request timeouts).
          h1.emit("listening");
          resolve(server.address() as AddressInfo);
        });
      });
    },
    async close(timeoutMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sessions) s.close();
      h1.closeIdleConnections();
      // Keep-alive connections that finish a request later are closed then.
      h1.on("request", (_req, res) => res.setHeader("connection", "close"));
      const deadline = setTimeout(() => {
        h1.closeAllConnections();
        for (const s of sessions) s.destroy();
        for (const s of sockets) s.destroy();
      }, timeoutMs);
      const poll = setInterval(() => h1.closeIdleConnections(), 100);
      await closed;
      clearTimeout(deadline);
      clearInterval(poll);
      // Stops the HTTP/1.1 server's connection-checking timer; it was never listening.
      h1.close(() => {});
    },
  };
}
