/**
 * An export never holds up the rest of the server (issue 31, defect 2): with
 * 1,000,000 events stored, a probe of `/healthz` and a payment sent while
 * `GET /api/v1/export/events` or the Connect ExportEvents stream is being
 * read as fast as the client can are both answered before the export ends
 * (the pages give the event loop a turn between them). At most
 * EXPORTS_PER_SITE (2) exports of one site run at once: the third gets 429
 * `rate_limited` with Retry-After over REST and `resource_exhausted` over
 * Connect, and a slot comes back when an export's client goes away. The
 * latency figures (p99 of the probes) are `npm run bench:export`'s.
 */
import { type ClientRequest, type IncomingMessage, request } from "node:http";
import { ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { EXPORT_PAGE } from "../../src/domain/reports.js";
import { commitStraight, envelope, pageviewsUntil } from "../helpers/events.js";
import { validPayment } from "../helpers/fixtures.js";
import { postJson, TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const EVENTS = 1_000_000;
/** Export pages (of EXPORT_PAGE events) the clients have received so far. */
let pagesReceived = 0;
const ctx = useTestServer({ env: { EXPORTS_PER_SITE: "2" } });
const exportUrl = () =>
  `${ctx.url}/api/v1/export/events?site_id=${ctx.siteId}&from=${new Date(TEST_NOW - EVENTS - 1).toISOString()}`;

beforeAll(async () => {
  // Straight through the store's commit path: HTTP would take minutes to load a million.
  await commitStraight(ctx.store, ctx.siteId, EVENTS, pageviewsUntil(TEST_NOW, EVENTS, 50_000));
  // The events leave SQLite for the analytics store, where the exports read them (migration 19).
  await ctx.server.app.analytics?.feed.catchUp();
}, 900_000);

/** An export request whose answer has begun; `ended` says whether its body has ended. */
interface OpenExport {
  req: ClientRequest;
  res: IncomingMessage;
  ended(): boolean;
}

/** Starts a REST export; `consume` reads the body as fast as it comes, else it is left unread. */
function openRestExport(consume: boolean): Promise<OpenExport> {
  return new Promise((resolve, reject) => {
    let done = false;
    const req = request(
      exportUrl(),
      { headers: ctx.adminHeaders, agent: false },
      (res: IncomingMessage) => {
        res.on("end", () => {
          done = true;
        });
        let lines = 0;
        res.on("data", (chunk: Buffer) => {
          for (const b of chunk) if (b === 10 && ++lines % EXPORT_PAGE === 0) pagesReceived++;
        });
        res.on("error", () => {});
        if (consume) res.resume();
        else res.pause();
        resolve({ req, res, ended: () => done });
      },
    );
    req.on("error", (err) => (done ? undefined : reject(err)));
    req.end();
  });
}

/**
 * The two probes the issue measured, `/healthz` and a payment stored through
 * the key, with the export pages read while they waited: a few when the
 * export gives the event loop a turn between pages; hundreds (seconds) when
 * it does not. Time itself is measured by `npm run bench:export`, not here.
 */
async function probes(): Promise<{ statuses: number[]; pagesMeanwhile: number }> {
  const before = pagesReceived;
  const [health, payment] = await Promise.all([
    fetch(`${ctx.url}/healthz`),
    postJson(`${ctx.url}/api/v1/payments`, validPayment(), { key: ctx.key }),
  ]);
  return { statuses: [health.status, payment.status], pagesMeanwhile: pagesReceived - before };
}

/** At most this many of the 10,000 pages may pass while the probes wait (a turn per page). */
const FEW_PAGES = 100;

describe("an export running at full speed", () => {
  it("REST: /healthz and a payment are answered before the export ends", async () => {
    const running = await openRestExport(true);
    try {
      await new Promise((r) => running.res.once("data", r));
      const probed = await probes();
      expect(probed.statuses).toEqual([200, 200]);
      expect(probed.pagesMeanwhile).toBeLessThan(FEW_PAGES);
      expect(running.ended()).toBe(false);
    } finally {
      running.req.destroy();
    }
  });

  it("Connect ExportEvents: /healthz and a payment are answered before the stream ends", async () => {
    const stream = ctx
      .client(ReportsService)
      .exportEvents(
        { siteId: ctx.siteId, from: new Date(TEST_NOW - EVENTS - 1).toISOString() },
        { headers: ctx.adminHeaders },
      );
    let ended = false;
    let messages = 0;
    let firstMessage: () => void = () => {};
    const first = new Promise<void>((r) => {
      firstMessage = r;
    });
    const abort = new AbortController();
    // Read as fast as messages come, in the background.
    const reading = (async () => {
      for await (const _ of stream) {
        pagesReceived++;
        if (++messages === 1) firstMessage();
        if (abort.signal.aborted) break;
      }
      ended = true;
    })();
    await first;
    const probed = await probes();
    expect(probed.statuses).toEqual([200, 200]);
    expect(probed.pagesMeanwhile).toBeLessThan(FEW_PAGES);
    expect(ended).toBe(false);
    abort.abort();
    await reading;
    expect(messages).toBeLessThan(EVENTS / 500);
  });
});

describe("exports of one site running at once", () => {
  it("refuses a third with 429 rate_limited and Retry-After (REST), resource_exhausted (Connect)", async () => {
    const a = await openRestExport(false);
    const b = await openRestExport(false);
    try {
      const third = await fetch(exportUrl(), { headers: ctx.adminHeaders });
      expect(third.status).toBe(429);
      expect(third.headers.get("retry-after")).toBe("10");
      expect(await third.json()).toEqual(
        envelope("rate_limited", "this site already has 2 exports running, retry later"),
      );

      const err = await (async () => {
        try {
          for await (const _ of ctx
            .client(ReportsService)
            .exportEvents({ siteId: ctx.siteId }, { headers: ctx.adminHeaders })) {
            return undefined;
          }
        } catch (e) {
          return ConnectError.from(e);
        }
      })();
      expect([err?.code, err?.rawMessage]).toEqual([
        8, // resource_exhausted
        "this site already has 2 exports running, retry later",
      ]);

      // A client that goes away gives its slot back.
      a.req.destroy();
      let status = 429;
      for (let i = 0; i < 200 && status === 429; i++) {
        const again = await fetch(exportUrl(), { headers: ctx.adminHeaders });
        status = again.status;
        await again.body?.cancel();
        if (status === 429) await new Promise((r) => setImmediate(r));
      }
      expect(status).toBe(200);
    } finally {
      a.req.destroy();
      b.req.destroy();
    }
  });
});
