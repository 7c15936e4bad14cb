/**
 * A store that refuses (a validator, a duplicate key left after retries, a
 * RangeError) is not "unavailable": the request gets 500 `internal` without
 * Retry-After, so clients do not retry a poison request forever, and the log
 * names the cause (type and code, never the message). Transient errors stay
 * 503 `unavailable`. The errors are the MongoDB driver's own, thrown from the
 * store and classified by the adapter's one classifier (src/store/mongo/errors.ts).
 */
import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { StoreUnavailableError } from "../../src/domain/store-errors.js";
import { classifyErrors } from "../../src/store/mongo/errors.js";
import type { EventGroup, EventGroupResult, Store } from "../../src/store/port.js";
import { STORE_UNAVAILABLE, validEvent, validPayment } from "../helpers/fixtures.js";
import { networkError, serverError } from "../helpers/mongo/driver-errors.js";
import { connectTransport, rpcRecordPayment } from "../helpers/payment-clients.js";
import { describeEachStore, freshStore } from "../helpers/stores.js";
import { postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

describeEachStore("MongoDB errors through both doors", (kind) => {
  const logs: string[] = [];
  /** What the next commit throws: a raw driver error, classified on the way out. */
  const fault: { next?: () => Error } = {};

  /** The SQLite store presented as MongoDB whose commits throw driver errors. */
  function faulty(inner: Store): Store {
    const failing = (name: "commitPayments" | "commitEvents") =>
      (async (...args: never[]) => {
        const make = fault.next;
        if (make) throw make();
        return (inner[name] as (...a: never[]) => Promise<unknown>).apply(inner, args);
      }) as never;
    const classified = classifyErrors({
      commitPayments: failing("commitPayments"),
      commitEvents: failing("commitEvents"),
    });
    return new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === "kind") return "mongodb";
        if (prop === "commitPayments" || prop === "commitEvents") return classified[prop];
        return Reflect.get(target, prop, receiver);
      },
    });
  }

  const ctx = useTestServer(async () => ({
    store: await freshStore(kind),
    env: { LOG_LEVEL: "error" },
    wrapStore: faulty,
    logStream: { write: (line) => void logs.push(line) },
  }));

  it("a validator's refusal is 500 internal, no retry advice, cause logged without its message", async () => {
    fault.next = () => serverError(121, "Document failed validation: amount_minor 'pay_secret'");
    logs.length = 0;
    const res = await postJson(`${ctx.url}/api/v1/payments`, validPayment("pay_secret"), {
      key: ctx.key,
    });
    fault.next = undefined;
    expect(res.status).toBe(500);
    expect(res.headers.get("retry-after")).toBeNull();
    expect(res.body).toEqual({ ok: false, error: { code: "internal", message: "internal error" } });
    const line = logs.map((l) => JSON.parse(l)).find((l) => l.msg === "request failed");
    expect(line?.err).toMatchObject({
      type: "StoreFailureError",
      cause: { type: "MongoServerError", code: 121 },
    });
    expect(logs.join("\n")).not.toContain("pay_secret");
  });

  it("a RangeError in an event commit is 500 over REST and internal over Connect", async () => {
    fault.next = () => new RangeError("amount is not a safe integer");
    const res = await postJson(`${ctx.url}/api/v1/events`, validEvent(ctx.siteId), {
      key: ctx.key,
    });
    expect(res.status).toBe(500);
    expect(res.headers.get("retry-after")).toBeNull();
    expect(res.body).toEqual({ ok: false, error: { code: "internal", message: "internal error" } });
    const rpc = await rpcRecordPayment(
      connectTransport(ctx.server),
      validPayment("pay_rpc_refused"),
      ctx.key,
    );
    fault.next = undefined;
    expect(rpc).toMatchObject({ ok: false, code: Code.Internal, reason: "internal" });
  });

  it("a network error is 503 unavailable with Retry-After, through both doors", async () => {
    fault.next = networkError;
    const res = await postJson(`${ctx.url}/api/v1/payments`, validPayment("pay_net"), {
      key: ctx.key,
    });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(res.body).toEqual(STORE_UNAVAILABLE);
    const ev = await postJson(`${ctx.url}/api/v1/events`, validEvent(ctx.siteId), { key: ctx.key });
    expect(ev.status).toBe(503);
    const rpc = await rpcRecordPayment(
      connectTransport(ctx.server),
      validPayment("pay_rpc_net"),
      ctx.key,
    );
    fault.next = undefined;
    expect(rpc).toMatchObject({ ok: false, code: Code.Unavailable, reason: "unavailable" });
    // And nothing of them was written.
    expect(await ctx.store.getPayment(ctx.siteId, "pay_net")).toBeUndefined();
  });
});

describeEachStore("one request of a group commit failing alone", (kind) => {
  const batchSizes: number[] = [];

  /** Writes the groups of a batch, except those with a `doomed` event, which fail as MongoDB's would. */
  function perRequest(inner: Store): Store {
    return new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === "kind") return "mongodb";
        if (prop !== "commitEvents") return Reflect.get(target, prop, receiver);
        return async (groups: EventGroup[]): Promise<EventGroupResult[]> => {
          batchSizes.push(groups.length);
          const doomed = (g: EventGroup) => g.events.some((e) => e.name === "doomed");
          const written = await inner.commitEvents(groups.filter((g) => !doomed(g)));
          return groups.map((g) =>
            doomed(g)
              ? { ok: false, reason: "failed", error: new StoreUnavailableError("x") }
              : (written.shift() as EventGroupResult),
          );
        };
      },
    });
  }

  // A long flush delay, so that concurrent requests share one batch.
  const ctx = useTestServer(async () => ({
    store: await freshStore(kind),
    env: { INGEST_FLUSH_MS: "200" },
    wrapStore: perRequest,
  }));

  it("answers 503 to the request that did not land and 204 to the one that did, from one batch", async () => {
    const [landed, failed] = await Promise.all([
      postJson(`${ctx.url}/api/v1/events`, validEvent(ctx.siteId), { key: ctx.key }),
      postJson(
        `${ctx.url}/api/v1/events`,
        { ...validEvent(ctx.siteId), e: "doomed" },
        { key: ctx.key },
      ),
    ]);
    expect(batchSizes).toContain(2);
    expect(landed.status).toBe(204);
    expect(failed.status).toBe(503);
    expect(failed.headers.get("retry-after")).toBe("2");
    expect(failed.body).toEqual(STORE_UNAVAILABLE);
    const stored = await ctx.store.listEvents(ctx.siteId, 10);
    expect(stored.map((e) => e.name)).toEqual(["pageview"]);
  });
});
