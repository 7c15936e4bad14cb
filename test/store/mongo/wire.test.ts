/**
 * The real driver, talking to a fake server over the wire protocol: what the
 * adapter's time limits and write concern look like on the wire, and that a
 * server that stops answering gets the request a bounded 503 without any
 * timer of the service's own.
 */
import type { Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateApiKey, hashApiKey } from "../../../src/domain/keys.js";
import { StoreUnavailableError } from "../../../src/domain/store-errors.js";
import { createMongoStore } from "../../../src/store/mongo/mongo-store.js";
import type { EventGroup, Store } from "../../../src/store/port.js";
import { STORE_UNAVAILABLE, validPayment } from "../../helpers/fixtures.js";
import { type FakeMongo, startFakeMongo } from "../../helpers/mongo/fake-server.js";
import { postJson } from "../../helpers/test-server.js";
import { useTestServer } from "../../helpers/use-test-server.js";

const group: EventGroup = {
  accountId: "acct_w",
  month: "2025-06",
  ceiling: 100,
  countable: 1,
  events: [
    {
      siteId: "site_w",
      name: "signup",
      url: "https://example.com/",
      ts: 1,
      receivedAt: 1,
      visitorId: "v",
    },
  ],
  links: [],
};

describe("the MongoDB adapter on the wire (real driver, fake server)", () => {
  let fake: FakeMongo;
  let store: Store;

  beforeAll(async () => {
    fake = await startFakeMongo();
    store = await createMongoStore(fake.url("ingest_wire"), { timeoutMs: 400 });
  });
  afterAll(async () => {
    await store?.close();
    await fake.close();
  });

  it("starts after verifying the schema with reads only, and sends maxTimeMS and the write concern with every write", async () => {
    const startup = [...new Set(fake.commands.map((c) => Object.keys(c)[0]))].sort();
    expect(startup).toEqual(["listCollections", "listIndexes"]);
    fake.commands.length = 0;
    const [r] = await store.commitEvents([group]);
    expect(r).toMatchObject({ ok: true });
    const byName = (name: string) => fake.commands.filter((c) => Object.keys(c)[0] === name);
    const update = byName("update")[0];
    expect(update?.update).toBe("events");
    expect(update?.maxTimeMS).toBe(400);
    expect(update?.writeConcern).toEqual({ w: "majority", j: true, wtimeout: 400 });
    expect(update?.ordered).toBe(false);
    for (const fam of byName("findAndModify")) {
      expect(fam.maxTimeMS).toBe(400);
      expect(fam.writeConcern).toMatchObject({ w: "majority", j: true });
    }
    expect(
      byName("findAndModify")
        .map((c) => c.findAndModify)
        .sort(),
    ).toEqual(["quota_usage", "sequences"]);
  });

  it("a server that stops answering: the driver gives up within its limits and the request fails as unavailable", async () => {
    fake.stall.add("update");
    const started = performance.now();
    const [r] = await store.commitEvents([group]);
    const ms = performance.now() - started;
    fake.stall.delete("update");
    expect(r).toMatchObject({ ok: false, reason: "failed" });
    expect((r as { error: Error }).error).toBeInstanceOf(StoreUnavailableError);
    // socketTimeoutMS = 2 × 400 + 1000: bounded by the driver, not by a timer of ours.
    expect(ms).toBeGreaterThanOrEqual(1_700);
    expect(ms).toBeLessThan(10_000);
  });

  it("one outcome per request through the real driver: a write error fails its request only", async () => {
    const other: EventGroup = {
      ...group,
      events: [{ ...(group.events[0] as EventGroup["events"][0]), siteId: "site_x" }],
    };
    fake.answer.set("update", (cmd) => ({
      ok: 1,
      n: ((cmd.updates as unknown[]).length ?? 1) - 1,
      nModified: 0,
      writeErrors: [{ index: 1, code: 121, errmsg: "Document failed validation" }],
    }));
    try {
      const [landed, refused] = await store.commitEvents([group, other]);
      expect(landed).toMatchObject({ ok: true });
      expect(refused).toMatchObject({ ok: false, reason: "failed" });
      expect((refused as { error: Error }).error.name).toBe("StoreFailureError");
    } finally {
      fake.answer.delete("update");
    }
  });

  it("a connection lost during the append: sent again with the same receipt; E11000 means it had landed", async () => {
    fake.commands.length = 0;
    fake.drop.add("update");
    fake.answer.set("update", () => ({
      ok: 1,
      n: 0,
      writeErrors: [
        { index: 0, code: 11000, errmsg: "E11000 duplicate key error index: receipts_unique" },
      ],
    }));
    try {
      const [r] = await store.commitEvents([group]);
      expect(r).toMatchObject({ ok: true });
    } finally {
      fake.answer.delete("update");
    }
    const appends = fake.commands.filter((c) => c.update === "events");
    expect(appends).toHaveLength(2);
    const receipt = (c: Document) => (c.updates as Document[])[0]?.u.$push.g;
    expect(receipt(appends[1] as Document)).toEqual(receipt(appends[0] as Document));
    // The quota was kept: no release was sent.
    expect(fake.commands.filter((c) => c.update === "quota_usage")).toHaveLength(0);
  });

  it("is not ready when the server it reaches is not a writable primary (hello)", async () => {
    await expect(store.ping()).resolves.toBeUndefined();
    fake.answer.set("hello", (cmd) => ({
      ...(fake.helloReply(cmd) as object),
      ismaster: false,
      isWritablePrimary: false,
      secondary: true,
      setName: "rs0",
    }));
    try {
      await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      fake.answer.delete("hello");
    }
    await expect(store.ping()).resolves.toBeUndefined();
  });
});

describe("REST through the real MongoDB driver (fake server)", () => {
  let fake: FakeMongo;
  const key = generateApiKey();

  const ctx = useTestServer(async () => {
    fake = await startFakeMongo();
    const url = fake.url("ingest_wire_rest");
    // The key's document, for authentication (`find` on api_keys), and its
    // Scale account (payments need the plan that has them).
    const DOCS: Record<string, Document[]> = {
      accounts: [{ _id: "acct_w", name: "Wire", plan: "scale", created_at: new Date(0) }],
    };
    fake.answer.set("find", (cmd) => ({
      cursor: {
        id: 0n,
        ns: `ingest_wire_rest.${String(cmd.find)}`,
        firstBatch:
          cmd.find === "api_keys"
            ? [
                {
                  _id: "key_w",
                  site_id: "site_w",
                  account_id: "acct_w",
                  name: "wire",
                  scopes: ["events", "payments"],
                  hash: hashApiKey(key),
                  prefix: key.slice(0, 12),
                  created_by: "user_w",
                  created_at: new Date(0),
                  last_used_at: new Date(),
                },
              ]
            : (DOCS[String(cmd.find)] ?? []),
      },
      ok: 1,
    }));
    return {
      env: { STORE_TIMEOUT_MS: "400" },
      store: {
        kind: "mongodb",
        url,
        open: () => createMongoStore(url, { timeoutMs: 400 }),
        cleanup: async () => fake.close(),
      },
      tenant: false,
    };
  });

  it("records a payment (200), answers a validator's refusal with 500, a silent server with 503", async () => {
    const ok = await postJson(`${ctx.url}/api/v1/payments`, validPayment("pay_w1"), { key });
    expect(ok.status).toBe(200);

    fake.answer.set("update", (cmd) => ({
      ok: 1,
      n: 0,
      writeErrors: [
        { index: 0, code: 121, errmsg: `Document failed validation ${String(cmd.update)}` },
      ],
    }));
    const refused = await postJson(`${ctx.url}/api/v1/payments`, validPayment("pay_w2"), {
      key,
    });
    fake.answer.delete("update");
    expect(refused.status).toBe(500);
    expect(refused.headers.get("retry-after")).toBeNull();
    expect(refused.body).toEqual({
      ok: false,
      error: { code: "internal", message: "internal error" },
    });

    fake.stall.add("update");
    const silent = await postJson(`${ctx.url}/api/v1/payments`, validPayment("pay_w3"), { key });
    fake.stall.delete("update");
    expect(silent.status).toBe(503);
    expect(silent.headers.get("retry-after")).toBe("2");
    expect(silent.body).toEqual(STORE_UNAVAILABLE);
  });
});
