/**
 * Exporting a site's events (issue 24): ReportsService.ExportEvents streamed
 * over Connect and gRPC, and `GET /api/v1/export/events` as NDJSON, against a
 * listening server; refusals with exact messages; a client that goes away
 * stops the store reads; a 200,000-event range streams with flat memory.
 */
import { request } from "node:http";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { toJsonString } from "@bufbuild/protobuf";
import type { ClientReadableStream } from "@grpc/grpc-js";
import { Metadata } from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import { ReportsService, StoredEventSchema } from "../../gen/ingest/v1/reports_pb.js";
import { EXPORT_PAGE } from "../../src/domain/reports.js";
import type { Store } from "../../src/store/port.js";
import { BROWSER_UA, commitStraight, sendTagged, tagOf } from "../helpers/events.js";
import { expectRefusals, type Refusal } from "../helpers/refusals.js";
import { describeRpcError, grpcJsClient, type Protocol } from "../helpers/rpc-clients.js";
import { postJson, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

/** Page reads of the store, to see when an export stops reading. */
let pageReads = 0;
const counting = (store: Store): Store =>
  new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === "pageEvents") {
        return (...args: Parameters<Store["pageEvents"]>) => {
          pageReads++;
          return target.pageEvents(...args);
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });

const ctx = useTestServer({ wrapStore: counting });
const iso = (ms: number) => new Date(ms).toISOString();

/** Sends pageviews tagged `tags` to the test site, event times given. */
const send = (tags: number[], ts?: (tag: number) => number) =>
  sendTagged(ctx.url, ctx.tenant, tags, ts);

/** Writes `n` events straight to the store at times [t, t + n) ms. */
const seed = (store: Store, siteId: string, n: number, t: number) =>
  commitStraight(store, siteId, n, (j) => ({
    name: "pageview",
    url: `https://example.com/${j}`,
    ts: t + j,
    receivedAt: t + j,
    visitorId: `v${j % 1000}`,
    // 200 characters: the body is far larger than the heap may grow by.
    title: `${j}`.padEnd(200, "."),
  }));

/** A full garbage collection (V8's own, exposed for this test), so the heap shows what is held. */
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const exportUrl = (query: string) => `${ctx.url}/api/v1/export/events?${query}`;
const auth = () => ({ authorization: ctx.adminHeaders.authorization });

describe("ExportEvents", () => {
  const T = TEST_NOW - 3_600_000;
  const range = `from=${iso(T)}&to=${iso(T + 10_000)}`;

  it("streams the range as NDJSON, newest first, each line the event's StoredEvent JSON with RFC 3339 times beside", async () => {
    await send([1, 2, 3, 4, 5], (tag) => T + tag * 1000);
    await send([99], () => T + 20_000); // after the range
    const res = await fetch(exportUrl(`site_id=${ctx.siteId}&${range}`), { headers: auth() });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8");
    const text = await res.text();
    const listed = await ctx
      .client(ReportsService)
      .listEvents(
        { siteId: ctx.siteId, limit: 100, from: iso(T), to: iso(T + 10_000) },
        { headers: ctx.adminHeaders },
      );
    expect(listed.events.map((e) => tagOf(e.url))).toEqual([5, 4, 3, 2, 1]);
    // Each line: the StoredEvent's proto JSON, plus tsIso and receivedAtIso (additive).
    const lines = text
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines).toEqual(
      listed.events.map((e) => ({
        ...JSON.parse(toJsonString(StoredEventSchema, e)),
        tsIso: new Date(Number(e.ts)).toISOString(),
        receivedAtIso: new Date(Number(e.receivedAt)).toISOString(),
      })),
    );
    expect(lines[0]).toMatchObject({
      name: "pageview",
      url: "https://example.com/5",
      siteId: ctx.siteId,
      ts: String(T + 5000),
      tsIso: new Date(T + 5000).toISOString(),
    });
    // tsIso comes right after ts.
    const keys = Object.keys(lines[0]);
    expect(keys[keys.indexOf("ts") + 1]).toBe("tsIso");
  });

  it("streams the range as CSV with a header row, times in both forms, text cells guarded", async () => {
    const at = T + 40_000;
    const sent = await postJson(
      `${ctx.url}/api/v1/events`,
      {
        s: ctx.siteId,
        b: [
          {
            e: "signup",
            u: "https://example.com/csv",
            t: '=HYPERLINK("x")',
            p: { plan: "a,b" },
            ts: at,
            ip: "203.0.113.9",
            ua: BROWSER_UA,
          },
        ],
      },
      { key: ctx.key },
    );
    expect(sent.status).toBe(204);
    const res = await fetch(
      exportUrl(`site_id=${ctx.siteId}&from=${iso(at)}&to=${iso(at + 1)}&format=csv`),
      { headers: auth() },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8; header=present");
    const [event] = (
      await ctx
        .client(ReportsService)
        .listEvents(
          { siteId: ctx.siteId, limit: 1, from: iso(at), to: iso(at + 1) },
          { headers: ctx.adminHeaders },
        )
    ).events;
    expect(await res.text()).toBe(
      "name,url,referrer,title,width,language,props,ts,ts_iso,received_at,received_at_iso,visitor_id,user_id,country,browser,os,device,referrer_host,utm_source,utm_medium,utm_campaign,utm_term,utm_content,click_ids\r\n" +
        `signup,https://example.com/csv,,"'=HYPERLINK(""x"")",,,"{""plan"":""a,b""}",${at},${iso(at)},${event?.receivedAt},${iso(Number(event?.receivedAt))},${event?.visitorId},,,${event?.browser},${event?.os},${event?.device},,,,,,,\r\n`,
    );
  });

  it("answers an empty range with an empty body", async () => {
    const res = await fetch(
      exportUrl(`site_id=${ctx.siteId}&from=${iso(T - 10_000)}&to=${iso(T)}`),
      { headers: auth() },
    );
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
  });

  it.each(["connect", "grpc"] as Protocol[])(
    "streams the same events over %s, a message per store page",
    async (protocol) => {
      const got: number[] = [];
      let messages = 0;
      for await (const m of ctx
        .client(ReportsService, protocol)
        .exportEvents(
          { siteId: ctx.siteId, from: iso(T), to: iso(T + 10_000) },
          { headers: ctx.adminHeaders },
        )) {
        messages++;
        got.push(...m.events.map((e) => tagOf(e.url)));
      }
      expect(got).toEqual([5, 4, 3, 2, 1]);
      expect(messages).toBe(1);
    },
  );

  it("refuses bad requests with exact messages in the envelope", async () => {
    const cases: Refusal[] = [
      [`site_id=${ctx.siteId}`, {}, 401, "unauthorized", "missing or invalid admin token"],
      ["", auth(), 400, "invalid_input", "site_id: required"],
      [
        `site_id=${ctx.siteId}&site_id=x`,
        auth(),
        400,
        "invalid_input",
        "site_id: must be given once",
      ],
      [
        `site_id=${ctx.siteId}&from=yesterday`,
        auth(),
        400,
        "invalid_input",
        "from: must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
      ],
      [
        `site_id=${ctx.siteId}&to=3`,
        auth(),
        400,
        "invalid_input",
        "to: must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
      ],
      [
        `site_id=${ctx.siteId}&from=${iso(T)}&to=${iso(T - 1)}`,
        auth(),
        400,
        "invalid_input",
        "to: must not be before from",
      ],
      [
        `site_id=${ctx.siteId}&format=xml`,
        auth(),
        400,
        "invalid_input",
        "format: must be ndjson or csv",
      ],
      ["site_id=site_nope", auth(), 404, "not_found", "site site_nope not found"],
    ];
    await expectRefusals(exportUrl, cases);
    const post = await fetch(exportUrl(`site_id=${ctx.siteId}`), {
      method: "POST",
      headers: auth(),
    });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  it("refuses over RPC with the same messages", async () => {
    const call = async (req: { siteId: string; from?: string; to?: string }, token = true) => {
      try {
        for await (const _ of ctx
          .client(ReportsService)
          .exportEvents(req, token ? { headers: ctx.adminHeaders } : {})) {
          // drained
        }
        return "ok";
      } catch (err) {
        return describeRpcError(err);
      }
    };
    expect(await call({ siteId: ctx.siteId }, false)).toMatchObject({
      code: "unauthenticated",
      message: "missing or invalid admin token",
    });
    expect(await call({ siteId: ctx.siteId, from: "x" })).toMatchObject({
      code: "invalid_argument",
      message: "from: must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
    });
    expect(await call({ siteId: "site_nope" })).toMatchObject({
      code: "not_found",
      message: "site site_nope not found",
    });
  });
});

describe("a large export", () => {
  const N = 200_000;
  const T = TEST_NOW - 86_400_000;
  const range = () => `site_id=${ctx.siteId}&from=${iso(T)}&to=${iso(T + N)}`;

  beforeAll(async () => {
    await seed(ctx.store, ctx.siteId, N, T);
    // The events leave SQLite for the analytics store, where exports read them (migration 19).
    await ctx.server.app.analytics?.feed.catchUp();
  }, 600_000);

  it("streams 200,000 events with the count matching and the heap bounded", async () => {
    gc();
    const base = process.memoryUsage().heapUsed;
    let peak = 0;
    let lines = 0;
    let bytes = 0;
    let rest = "";
    const res = await fetch(exportUrl(range()), { headers: auth() });
    expect(res.status).toBe(200);
    const decoder = new TextDecoder();
    let chunks = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.byteLength;
      const text = rest + decoder.decode(chunk, { stream: true });
      const parts = text.split("\n");
      rest = parts.pop() ?? "";
      lines += parts.length;
      if (++chunks % 100 === 0) {
        gc();
        peak = Math.max(peak, process.memoryUsage().heapUsed - base);
      }
    }
    expect(rest).toBe("");
    expect(lines).toBe(N);
    // The body is far larger than what the heap may grow by: nothing buffers the range
    // (measured: a 75 MB body, the heap after a collection at most about 3 MB above where it started).
    expect(bytes).toBeGreaterThan(70 * 1024 * 1024);
    expect(peak).toBeLessThan(16 * 1024 * 1024);
  }, 120_000);

  it("stops reading the store when the client goes away", async () => {
    const before = pageReads;
    await new Promise<void>((resolve, reject) => {
      const req = request(exportUrl(range()), { headers: auth() }, (res) => {
        expect(res.statusCode).toBe(200);
        // Read one chunk, then stop reading and go away.
        res.once("data", () => {
          res.pause();
          req.destroy();
          resolve();
        });
      });
      req.on("error", (e) => (e.message === "socket hang up" ? undefined : reject(e)));
      req.end();
    });
    await new Promise((r) => setTimeout(r, 300));
    const afterAbort = pageReads;
    await new Promise((r) => setTimeout(r, 500));
    expect(pageReads).toBe(afterAbort);
    // Far from the whole range's pages.
    expect(afterAbort - before).toBeLessThan(N / EXPORT_PAGE / 4);
  });

  it("streams to an independent grpc-js client, which stops the reads by cancelling", async () => {
    const c = grpcJsClient("reports.proto", "ReportsService", ctx.server.port);
    const md = new Metadata();
    md.set("authorization", ctx.adminHeaders.authorization);
    const open = (req: object) =>
      (
        c.client as unknown as Record<
          string,
          (r: object, m: Metadata) => ClientReadableStream<{ events: { url: string }[] }>
        >
      ).ExportEvents?.call(c.client, req, md) as ClientReadableStream<{
        events: { url: string }[];
      }>;
    try {
      // A small range, read to its end.
      const small = open({ site_id: ctx.siteId, from: iso(T), to: iso(T + 1200) });
      let count = 0;
      for await (const m of small) count += (m as { events: unknown[] }).events.length;
      expect(count).toBe(1200);

      // The whole range, cancelled after the first message.
      const before = pageReads;
      const call = open({ site_id: ctx.siteId, from: iso(T), to: iso(T + N) });
      const ended = new Promise<string>((resolve) => {
        call.on("error", (e: { code?: number }) => resolve(`error ${e.code}`));
        call.on("end", () => resolve("end"));
      });
      call.once("data", () => call.cancel());
      expect(await ended).toBe("error 1"); // CANCELLED
      await new Promise((r) => setTimeout(r, 300));
      const afterAbort = pageReads;
      await new Promise((r) => setTimeout(r, 500));
      expect(pageReads).toBe(afterAbort);
      expect(afterAbort - before).toBeLessThan(N / EXPORT_PAGE / 4);
    } finally {
      c.close();
    }
  });

  it.each(["connect", "grpc"] as Protocol[])(
    "stops reading the store when a %s call is cancelled",
    async (protocol) => {
      const before = pageReads;
      const controller = new AbortController();
      let got = 0;
      try {
        for await (const m of ctx
          .client(ReportsService, protocol)
          .exportEvents(
            { siteId: ctx.siteId, from: iso(T), to: iso(T + N) },
            { headers: ctx.adminHeaders, signal: controller.signal },
          )) {
          got += m.events.length;
          if (got >= 2 * EXPORT_PAGE) controller.abort();
        }
      } catch (err) {
        expect(describeRpcError(err)).toMatchObject({ code: "canceled" });
      }
      await new Promise((r) => setTimeout(r, 300));
      const afterAbort = pageReads;
      await new Promise((r) => setTimeout(r, 500));
      expect(pageReads).toBe(afterAbort);
      expect(afterAbort - before).toBeLessThan(N / EXPORT_PAGE / 4);
    },
  );
});
