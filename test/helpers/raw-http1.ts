/**
 * One HTTP/1.1 keep-alive connection driven byte by byte over a raw `net`
 * socket, for what a client library hides: whether the server closes the
 * connection after an answer, and whether a second request on the same
 * connection is answered.
 */
import { connect, type Socket } from "node:net";

/** One answer as read off the wire. */
export interface RawAnswer {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: Buffer;
}

export interface RawConnection {
  /** Writes bytes; a write to a connection the server has closed is ignored. */
  write(bytes: string | Buffer): void;
  /** The next complete answer (Content-Length framed); rejects if the connection ends first. */
  answer(): Promise<RawAnswer>;
  /** Resolves when the server has closed the connection (end or reset). */
  readonly closed: Promise<void>;
  /** Whether the server has closed the connection. */
  isClosed(): boolean;
  destroy(): void;
}

/** Opens a connection to `baseUrl`'s host and port. */
export function openRawConnection(baseUrl: string): Promise<RawConnection> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host: hostname, port: Number(port) });
    let buffered = Buffer.alloc(0);
    let ended = false;
    let wake: (() => void) | undefined;
    let markClosed: () => void = () => {};
    const closed = new Promise<void>((r) => {
      markClosed = r;
    });
    const end = () => {
      ended = true;
      markClosed();
      wake?.();
    };
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      wake?.();
    });
    socket.on("end", end);
    socket.on("close", end);
    // A reset after the server closed with our bytes unread: the connection is closed.
    socket.on("error", end);
    socket.once("connect", () => {
      socket.off("error", reject);
      resolve({
        write(bytes) {
          if (!ended && !socket.destroyed) socket.write(bytes);
        },
        async answer() {
          for (;;) {
            const head = buffered.indexOf("\r\n\r\n");
            if (head >= 0) {
              const lines = buffered.subarray(0, head).toString("latin1").split("\r\n");
              const status = Number((lines[0] ?? "").split(" ")[1]);
              const headers: Record<string, string> = {};
              for (const line of lines.slice(1)) {
                const colon = line.indexOf(":");
                headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
              }
              const length = Number(headers["content-length"] ?? 0);
              if (buffered.length >= head + 4 + length) {
                const body = buffered.subarray(head + 4, head + 4 + length);
                buffered = buffered.subarray(head + 4 + length);
                return { status, headers, body };
              }
            }
            if (ended) throw new Error("the connection ended before a complete answer");
            await new Promise<void>((r) => {
              wake = r;
            });
            wake = undefined;
          }
        },
        closed,
        isClosed: () => ended,
        destroy: () => socket.destroy(),
      });
    });
    socket.once("error", reject);
  });
}
