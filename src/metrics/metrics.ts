/**
 * Prometheus metrics (prom-client): the {@link Observer} that counts. The
 * domain knows nothing of them: it is handed plain observer interfaces (group
 * commit, store errors) and the doors are observed from Fastify's request
 * lifecycle and a Connect interceptor. Loaded only when METRICS_PORT is set.
 * Each app has its own registry; with WORKERS=N the cluster primary
 * aggregates the workers' registries into one scrape (see metrics-server.ts).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyRequest } from "fastify";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { DomainError } from "../domain/errors.js";
import type { EventsResult } from "../domain/events/events-app.js";
import type { DropReason, Observer, Protocol, RpcSlot } from "./observer.js";
import { rpcSlotKey } from "./observer.js";

/** The Prometheus observer: its registry is what the metrics listener serves. */
export interface Metrics extends Observer {
  readonly registry: Registry;
}

/** An RPC method path: /package.Service/Method. */
const RPC_PATH = /^\/[a-z0-9_.]+\.[A-Z]\w*\/[A-Z]\w*$/;

const CODE_NAMES = Object.fromEntries(
  Object.entries(Code)
    .filter(([, v]) => typeof v === "number")
    .map(([k, v]) => [v, k.replace(/[A-Z]/g, (c, i) => (i ? "_" : "") + c.toLowerCase())]),
) as Record<number, string>;

function protocolOf(request: FastifyRequest, route: string): Protocol {
  const type = request.headers["content-type"]?.toLowerCase() ?? "";
  if (type.startsWith("application/grpc-web")) return "grpc-web";
  if (type.startsWith("application/grpc")) return "grpc";
  return RPC_PATH.test(route) ? "connect" : "rest";
}

/** How many events a request body holds (a batch's length, else one). */
function eventCount(body: Record<string, unknown>): number {
  return Array.isArray(body.b) ? body.b.length : 1;
}

const DROP_REASONS: Partial<Record<DomainError["kind"], DropReason>> = {
  quota_exceeded: "quota",
  rate_limited: "rate_limit",
  too_many_requests: "collect_limit",
  invalid_input: "invalid",
  unavailable: "unavailable",
};

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const requests = new Counter({
    name: "ingest_requests_total",
    help: "Requests answered, by route, protocol and status (HTTP status; the gRPC code for grpc and grpc-web).",
    labelNames: ["route", "protocol", "status"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "ingest_request_duration_seconds",
    help: "Time from request to response, by route and protocol.",
    labelNames: ["route", "protocol"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const accepted = new Counter({
    name: "ingest_events_accepted_total",
    help: "Events stored.",
    registers: [registry],
  });
  const dropped = new Counter({
    name: "ingest_events_dropped_total",
    help: "Events not stored, by reason: bot (answered 204), quota (429), rate_limit (503 queue full), collect_limit (429, the site's collect ceiling), invalid (field rules, 400), unavailable (store down), rejected (unknown or foreign site). Bodies refused before parsing (401/403 key, 413, malformed JSON) are not counted here.",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  const queueDepth = new Gauge({
    name: "ingest_queue_depth",
    help: "Items waiting or being written in a group-commit queue (events: events; payments: payments).",
    labelNames: ["queue"] as const,
    registers: [registry],
  });
  const batchSize = new Histogram({
    name: "ingest_group_commit_batch_size",
    help: "Requests written in one store transaction.",
    labelNames: ["queue"] as const,
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
    registers: [registry],
  });
  const batchDuration = new Histogram({
    name: "ingest_group_commit_duration_seconds",
    help: "Time to write one batch durably.",
    labelNames: ["queue", "outcome"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
    registers: [registry],
  });
  const storeErrors = new Counter({
    name: "ingest_store_errors_total",
    help: "Store calls that failed or timed out, by operation.",
    labelNames: ["operation"] as const,
    registers: [registry],
  });
  const prunedEvents = new Counter({
    name: "ingest_events_pruned_total",
    help: "Raw events removed by the retention pruner (events_retention_days).",
    registers: [registry],
  });
  const connectorEvents = new Counter({
    name: "ingest_connector_events_total",
    help: "Verified payment-provider events received by connectors, by provider and outcome (applied, duplicate, ignored: a type the connector does not use, refund_exceeds_charge: refused, its refunds and chargebacks would exceed their charge).",
    labelNames: ["provider", "outcome"] as const,
    registers: [registry],
  });
  const collectRefusals = new Counter({
    name: "ingest_collect_refused_total",
    help: "POST /api/v1/collect requests refused with 429, by limit: client (COLLECT_RATE_LIMIT events a minute per address) or site (the site's collect ceiling).",
    labelNames: ["limit"] as const,
    registers: [registry],
  });
  for (const limit of ["client", "site"]) collectRefusals.inc({ limit }, 0);
  // Every reason from the start, so rate() and alerts see zeros rather than no series.
  for (const reason of [
    "bot",
    "quota",
    "invalid",
    "rate_limit",
    "collect_limit",
    "unavailable",
    "rejected",
  ]) {
    dropped.inc({ reason }, 0);
  }
  let probe: (() => Promise<boolean>) | undefined;
  new Gauge({
    name: "ingest_ready",
    help: "1 when the store answers and the process is not shutting down (GET /readyz), else 0. Across workers: the lowest.",
    registers: [registry],
    aggregator: "min",
    async collect() {
      this.set(probe && (await probe()) ? 1 : 0);
    },
  });

  return {
    registry,
    observeHttp(app) {
      // Per request, on the request itself: the RPC door's interceptor leaves the code there.
      app.decorateRequest("rpcSlot", null);
      app.addHook("onResponse", async (request, reply) => {
        const route = request.routeOptions.url ?? "unmatched";
        const protocol = protocolOf(request, route);
        let status = String(reply.statusCode);
        if (protocol === "grpc" || protocol === "grpc-web") {
          // The interceptor saw the handler's code; errors answered before it (body guard) are in headers.
          const header = reply.getHeader("grpc-status");
          status =
            request.rpcSlot?.code ??
            (header === undefined
              ? "unknown"
              : String(header) === "0"
                ? "ok"
                : (CODE_NAMES[Number(header)] ?? String(header)));
        }
        requests.inc({ route, protocol, status });
        latency.observe({ route, protocol }, reply.elapsedTime / 1000);
      });
    },
    rpcInterceptor: (next) => async (req) => {
      const slot = req.contextValues.get(rpcSlotKey);
      try {
        const res = await next(req);
        if (slot) slot.code = "ok";
        return res;
      } catch (err) {
        if (slot) slot.code = CODE_NAMES[ConnectError.from(err).code] ?? "unknown";
        throw err;
      }
    },
    rpcSlot(request) {
      const slot: RpcSlot = {};
      request.rpcSlot = slot;
      return slot;
    },
    queue(name) {
      queueDepth.set({ queue: name }, 0);
      return {
        load: (load) => queueDepth.set({ queue: name }, load),
        batch(size, seconds, ok) {
          batchSize.observe({ queue: name }, size);
          batchDuration.observe({ queue: name, outcome: ok ? "ok" : "error" }, seconds);
        },
      };
    },
    observeEvents(events) {
      /** Counts the outcome of one call of the server (`record`) or browser (`collect`) door. */
      const counted = async (body: Record<string, unknown>, call: Promise<EventsResult>) => {
        try {
          const result = await call;
          accepted.inc(result.accepted);
          if (result.dropped > 0) dropped.inc({ reason: "bot" }, result.dropped);
          return result;
        } catch (err) {
          const kind = (err as Partial<DomainError>).kind;
          const reason = (kind && DROP_REASONS[kind]) ?? "rejected";
          dropped.inc({ reason }, eventCount(body));
          throw err;
        }
      };
      return {
        drain: () => events.drain(),
        record: (principal, body, client) => counted(body, events.record(principal, body, client)),
        collect: (body, client) =>
          counted(
            body,
            events.collect(body, client).catch((err: unknown) => {
              // The one 429 collect() raises is the site's ceiling.
              if ((err as Partial<DomainError>).kind === "too_many_requests") {
                collectRefusals.inc({ limit: "site" });
              }
              throw err;
            }),
          ),
      };
    },
    collectRefused(limit) {
      collectRefusals.inc({ limit });
    },
    storeError(operation) {
      storeErrors.inc({ operation });
    },
    eventsPruned(count) {
      prunedEvents.inc(count);
    },
    connectorEvent(provider, outcome) {
      connectorEvents.inc({ provider, outcome });
    },
    setReadinessProbe(check) {
      probe = check;
    },
  };
}
