/**
 * A port of one process reached from the other workers of the cluster. Under
 * WORKERS only one worker may hold some resources (the DuckDB file allows one
 * writing process): that worker serves the port (`servePort`), the others get
 * a proxy (`createRemotePort`) whose every method call travels over the
 * cluster's IPC channel to the primary, which routes it to the serving worker
 * (`relayPorts`) and its answer back, as src/cluster/rate-limiter.ts does for
 * the collect limits.
 *
 * The proxy knows no method names: a call is its method's name and its
 * arguments (plain data: the cluster forks with `serialization: 'advanced'`,
 * so bigint, Date and Map cross as they are). AbortSignal arguments stay
 * behind: aborting one cancels the call in the serving worker, whose method
 * gets a signal of its own at the same position (a call without one cannot
 * be stopped there: its answer is only dropped). An answer is a value, an
 * error as its transport-neutral kind (kind, message, retryAfterSeconds: never
 * a stack), or a stream: a method that returns an async iterable sends its
 * items as successive messages, only as many as the caller has granted
 * (credit), so a slow reader holds the producer instead of filling memory.
 *
 * Failures the caller sees as the port's `unavailable` error: no worker
 * serves the port (it is starting, or could not open its resource), the
 * serving worker dies during the call, or no answer comes within the call's
 * time limit (the call is then cancelled in the serving worker).
 */
import type { Worker } from "node:cluster";
import { DomainError, ERROR_KINDS, type ErrorKind, errors } from "../domain/errors.js";

const CALL = "port:call";
const CANCEL = "port:cancel";
const CREDIT = "port:credit";
const REPLY = "port:reply";
const SERVING = "port:serving";

/** A method call; `signals` are the positions of the AbortSignal arguments (sent as null). */
interface Call {
  type: typeof CALL;
  port: string;
  id: number;
  method: string;
  args: unknown[];
  signals: number[];
}
/** The caller gave up (its signal, its time limit, its end): the serving worker aborts the call. */
interface Cancel {
  type: typeof CANCEL;
  port: string;
  id: number;
}
/** The caller may take `items` more items of a streamed answer. */
interface Credit {
  type: typeof CREDIT;
  port: string;
  id: number;
  items: number;
}
/** An error as it crosses: its kind and what the caller is told, nothing else. */
export interface WireError {
  kind: ErrorKind;
  message: string;
  retryAfterSeconds?: number;
}
type ReplyBody =
  | { kind: "value"; value: unknown }
  | { kind: "error"; error: WireError }
  /** The answer is a stream: items follow as the caller grants credit. */
  | { kind: "stream" }
  | { kind: "item"; value: unknown }
  | { kind: "end" }
  /** From the primary: no worker serves the port, or it died during the call. */
  | { kind: "gone" };
type Reply = { type: typeof REPLY; port: string; id: number } & ReplyBody;
interface Serving {
  type: typeof SERVING;
  port: string;
}

/** The IPC channel of a worker (its `process`); tests pass their own. */
export type Channel = Pick<NodeJS.Process, "send" | "on" | "off">;

function isMessage<T extends { type: string }>(m: unknown, type: T["type"]): m is T {
  return (
    typeof m === "object" &&
    m !== null &&
    (m as { type?: unknown }).type === type &&
    typeof (m as { port?: unknown }).port === "string"
  );
}

function isTerminal(body: ReplyBody): boolean {
  return (
    body.kind === "value" || body.kind === "error" || body.kind === "end" || body.kind === "gone"
  );
}

// ---------------------------------------------------------------------------
// The primary: routes calls to the worker that serves their port.

/** The cluster as the primary's relay uses it (node:cluster; tests pass their own). */
export interface ClusterEvents {
  on(event: "message", fn: (worker: Worker, message: unknown) => void): unknown;
  on(event: "exit", fn: (worker: Worker) => void): unknown;
}

/**
 * In the cluster primary: the worker that says it serves a port gets that
 * port's calls; while none does (it is starting, restarting, or could not
 * open its resource) a call is answered `gone` at once. A serving worker that
 * exits fails its calls in flight (`gone`); a caller that exits has its calls
 * cancelled in the serving worker.
 */
export function relayPorts(cluster: ClusterEvents): void {
  const owners = new Map<string, Worker>();
  interface Route {
    caller: Worker;
    callerId: number;
    port: string;
    owner: Worker;
  }
  const routes = new Map<number, Route>();
  /** `${caller worker id} ${port} ${caller's id}` → the id the owner knows. */
  const byCaller = new Map<string, number>();
  const callerKey = (w: Worker, port: string, id: number) => `${w.id} ${port} ${id}`;
  let nextId = 0;

  const send = (w: Worker, message: Call | Cancel | Credit | Reply) => {
    if (!w.isConnected()) return;
    try {
      w.send(message);
    } catch {
      // The worker is going: its exit settles what it had in flight.
    }
  };
  const reply = (w: Worker, port: string, id: number, body: ReplyBody) =>
    send(w, { type: REPLY, port, id, ...body } as Reply);
  const forget = (id: number, route: Route) => {
    routes.delete(id);
    byCaller.delete(callerKey(route.caller, route.port, route.callerId));
  };

  cluster.on("message", (worker, message) => {
    if (isMessage<Serving>(message, SERVING)) {
      owners.set(message.port, worker);
      return;
    }
    if (isMessage<Call>(message, CALL)) {
      if (typeof message.id !== "number") return;
      const owner = owners.get(message.port);
      if (!owner?.isConnected()) {
        reply(worker, message.port, message.id, { kind: "gone" });
        return;
      }
      const id = nextId++;
      routes.set(id, { caller: worker, callerId: message.id, port: message.port, owner });
      byCaller.set(callerKey(worker, message.port, message.id), id);
      send(owner, { ...message, id });
      return;
    }
    if (isMessage<Cancel>(message, CANCEL) || isMessage<Credit>(message, CREDIT)) {
      const id = byCaller.get(callerKey(worker, message.port, message.id));
      const route = id === undefined ? undefined : routes.get(id);
      if (id === undefined || !route) return;
      if (message.type === CANCEL) forget(id, route);
      send(route.owner, { ...message, id });
      return;
    }
    if (isMessage<Reply>(message, REPLY)) {
      const route = routes.get(message.id);
      if (!route || route.owner !== worker) return;
      if (isTerminal(message)) forget(message.id, route);
      send(route.caller, { ...message, id: route.callerId });
    }
  });

  cluster.on("exit", (worker) => {
    for (const [port, owner] of owners) if (owner === worker) owners.delete(port);
    for (const [id, route] of routes) {
      if (route.owner === worker) {
        forget(id, route);
        reply(route.caller, route.port, route.callerId, { kind: "gone" });
      } else if (route.caller === worker) {
        forget(id, route);
        send(route.owner, { type: CANCEL, port: route.port, id });
      }
    }
  });
}

// ---------------------------------------------------------------------------
// The serving worker.

export interface ServePortOptions {
  channel?: Channel;
  /** An error that is not a DomainError (the caller is told `internal` only): log it here. */
  onInternalError?: (method: string, err: unknown) => void;
  /** A call has come in (before its method runs). */
  onCall?: (method: string) => void;
  /** A call its caller cancelled has ended (its method settled after the abort). */
  onCancelled?: (method: string) => void;
}

/** Stops serving: later calls are answered `gone` by the primary once it sees the exit. */
export interface ServedPort {
  close(): void;
}

function isAsyncIterable(v: unknown): v is AsyncIterable<unknown> {
  return (
    typeof v === "object" &&
    v !== null &&
    typeof (v as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === "function"
  );
}

/** What a thrown error becomes on the wire: a DomainError's kind and words; anything else `internal`. */
export function toWireError(err: unknown): WireError {
  if (err instanceof DomainError) {
    return {
      kind: err.kind,
      message: err.message,
      ...(err.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: err.retryAfterSeconds }),
    };
  }
  return { kind: "internal", message: "internal error" };
}

/** The DomainError a wire error stands for (an unknown kind is `internal`). */
export function fromWireError(wire: WireError): DomainError {
  const kind = (ERROR_KINDS as readonly string[]).includes(wire.kind) ? wire.kind : "internal";
  const retry = typeof wire.retryAfterSeconds === "number" ? wire.retryAfterSeconds : undefined;
  return errors.relayed(kind, String(wire.message), retry);
}

/**
 * In the worker that holds the resource: answers the port's calls with
 * `impl`'s methods (any function-valued property that is not Object's own),
 * then tells the primary it serves the port.
 */
export function servePort(port: string, impl: object, options: ServePortOptions = {}): ServedPort {
  const channel = options.channel ?? process;
  const send = channel.send?.bind(channel);
  if (!send) throw new Error("servePort needs an IPC channel (a cluster worker)");
  interface Running {
    controller: AbortController;
    credit: number;
    /** Wakes a stream waiting for credit or cancellation. */
    wake?: () => void;
  }
  const running = new Map<number, Running>();
  let closed = false;

  const reply = (id: number, body: ReplyBody, method?: string) => {
    try {
      send({ type: REPLY, port, id, ...body } as Reply);
    } catch (err) {
      // An answer the channel cannot carry (it is serialised as it is sent) fails the call
      // instead of leaving it to its time limit; a closed channel has nobody waiting.
      if (method === undefined || (err as { code?: unknown }).code === "ERR_IPC_CHANNEL_CLOSED") {
        return;
      }
      options.onInternalError?.(method, err);
      reply(id, { kind: "error", error: toWireError(err) });
    }
  };

  const answer = async (call: Call, run: Running) => {
    const method = call.method;
    const fn = (impl as Record<string, unknown>)[method];
    if (typeof fn !== "function" || Object.hasOwn(Object.prototype, method)) {
      reply(call.id, {
        kind: "error",
        error: { kind: "internal", message: `${port} has no method ${method}` },
      });
      return;
    }
    const args = Array.isArray(call.args) ? [...call.args] : [];
    for (const at of Array.isArray(call.signals) ? call.signals : []) {
      if (Number.isInteger(at) && at >= 0 && at < 64) args[at] = run.controller.signal;
    }
    const signal = run.controller.signal;
    try {
      const result: unknown = await fn.apply(impl, args);
      if (signal.aborted) return;
      if (!isAsyncIterable(result)) {
        reply(call.id, { kind: "value", value: result }, method);
        return;
      }
      reply(call.id, { kind: "stream" });
      const it = result[Symbol.asyncIterator]();
      try {
        for (;;) {
          while (run.credit <= 0 && !signal.aborted) {
            await new Promise<void>((r) => {
              run.wake = r;
            });
          }
          if (signal.aborted) return;
          const next = await it.next();
          if (signal.aborted) return;
          if (next.done) {
            reply(call.id, { kind: "end" });
            return;
          }
          run.credit -= 1;
          reply(call.id, { kind: "item", value: next.value }, method);
        }
      } finally {
        if (signal.aborted) await it.return?.().catch(() => {});
      }
    } catch (err) {
      if (signal.aborted) return;
      if (!(err instanceof DomainError)) options.onInternalError?.(method, err);
      reply(call.id, { kind: "error", error: toWireError(err) });
    }
  };

  const onMessage = (message: unknown) => {
    if (isMessage<Call>(message, CALL) && message.port === port) {
      if (typeof message.id !== "number" || running.has(message.id)) return;
      if (closed) {
        reply(message.id, { kind: "gone" });
        return;
      }
      const run: Running = { controller: new AbortController(), credit: 0 };
      running.set(message.id, run);
      const id = message.id;
      options.onCall?.(message.method);
      void answer(message, run).finally(() => {
        running.delete(id);
        if (run.controller.signal.aborted) options.onCancelled?.(message.method);
      });
      return;
    }
    if (isMessage<Cancel>(message, CANCEL) && message.port === port) {
      const run = running.get(message.id);
      if (!run) return;
      run.controller.abort();
      run.wake?.();
      return;
    }
    if (isMessage<Credit>(message, CREDIT) && message.port === port) {
      const run = running.get(message.id);
      if (!run || !Number.isInteger(message.items) || message.items <= 0) return;
      run.credit += message.items;
      run.wake?.();
    }
  };
  channel.on("message", onMessage);
  send({ type: SERVING, port } satisfies Serving);
  return {
    close() {
      closed = true;
      channel.off("message", onMessage);
      for (const run of running.values()) {
        run.controller.abort();
        run.wake?.();
      }
    },
  };
}

// ---------------------------------------------------------------------------
// The calling workers.

export interface RemotePortOptions {
  channel?: Channel;
  /**
   * How long a call may wait for its answer (for a stream: for each item)
   * before it is cancelled and fails as `unavailable()`. Longer than the
   * serving side's own time limit, which answers first with its own error.
   */
  timeoutMs: number;
  /** The port's error when its serving worker cannot answer (503 `unavailable`). */
  unavailable: (cause?: unknown) => Error;
  /** Items of a streamed answer in flight at once (default 2). */
  window?: number;
}

/** A call's answer: awaited for a value; iterated (for await) when the method returns a stream. */
type Answer = Promise<unknown> & AsyncIterable<unknown>;

/**
 * In a worker that does not hold the resource: a `T` whose every method is
 * forwarded to the worker that does (the primary routes it). The method list
 * is not known here: any property read is a method. A method whose serving
 * implementation returns an async iterable answers one: awaiting the call
 * gives it, and so does iterating the call's result directly.
 */
export function createRemotePort<T extends object>(port: string, options: RemotePortOptions): T {
  const channel = options.channel ?? process;
  const send = channel.send?.bind(channel);
  if (!send) throw new Error("createRemotePort needs an IPC channel (a cluster worker)");
  const window = Math.max(1, options.window ?? 2);
  const waiting = new Map<number, (body: ReplyBody) => void>();
  let nextId = 0;
  channel.on("message", (message: unknown) => {
    if (!isMessage<Reply>(message, REPLY) || message.port !== port) return;
    waiting.get(message.id)?.(message);
  });
  const post = (message: Call | Cancel | Credit): boolean => {
    try {
      send(message);
      return true;
    } catch {
      return false;
    }
  };

  const call = (method: string, rawArgs: unknown[]): Promise<unknown> => {
    const signals: number[] = [];
    const args = rawArgs.map((a, i) => {
      if (!(a instanceof AbortSignal)) return a;
      signals.push(i);
      return null;
    });
    const callerSignals = rawArgs.filter((a): a is AbortSignal => a instanceof AbortSignal);
    const id = nextId++;
    return new Promise<unknown>((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const cleanup = () => {
        clearTimeout(timer);
        waiting.delete(id);
        for (const s of callerSignals) s.removeEventListener("abort", onAbort);
      };
      const fail = (err: Error, cancel: boolean) => {
        if (cancel) post({ type: CANCEL, port, id });
        cleanup();
        if (!settled) {
          settled = true;
          reject(err);
        } else stream?.fail(err);
      };
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(
          () =>
            fail(
              options.unavailable(
                new Error(`${port}.${method}: no answer within ${options.timeoutMs} ms`),
              ),
              true,
            ),
          options.timeoutMs,
        );
      };
      function onAbort(this: AbortSignal) {
        fail(options.unavailable(this.reason), true);
      }
      let stream: StreamReader | undefined;
      const aborted = callerSignals.find((s) => s.aborted);
      if (aborted) {
        // Given up before it was asked: the owner never hears of it.
        settled = true;
        reject(options.unavailable(aborted.reason));
        return;
      }
      for (const s of callerSignals) s.addEventListener("abort", onAbort, { once: true });
      waiting.set(id, (body) => {
        switch (body.kind) {
          case "value":
            cleanup();
            settled = true;
            resolve(body.value);
            return;
          case "error":
            cleanup();
            if (!settled) {
              settled = true;
              reject(fromWireError(body.error));
            } else stream?.fail(fromWireError(body.error));
            return;
          case "gone":
            fail(options.unavailable(new Error(`no worker serves ${port}`)), false);
            return;
          case "stream":
            settled = true;
            clearTimeout(timer);
            stream = new StreamReader({
              window,
              grant: (items) => post({ type: CREDIT, port, id, items }),
              cancel: () => fail(options.unavailable(new Error("stream closed")), true),
              waitingFor: (on) => (on ? arm() : clearTimeout(timer)),
            });
            resolve(stream.iterable());
            return;
          case "item":
            stream?.push(body.value);
            return;
          case "end":
            cleanup();
            stream?.end();
            return;
        }
      });
      arm();
      if (!post({ type: CALL, port, id, method, args, signals })) {
        fail(options.unavailable(new Error("the IPC channel is closed")), false);
      }
    });
  };

  const methods = new Map<string, (...args: unknown[]) => Answer>();
  return new Proxy({} as T, {
    get(_target, prop) {
      // Not a thenable (a proxy must not look like a promise), nothing but string names.
      if (typeof prop !== "string" || prop === "then") return undefined;
      let fn = methods.get(prop);
      if (!fn) {
        fn = (...args: unknown[]) => answerOf(call(prop, args));
        methods.set(prop, fn);
      }
      return fn;
    },
  });
}

/** A call's promise, also iterable: `for await (const page of port.pages(...))` works as is. */
function answerOf(promise: Promise<unknown>): Answer {
  const answer = promise as Answer;
  answer[Symbol.asyncIterator] = () => {
    let inner: AsyncIterator<unknown> | undefined;
    const get = async () => {
      if (!inner) {
        const value = await promise;
        if (!isAsyncIterable(value)) throw new TypeError("this call's answer is not a stream");
        inner = value[Symbol.asyncIterator]();
      }
      return inner;
    };
    return {
      next: async () => (await get()).next(),
      return: async () => {
        if (inner?.return) return inner.return();
        // Not started yet: its answer, when it comes, is closed unread.
        promise.then(
          (v) => (isAsyncIterable(v) ? v[Symbol.asyncIterator]().return?.() : undefined),
          () => {},
        );
        return { done: true, value: undefined };
      },
    };
  };
  return answer;
}

/**
 * The caller's side of a streamed answer: items buffered up to the window,
 * credit granted one item at a time as the reader takes them.
 */
class StreamReader {
  private readonly items: unknown[] = [];
  private done = false;
  private error: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly o: {
      window: number;
      grant: (items: number) => void;
      cancel: () => void;
      /** Whether the reader waits for an item (the time limit runs only then). */
      waitingFor: (on: boolean) => void;
    },
  ) {
    o.grant(o.window);
  }

  push(item: unknown): void {
    this.items.push(item);
    this.o.waitingFor(false);
    this.wake?.();
  }
  end(): void {
    this.done = true;
    this.wake?.();
  }
  fail(err: Error): void {
    this.error ??= err;
    this.wake?.();
  }

  iterable(): AsyncIterable<unknown> {
    return {
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<unknown>> => {
          for (;;) {
            if (this.items.length > 0) {
              const value = this.items.shift();
              if (!this.done) this.o.grant(1);
              return { done: false, value };
            }
            if (this.error) throw this.error;
            if (this.done) return { done: true, value: undefined };
            this.o.waitingFor(true);
            await new Promise<void>((r) => {
              this.wake = r;
            });
            this.wake = undefined;
          }
        },
        return: async (): Promise<IteratorResult<unknown>> => {
          if (!this.done && !this.error) {
            this.error = new Error("stream closed");
            this.o.cancel();
          }
          return { done: true, value: undefined };
        },
      }),
    };
  }
}
