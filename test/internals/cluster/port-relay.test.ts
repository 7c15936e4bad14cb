/**
 * The port relay (src/cluster/port-relay.ts) over a fake cluster: a port of
 * two methods the relay has never heard of served by one "worker", called by
 * another through the "primary"; answers and errors cross as structured
 * clones (the cluster's `serialization: 'advanced'`), cancellation and time
 * limits reach the serving side, a dying owner fails its calls, a streamed
 * answer moves only as fast as its reader grants credit.
 */
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { createRemotePort, relayPorts, servePort } from "../../../src/cluster/port-relay.js";
import { DomainError, errors } from "../../../src/domain/errors.js";

/** A fake worker: its process side (`channel`) and the primary's handle on it (`worker`). */
interface FakeWorker {
  id: number;
  channel: EventEmitter & { send(m: unknown): boolean };
  worker: EventEmitter & { id: number; send(m: unknown): boolean; isConnected(): boolean };
  /** Messages the worker sent to the primary, by type. */
  sent: string[];
  kill(): void;
}

/** A primary and its workers; messages cross as structured clones, asynchronously, as over IPC. */
function fakeCluster() {
  const primary = new EventEmitter();
  let nextId = 1;
  const fork = (): FakeWorker => {
    const id = nextId++;
    let connected = true;
    const channel = new EventEmitter() as FakeWorker["channel"];
    const worker = new EventEmitter() as FakeWorker["worker"];
    const sent: string[] = [];
    worker.id = id;
    channel.send = (m) => {
      if (!connected) throw new Error("channel closed");
      sent.push((m as { type: string }).type);
      const copy = structuredClone(m);
      setImmediate(() => connected && primary.emit("message", worker, copy));
      return true;
    };
    worker.send = (m) => {
      if (!connected) throw new Error("channel closed");
      const copy = structuredClone(m);
      setImmediate(() => connected && channel.emit("message", copy));
      return true;
    };
    worker.isConnected = () => connected;
    const kill = () => {
      connected = false;
      setImmediate(() => primary.emit("exit", worker));
    };
    return { id, channel, worker, sent, kill };
  };
  relayPorts(primary as never);
  return { fork };
}

/** The fake port: two methods, one answer with a bigint and a Date, one that may run long. */
interface Sums {
  total(values: bigint[], at: Date): Promise<{ sum: bigint; at: Date; by: Map<string, number> }>;
  slow(ms: number, signal?: AbortSignal): Promise<string>;
}

const unavailable = (cause?: unknown) => errors.analyticsUnavailable(cause);
const nextTurn = () => new Promise((r) => setImmediate(r));
/** Until `check` holds: each turn lets the fake IPC deliver what is in flight. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await nextTurn();
  expect(check()).toBe(true);
}

function slowImpl(record: { aborted: string[] }) {
  return (ms: number, signal?: AbortSignal) =>
    new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => resolve(`slept ${ms}`), ms);
      signal?.addEventListener("abort", () => {
        clearTimeout(t);
        record.aborted.push(`slow ${ms}`);
        reject(errors.analyticsUnavailable(signal.reason));
      });
    });
}

async function setUp(options: { timeoutMs?: number } = {}) {
  const cluster = fakeCluster();
  const owner = cluster.fork();
  const caller = cluster.fork();
  const record = { aborted: [] as string[], cancelled: [] as string[] };
  const impl: Sums = {
    async total(values, at) {
      return {
        sum: values.reduce((a, b) => a + b, 0n),
        at,
        by: new Map([["n", values.length]]),
      };
    },
    slow: slowImpl(record),
  };
  servePort("sums", impl, {
    channel: owner.channel as never,
    onCancelled: (m) => record.cancelled.push(m),
  });
  await until(() => owner.sent.includes("port:serving"));
  await nextTurn();
  const port = createRemotePort<Sums>("sums", {
    channel: caller.channel as never,
    timeoutMs: options.timeoutMs ?? 5_000,
    unavailable,
  });
  return { cluster, owner, caller, port, record, impl };
}

describe("the port relay", () => {
  it("forwards any method by name and brings back bigint, Date and Map as they are", async () => {
    const { port } = await setUp();
    const at = new Date(Date.UTC(2026, 2, 11));
    const answer = await port.total([2n ** 70n, 5n], at);
    expect(answer).toEqual({ sum: 2n ** 70n + 5n, at, by: new Map([["n", 2]]) });
    expect(await port.slow(1)).toBe("slept 1");
  });

  it("rejects with the owner's error as its kind, message and Retry-After, without a stack", async () => {
    const cluster = fakeCluster();
    const owner = cluster.fork();
    const caller = cluster.fork();
    const internal: string[] = [];
    servePort(
      "sums",
      {
        async total() {
          throw errors.tooManyQueries();
        },
        async slow() {
          throw new Error("secret detail /var/lib/db");
        },
      },
      { channel: owner.channel as never, onInternalError: (m) => internal.push(m) },
    );
    await until(() => owner.sent.includes("port:serving"));
    await nextTurn();
    const port = createRemotePort<Sums>("sums", {
      channel: caller.channel as never,
      timeoutMs: 5_000,
      unavailable,
    });
    const err = await port.total([], new Date(0)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({
      kind: "too_many_requests",
      message: "too many analytics queries running for this site, retry later",
      retryAfterSeconds: 1,
    });
    expect((err as Error).stack).not.toContain("analytics-engine");
    const other = await port.slow(1).catch((e: unknown) => e);
    expect(other).toMatchObject({ kind: "internal", message: "internal error" });
    expect(String((other as Error).message)).not.toContain("secret");
    expect(internal).toEqual(["slow"]);
  });

  it("cancels the owner's call when the caller's signal aborts", async () => {
    const { port, record } = await setUp({ timeoutMs: 60_000 });
    const abort = new AbortController();
    const call = port.slow(60_000, abort.signal);
    await nextTurn();
    await nextTurn();
    abort.abort(new Error("client gone"));
    await expect(call).rejects.toMatchObject({
      kind: "unavailable",
      message: "the analytics store is unavailable, retry later",
      cause: { message: "client gone" },
    });
    await until(() => record.cancelled.length === 1);
    expect(record.aborted).toEqual(["slow 60000"]);
    expect(record.cancelled).toEqual(["slow"]);
  });

  it("does not send a call whose signal aborted before it was made", async () => {
    const { port, owner, caller } = await setUp({ timeoutMs: 60_000 });
    const abort = new AbortController();
    abort.abort(new Error("client gone"));
    await expect(port.slow(1, abort.signal)).rejects.toMatchObject({
      kind: "unavailable",
      cause: { message: "client gone" },
    });
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(caller.sent).not.toContain("port:call");
    expect(owner.sent).toEqual(["port:serving"]);
  });

  it("cancels the owner's call past the call's time limit and answers unavailable", async () => {
    const { port, record } = await setUp({ timeoutMs: 50 });
    // The caller's signal (the request's) never aborts: the call's own time limit cancels.
    await expect(port.slow(60_000, new AbortController().signal)).rejects.toMatchObject({
      kind: "unavailable",
      cause: { message: "sums.slow: no answer within 50 ms" },
    });
    await until(() => record.cancelled.length === 1);
    expect(record.aborted).toEqual(["slow 60000"]);
  });

  it("answers unavailable at once while no worker serves the port", async () => {
    const cluster = fakeCluster();
    const caller = cluster.fork();
    const port = createRemotePort<Sums>("sums", {
      channel: caller.channel as never,
      timeoutMs: 60_000,
      unavailable,
    });
    await expect(port.slow(1)).rejects.toMatchObject({
      kind: "unavailable",
      message: "the analytics store is unavailable, retry later",
      retryAfterSeconds: 2,
      cause: { message: "no worker serves sums" },
    });
  });

  it("fails the calls in flight when the owner dies, and serves again from its replacement", async () => {
    const { cluster, owner, port, impl } = await setUp({ timeoutMs: 60_000 });
    const call = port.slow(60_000);
    await nextTurn();
    await nextTurn();
    owner.kill();
    // At once, from the primary (not the call's time limit, a minute away).
    const gone = { kind: "unavailable", cause: { message: "no worker serves sums" } };
    await expect(call).rejects.toMatchObject(gone);
    await expect(port.slow(1)).rejects.toMatchObject(gone);
    const next = cluster.fork();
    servePort("sums", impl, { channel: next.channel as never });
    await until(() => next.sent.includes("port:serving"));
    await nextTurn();
    expect(await port.slow(1)).toBe("slept 1");
  });

  it("cancels the owner's calls of a caller that dies", async () => {
    const { caller, port, record } = await setUp({ timeoutMs: 60_000 });
    port.slow(60_000, new AbortController().signal).catch(() => {});
    await until(() => caller.sent.includes("port:call"));
    await nextTurn();
    await nextTurn();
    caller.kill();
    await until(() => record.cancelled.length === 1);
    expect(record.aborted).toEqual(["slow 60000"]);
  });

  it("streams an async iterable's items only as fast as the reader grants credit", async () => {
    const cluster = fakeCluster();
    const owner = cluster.fork();
    const caller = cluster.fork();
    const produced: number[] = [];
    let closed = false;
    interface Pages {
      pages(n: number, signal?: AbortSignal): AsyncIterable<{ page: number; rows: bigint[] }>;
    }
    servePort(
      "pages",
      {
        async *pages(n: number) {
          try {
            for (let i = 0; i < n; i++) {
              produced.push(i);
              yield { page: i, rows: [BigInt(i)] };
            }
          } finally {
            closed = true;
          }
        },
      },
      { channel: owner.channel as never },
    );
    await until(() => owner.sent.includes("port:serving"));
    await nextTurn();
    const port = createRemotePort<Pages>("pages", {
      channel: caller.channel as never,
      timeoutMs: 5_000,
      unavailable,
      window: 2,
    });
    // Read to the end: every page, in order.
    const all: number[] = [];
    for await (const p of port.pages(5)) all.push(p.page);
    expect(all).toEqual([0, 1, 2, 3, 4]);
    expect(closed).toBe(true);

    // A reader that takes one page and waits: the owner stops at the window.
    produced.length = 0;
    closed = false;
    const it = port.pages(1_000)[Symbol.asyncIterator]();
    expect(await it.next()).toEqual({ done: false, value: { page: 0, rows: [0n] } });
    for (let i = 0; i < 50; i++) await nextTurn();
    // The window (2) and the one page granted back when page 0 was taken.
    expect(produced).toEqual([0, 1, 2]);
    // The reader leaves: the owner's generator is closed.
    await it.return?.();
    await until(() => closed);
    expect(produced.length).toBeLessThanOrEqual(4);
  });
});

describe("an answer the channel cannot carry", () => {
  it("fails the call as internal at once instead of leaving it to its time limit", async () => {
    const cluster = fakeCluster();
    const owner = cluster.fork();
    const caller = cluster.fork();
    const internal: string[] = [];
    servePort(
      "fns",
      {
        async make() {
          return { f: () => 1 };
        },
      },
      { channel: owner.channel as never, onInternalError: (m) => internal.push(m) },
    );
    await until(() => owner.sent.includes("port:serving"));
    await nextTurn();
    const port = createRemotePort<{ make(): Promise<unknown> }>("fns", {
      channel: caller.channel as never,
      timeoutMs: 60_000,
      unavailable,
    });
    await expect(port.make()).rejects.toMatchObject({
      kind: "internal",
      message: "internal error",
    });
    expect(internal).toEqual(["make"]);
  });
});
