/**
 * Prometheus metrics, scraped over HTTP from the metrics listener after real
 * requests on every protocol: requests by route, protocol and status (the
 * real gRPC code), events accepted and dropped by reason, queue depth, group
 * commits, store errors and readiness; and one aggregated scrape of a
 * WORKERS=2 cluster.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromJson } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PaymentsService, RecordPaymentRequestSchema } from "../../gen/ingest/v1/payments_pb.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import {
  type MetricsServer,
  registrySource,
  startMetricsServer,
} from "../../src/metrics/metrics-server.js";
import type { Store } from "../../src/store/port.js";
import {
  freePort,
  startChildServer,
  stopChildServer,
  waitForOutput,
} from "../helpers/child-server.js";
import { BROWSER_UA, validEvent, validPayment } from "../helpers/fixtures.js";
import { createTenant, postJson, seedTenantFile } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

type Sample = { name: string; labels: Record<string, string>; value: number };

/** Parses the Prometheus text format (enough of it for prom-client's output). */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1] as string] = l[2] as string;
    }
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of the one sample of `name` whose labels include `labels` (undefined if none). */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}) {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches several`);
  return found[0]?.value;
}

async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  return parse(await res.text());
}

describe("metrics of one process", () => {
  const faults = { usage: false, gate: undefined as Promise<void> | undefined, ping: false };
  const metrics = createMetrics();
  let listener: MetricsServer;
  let url: string;

  const ctx = useTestServer({
    wrapStore: (store: Store): Store => ({
      ...store,
      getUsage: (...a) => (faults.usage ? Promise.resolve(1e12) : store.getUsage(...a)),
      commitEvents: async (groups) => {
        await faults.gate;
        return store.commitEvents(groups);
      },
      ping: () => (faults.ping ? Promise.reject(new Error("down")) : store.ping()),
    }),
    env: { INGEST_QUEUE_CAPACITY: "1" },
    metrics,
  });
  beforeAll(async () => {
    listener = await startMetricsServer(registrySource(metrics.registry), "127.0.0.1", 0);
    url = `http://127.0.0.1:${listener.port}/metrics`;
  });
  afterAll(() => listener.close());

  it("counts requests by route, protocol and status, with the real gRPC code", async () => {
    const pay = `${ctx.url}/api/v1/payments`;
    expect((await postJson(pay, validPayment(), { key: ctx.key })).status).toBe(200);
    expect((await postJson(pay, validPayment(), { key: ctx.key })).status).toBe(200);
    expect((await postJson(pay, validPayment())).status).toBe(401);
    expect((await fetch(`${ctx.url}/nowhere`)).status).toBe(404);
    const headers = { authorization: `Bearer ${ctx.key}` };
    for (const protocol of ["connect", "grpcweb", "grpc"] as const) {
      const c = ctx.client(PaymentsService, protocol);
      const payment = () => fromJson(RecordPaymentRequestSchema, validPayment());
      await c.recordPayment(payment(), { headers });
      await expect(c.recordPayment(payment())).rejects.toThrow("missing or malformed API key");
    }

    const s = await scrape(url);
    const requests = (route: string, protocol: string, status: string) =>
      value(s, "ingest_requests_total", { route, protocol, status });
    expect(requests("/api/v1/payments", "rest", "200")).toBe(2);
    expect(requests("/api/v1/payments", "rest", "401")).toBe(1);
    expect(requests("unmatched", "rest", "404")).toBe(1);
    const rpc = "/ingest.v1.PaymentsService/RecordPayment";
    expect(requests(rpc, "connect", "200")).toBe(1);
    expect(requests(rpc, "connect", "401")).toBe(1);
    expect(requests(rpc, "grpc-web", "ok")).toBe(1);
    expect(requests(rpc, "grpc-web", "unauthenticated")).toBe(1);
    expect(requests(rpc, "grpc", "ok")).toBe(1);
    expect(requests(rpc, "grpc", "unauthenticated")).toBe(1);
    expect(
      value(s, "ingest_request_duration_seconds_count", {
        route: "/api/v1/payments",
        protocol: "rest",
      }),
    ).toBe(3);
    // Five payments written, each in a group commit of the payments queue.
    expect(value(s, "ingest_group_commit_batch_size_sum", { queue: "payments" })).toBe(5);
    expect(
      value(s, "ingest_group_commit_duration_seconds_count", { queue: "payments", outcome: "ok" }),
    ).toBeGreaterThanOrEqual(1);
    expect(value(s, "ingest_queue_depth", { queue: "payments" })).toBe(0);
    expect(value(s, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
  });

  it("counts events accepted and dropped by reason", async () => {
    const send = (body: unknown, ua = BROWSER_UA) =>
      postJson(`${ctx.url}/api/v1/events`, body, {
        key: ctx.key,
        headers: { "user-agent": ua },
      });
    const ev = validEvent(ctx.siteId);
    expect((await send(ev)).status).toBe(204);
    expect((await send({ s: ctx.siteId, b: [ev, ev, { ...ev, ua: "curl/8.5.0" }] })).status).toBe(
      204,
    );
    expect((await send({ ...ev, w: -1 })).status).toBe(400);

    // Over quota: the store's counter says the month is full. Another account:
    // this process reads the counter only while its own commits do not show
    // that a request fits (src/domain/events/quota-gate.ts).
    const full = await createTenant(ctx.server);
    const fullEv = validEvent(full.siteId);
    faults.usage = true;
    const refused = await postJson(
      `${ctx.url}/api/v1/events`,
      { s: full.siteId, b: [fullEv, fullEv] },
      { key: full.key, headers: { "user-agent": BROWSER_UA } },
    );
    expect(refused.status).toBe(429);
    faults.usage = false;

    // Capacity 1: while one write waits, the next request finds the queue full.
    let open = () => {};
    faults.gate = new Promise<void>((r) => {
      open = r;
    });
    const waiting = send(ev);
    await new Promise((r) => setTimeout(r, 50));
    const during = await scrape(url);
    expect(value(during, "ingest_queue_depth", { queue: "events" })).toBe(1);
    expect((await send(ev)).status).toBe(503);
    faults.gate = undefined;
    open();
    expect((await waiting).status).toBe(204);

    const s = await scrape(url);
    expect(value(s, "ingest_events_accepted_total")).toBe(4);
    const dropped = (reason: string) => value(s, "ingest_events_dropped_total", { reason });
    expect(dropped("bot")).toBe(1);
    expect(dropped("invalid")).toBe(1);
    expect(dropped("quota")).toBe(2);
    expect(dropped("rate_limit")).toBe(1);
    expect(dropped("unavailable")).toBe(0);
    expect(value(s, "ingest_queue_depth", { queue: "events" })).toBe(0);
  });

  it("reports readiness and store errors", async () => {
    expect(value(await scrape(url), "ingest_ready")).toBe(1);
    faults.ping = true;
    try {
      expect(value(await scrape(url), "ingest_ready")).toBe(0);
      // The failed ping of that scrape is counted after the counter was read: it shows next time.
      const again = await scrape(url);
      expect(value(again, "ingest_ready")).toBe(0);
      expect(
        value(again, "ingest_store_errors_total", { operation: "ping" }),
      ).toBeGreaterThanOrEqual(1);
    } finally {
      faults.ping = false;
    }
    expect(value(await scrape(url), "ingest_ready")).toBe(1);
  });

  it("answers 404 off /metrics", async () => {
    expect((await fetch(`http://127.0.0.1:${listener.port}/`)).status).toBe(404);
  });
});

describe("metrics of the real process (METRICS_PORT)", () => {
  for (const workers of ["1", "2"]) {
    it(`WORKERS=${workers}: one scrape counts every process's requests`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "ingest-metrics-"));
      const file = join(dir, "ingest.sqlite");
      const seeded = await seedTenantFile(file);
      const metricsPort = await freePort();
      const child = await startChildServer({
        STORE_URL: `sqlite:${file}`,
        WORKERS: workers,
        METRICS_PORT: String(metricsPort),
        LOG_LEVEL: "info",
      });
      try {
        // Every worker listening (each joined the primary's scrapes before it listened).
        await waitForOutput(child, /"msg":"listening"/, Number(workers));
        // Separate connections, so the cluster spreads them over the workers.
        for (let i = 0; i < 12; i++) {
          const res = await fetch(`${child.url}/api/v1/payments`, {
            method: "POST",
            headers: {
              authorization: `Bearer ${seeded.key}`,
              "content-type": "application/json",
              connection: "close",
            },
            body: JSON.stringify(validPayment(`pay_m_${i}`)),
          });
          expect(res.status).toBe(200);
        }
        const s = await scrape(`http://127.0.0.1:${metricsPort}/metrics`);
        expect(
          value(s, "ingest_requests_total", {
            route: "/api/v1/payments",
            protocol: "rest",
            status: "200",
          }),
        ).toBe(12);
        expect(value(s, "ingest_group_commit_batch_size_sum", { queue: "payments" })).toBe(12);
        expect(value(s, "ingest_ready")).toBe(1);
      } finally {
        await stopChildServer(child);
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
