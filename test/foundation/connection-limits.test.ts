/**
 * Slow and idle connections are cut, and connections and HTTP/2 streams are
 * capped (short limits set through the environment, as an operator would):
 * a slowloris client, a body that stalls, a socket that never speaks, idle
 * keep-alive and HTTP/2 sessions, an HTTP/2 client opening more streams than
 * allowed, and one connection past MAX_CONNECTIONS.
 */
import http2 from "node:http2";
import net from "node:net";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { validEvent } from "../helpers/fixtures.js";
import { parseHttpResponse } from "../helpers/robustness.js";
import { useTestServer } from "../helpers/use-test-server.js";

const LIMITS = {
  HEADERS_TIMEOUT_MS: "400",
  REQUEST_TIMEOUT_MS: "800",
  IDLE_TIMEOUT_MS: "500",
  HTTP2_MAX_STREAMS: "4",
};

const ctx = useTestServer({ env: LIMITS });

interface Closed {
  /** Milliseconds from connecting to the server closing the socket. */
  afterMs: number;
  /** Everything the server wrote. */
  data: Buffer;
}

/**
 * Connects, runs `talk` with the socket, and resolves when the server closes
 * it (or fails after `limitMs`: a connection left open is the bug).
 */
function untilClosed(
  port: number,
  talk: (socket: net.Socket) => void,
  limitMs = 5_000,
): Promise<Closed> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const chunks: Buffer[] = [];
    const socket = net.connect(port, "127.0.0.1", () => talk(socket));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server left the connection open for ${limitMs} ms`));
    }, limitMs);
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ afterMs: performance.now() - started, data: Buffer.concat(chunks) });
    });
  });
}

describe("HTTP/1.1", () => {
  it("a slowloris client (headers that never finish) gets 408 and is cut", async () => {
    let drip: NodeJS.Timeout | undefined;
    const closed = await untilClosed(ctx.server.port, (socket) => {
      socket.write("POST /api/v1/events HTTP/1.1\r\nHost: x\r\n");
      drip = setInterval(() => socket.write("X-Slow: 1\r\n"), 100);
    });
    clearInterval(drip);
    const res = parseHttpResponse(closed.data);
    expect(res.status).toBe(408);
    expect(JSON.parse(res.body)).toEqual({
      ok: false,
      error: { code: "invalid_input", message: "request timed out" },
    });
    expect(closed.afterMs).toBeLessThan(3_000);
  });

  it("a body that stops arriving is cut after the request timeout", async () => {
    const body = JSON.stringify(validEvent(ctx.siteId));
    const closed = await untilClosed(ctx.server.port, (socket) => {
      socket.write(
        `POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ctx.key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
      );
    });
    expect(closed.afterMs).toBeGreaterThanOrEqual(700);
    expect(closed.afterMs).toBeLessThan(3_000);
  });

  it("a socket that never sends a byte is closed", async () => {
    const closed = await untilClosed(ctx.server.port, () => {});
    expect(closed.data.length).toBe(0);
    expect(closed.afterMs).toBeGreaterThanOrEqual(350);
    expect(closed.afterMs).toBeLessThan(3_000);
  });

  it("an idle keep-alive connection is closed after its request", async () => {
    const closed = await untilClosed(ctx.server.port, (socket) =>
      socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
    );
    expect(parseHttpResponse(closed.data).status).toBe(200);
    expect(closed.afterMs).toBeGreaterThanOrEqual(450);
    expect(closed.afterMs).toBeLessThan(3_000);
  });
});

describe("HTTP/2", () => {
  it("an idle session is closed (GOAWAY)", async () => {
    const session = http2.connect(ctx.url);
    const started = performance.now();
    const res = await new Promise<{ goaway: boolean; ms: number }>((resolve, reject) => {
      let goaway = false;
      const t = setTimeout(() => reject(new Error("idle session left open")), 5_000);
      session.on("goaway", () => {
        goaway = true;
      });
      session.on("error", () => {});
      session.on("close", () => {
        clearTimeout(t);
        resolve({ goaway, ms: performance.now() - started });
      });
    });
    expect(res.goaway).toBe(true);
    expect(res.ms).toBeLessThan(3_000);
  });

  it("the server announces its stream limit, and streams past it are refused", async () => {
    const session = http2.connect(ctx.url, {
      // Ignore the server's limit on our side, so the server has to enforce it.
      peerMaxConcurrentStreams: 1_000,
    });
    session.on("error", () => {});
    const settings = await new Promise<http2.Settings>((resolve) =>
      session.once("remoteSettings", resolve),
    );
    expect(settings.maxConcurrentStreams).toBe(4);
    // Requests whose bodies never end keep their streams open.
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, () => {
        const req = session.request({
          ":method": "POST",
          ":path": "/api/v1/events",
          "content-type": "application/json",
          authorization: `Bearer ${ctx.key}`,
        });
        req.write("{");
        return new Promise<string>((resolve) => {
          req.on("response", (h) => resolve(`status ${h[":status"]}`));
          req.on("error", (err: Error & { code?: string }) => resolve(err.code ?? err.message));
          req.on("close", () => resolve(`closed ${req.rstCode}`));
        });
      }),
    );
    session.destroy();
    const refused = outcomes.filter(
      (o) =>
        o === `closed ${http2.constants.NGHTTP2_REFUSED_STREAM}` || o === "ERR_HTTP2_STREAM_ERROR",
    );
    expect(refused.length, outcomes.join(", ")).toBeGreaterThanOrEqual(8);
  });

  it("the receive windows take a 64 KB body per stream and many bodies per connection", async () => {
    const session = http2.connect(ctx.url);
    session.on("error", () => {});
    const settings = await new Promise<http2.Settings>((resolve) =>
      session.once("remoteSettings", resolve),
    );
    // Per stream: the largest RPC body (64 KB) and its frame header without a WINDOW_UPDATE.
    expect(settings.initialWindowSize).toBe(128 * 1024);
    // Per connection: the server widens the 64 KiB default with a WINDOW_UPDATE after its SETTINGS.
    await new Promise<void>((resolve) => session.ping(() => resolve()));
    expect(session.state.remoteWindowSize).toBe(1024 * 1024);
    session.destroy();
  });

  it("a stream whose body never ends is cancelled after the request timeout", async () => {
    const session = http2.connect(ctx.url);
    session.on("error", () => {});
    const req = session.request({
      ":method": "POST",
      ":path": "/api/v1/events",
      "content-type": "application/json",
      authorization: `Bearer ${ctx.key}`,
    });
    req.on("error", () => {});
    req.write("{");
    const started = performance.now();
    // The session stays busy (pings) so only the request's own deadline can end it.
    const pinger = setInterval(() => session.ping(() => {}), 100);
    const ms = await new Promise<number>((resolve) =>
      req.on("close", () => resolve(performance.now() - started)),
    );
    clearInterval(pinger);
    session.destroy();
    expect(ms).toBeGreaterThanOrEqual(700);
    expect(ms).toBeLessThan(3_000);
  });
});

describe("MAX_CONNECTIONS", () => {
  const capped = useTestServer({ env: { MAX_CONNECTIONS: "2" }, tenant: false });

  it("a connection past the cap is closed at once, without an answer", async () => {
    const held: net.Socket[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        held.push(
          await new Promise<net.Socket>((resolve) => {
            const s = net.connect(capped.server.port, "127.0.0.1", () => resolve(s));
            s.on("error", () => {});
          }),
        );
      }
      const third = await untilClosed(
        capped.server.port,
        (s) => s.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
        3_000,
      );
      expect(third.data.length).toBe(0);
      for (const s of held) s.destroy();
      await new Promise((r) => setTimeout(r, 100));
      // Below the cap again: served.
      expect((await fetch(`${capped.url}/healthz`)).status).toBe(200);
    } finally {
      for (const s of held) s.destroy();
    }
  });
});

describe("settings", () => {
  it("defaults: 10 000 connections, 10 s headers, 20 s request, 65 s idle, 100 streams", () => {
    const c = loadConfig({});
    expect([
      c.maxConnections,
      c.headersTimeoutMs,
      c.requestTimeoutMs,
      c.idleTimeoutMs,
      c.http2MaxStreams,
    ]).toEqual([10_000, 10_000, 20_000, 65_000, 100]);
  });

  it.each([
    [{ MAX_CONNECTIONS: "0" }, 'MAX_CONNECTIONS must be an integer from 1 to 1000000, got "0"'],
    [
      { HEADERS_TIMEOUT_MS: "x" },
      'HEADERS_TIMEOUT_MS must be an integer from 100 to 600000, got "x"',
    ],
    [
      { HEADERS_TIMEOUT_MS: "5000", REQUEST_TIMEOUT_MS: "1000" },
      "HEADERS_TIMEOUT_MS (5000) must not exceed REQUEST_TIMEOUT_MS (1000)",
    ],
  ])("refuses %o", (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });
});
